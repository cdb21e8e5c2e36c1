package report

// SkillOpt's aggregate report: its shape, and how a pair of arms' cells
// fill it.

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/skillgate/skillgate/pipeline/formats/skillopt"
	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// SkillOptMetric is SkillOpt's {value, samples}.
type SkillOptMetric struct {
	Value   float64 `json:"value"`
	Samples int     `json:"samples"`
}

// SkillOptSelection is SkillOpt's micro-averaged routing selection.
type SkillOptSelection struct {
	Precision     float64 `json:"precision"`
	Recall        float64 `json:"recall"`
	TruePositive  int     `json:"truePositive"`
	FalsePositive int     `json:"falsePositive"`
	FalseNegative int     `json:"falseNegative"`
}

// SkillOptMetrics are a report's quality metrics, in SkillOpt's order.
type SkillOptMetrics struct {
	TaskSuccess          SkillOptMetric    `json:"taskSuccess"`
	InvalidRun           SkillOptMetric    `json:"invalidRun"`
	ValidUnseen          SkillOptMetric    `json:"validUnseen"`
	Transfer             *SkillOptMetric   `json:"transfer,omitempty"`
	Adversarial          *SkillOptMetric   `json:"adversarial,omitempty"`
	Composition          *SkillOptMetric   `json:"composition,omitempty"`
	Safety               *SkillOptMetric   `json:"safety,omitempty"`
	Frozen               *SkillOptMetric   `json:"frozen,omitempty"`
	Artifact             *SkillOptMetric   `json:"artifact,omitempty"`
	Fixture              *SkillOptMetric   `json:"fixture,omitempty"`
	Activation           SkillOptSelection `json:"activation"`
	References           SkillOptSelection `json:"references"`
	ProhibitedOutcome    *SkillOptMetric   `json:"prohibitedOutcome,omitempty"`
	Hallucination        *SkillOptMetric   `json:"hallucination,omitempty"`
	MarkdownPreservation *SkillOptMetric   `json:"markdownPreservation,omitempty"`
	Verification         *SkillOptMetric   `json:"verification,omitempty"`
}

// SkillOptCost are a report's runtime and size measurements.
type SkillOptCost struct {
	TargetDurationMs  SkillOptMetric  `json:"targetDurationMs"`
	JudgeDurationMs   *SkillOptMetric `json:"judgeDurationMs,omitempty"`
	ToolCalls         SkillOptMetric  `json:"toolCalls"`
	Commands          SkillOptMetric  `json:"commands"`
	OutputCharacters  SkillOptMetric  `json:"outputCharacters"`
	InputTokens       *SkillOptMetric `json:"inputTokens,omitempty"`
	OutputTokens      *SkillOptMetric `json:"outputTokens,omitempty"`
	JudgeInputTokens  *SkillOptMetric `json:"judgeInputTokens,omitempty"`
	JudgeOutputTokens *SkillOptMetric `json:"judgeOutputTokens,omitempty"`
	ChangedFiles      SkillOptMetric  `json:"changedFiles"`
	AddedLines        SkillOptMetric  `json:"addedLines"`
	DeletedLines      SkillOptMetric  `json:"deletedLines"`
	TargetSkillBytes  int64           `json:"targetSkillBytes"`
}

// SkillOptRunKey is one seed and repetition every case ran.
type SkillOptRunKey struct {
	Seed       int64 `json:"seed"`
	Repetition int   `json:"repetition"`
}

// SkillOptAggregate is SkillOpt's aggregate report (schemaVersion 4), its
// fields in SkillOpt's order.
type SkillOptAggregate struct {
	SchemaVersion           int               `json:"schemaVersion"`
	Phase                   string            `json:"phase"`
	ReportID                string            `json:"reportId"`
	CreatedAt               string            `json:"createdAt"`
	GitRevision             string            `json:"gitRevision"`
	BenchmarkID             string            `json:"benchmarkId"`
	OptimizationUnit        string            `json:"optimizationUnit"`
	TargetSkill             string            `json:"targetSkill"`
	TargetReference         string            `json:"targetReference,omitempty"`
	TargetSkillRevision     *string           `json:"targetSkillRevision"`
	ModelID                 string            `json:"modelId"`
	Host                    string            `json:"host"`
	Model                   string            `json:"model"`
	ModelVersion            string            `json:"modelVersion"`
	AdapterVersion          string            `json:"adapterVersion"`
	JudgeModelID            string            `json:"judgeModelId,omitempty"`
	JudgeHost               string            `json:"judgeHost,omitempty"`
	JudgeModel              string            `json:"judgeModel,omitempty"`
	JudgeModelVersion       string            `json:"judgeModelVersion,omitempty"`
	JudgeAdapterVersion     string            `json:"judgeAdapterVersion,omitempty"`
	VariantRole             string            `json:"variantRole"`
	VariantID               string            `json:"variantId"`
	InstalledSkills         []string          `json:"installedSkills"`
	InstalledSkillRevisions map[string]string `json:"installedSkillRevisions"`
	CaseSetDigest           string            `json:"caseSetDigest"`
	CaseIDs                 []string          `json:"caseIds"`
	RunKeys                 []SkillOptRunKey  `json:"runKeys"`
	RunCount                int               `json:"runCount"`
	Metrics                 SkillOptMetrics   `json:"metrics"`
	Cost                    SkillOptCost      `json:"cost"`
}

// skilloptResult is one cell as SkillOpt's normalized result counts it.
type skilloptResult struct {
	item    skillopt.EvalCase
	passed  bool
	invalid bool
	score   float64
	cell    CellEvidence
}

// skilloptAggregate builds one arm's report of one phase.
func skilloptAggregate(phase string, ws []*SkillOptWorkspace, r *verdict.Report, arm verdict.ArmReport, ev *Evidence, seed int64) (*SkillOptAggregate, error) {
	first := ws[0].Manifest
	var records []skillopt.CaseRecord
	items := map[string]skillopt.EvalCase{}
	for _, w := range ws {
		for _, c := range w.Manifest.Cases {
			if _, dup := items[c.ID]; dup {
				return nil, fmt.Errorf("case %s appears in more than one report workspace", c.ID)
			}
			item, ok := w.Cases[c.ID]
			if !ok || w.Digests[c.ID] != c.Digest {
				return nil, fmt.Errorf("case %s of workspace %s does not match its manifest digest", c.ID, w.Dir)
			}
			items[c.ID] = item
			records = append(records, c)
		}
	}
	caseIDs := slices.Sorted(maps.Keys(items))
	var results []skilloptResult
	var runKeys []SkillOptRunKey
	for _, id := range caseIDs {
		var cr *verdict.CaseReport
		for i := range r.Cases {
			if r.Cases[i].ID == id {
				cr = &r.Cases[i]
			}
		}
		if cr == nil {
			return nil, errIncomplete
		}
		trials := cr.Trials[arm.Name]
		var keys []SkillOptRunKey
		for _, t := range trials {
			if t.Status == grade.StatusMissing {
				return nil, errIncomplete
			}
			cell, ok := ev.Cells[t.Cell]
			if !ok {
				return nil, errIncomplete
			}
			keys = append(keys, SkillOptRunKey{Seed: seed, Repetition: t.Trial - 1})
			results = append(results, skilloptResult{item: items[id], passed: t.Passed && t.Status != grade.StatusInvalid, invalid: t.Status == grade.StatusInvalid, score: t.Score, cell: cell})
		}
		if len(keys) == 0 {
			return nil, errIncomplete
		}
		if runKeys == nil {
			runKeys = keys
		} else if !slices.Equal(runKeys, keys) {
			return nil, fmt.Errorf("case %s: run matrix differs from other report cases", id)
		}
	}
	metrics, err := skilloptMetrics(results)
	if err != nil {
		return nil, err
	}
	if phase == "release" && metrics.Frozen == nil {
		return nil, fmt.Errorf("a release report requires at least one frozen case")
	}
	if phase == "evaluate" && metrics.Frozen != nil {
		return nil, fmt.Errorf("an evaluate report cannot include frozen cases")
	}

	installed := map[string]string{}
	for _, s := range arm.Installed {
		installed[s.Name] = first.SkillRevisions[s.Name]
		if installed[s.Name] == "" {
			return nil, fmt.Errorf("installed skill %s is not one of the workspace's", s.Name)
		}
	}
	names := slices.Sorted(maps.Keys(installed))
	var targetRev *string
	var targetBytes int64
	if rev, ok := installed[first.TargetSkill]; ok {
		targetRev = &rev
		n, err := skillopt.TreeBytes(filepath.Join(ws[0].Root, filepath.FromSlash(first.SkillDir(first.TargetSkill))))
		if err != nil {
			return nil, fmt.Errorf("measure the target skill: %w", err)
		}
		targetBytes = n
	}
	role := "baseline"
	if targetRev != nil && len(names) == len(first.Skills()) {
		role = "candidate"
	}
	model := one(arm.Observed.Models, r.Agent.Model)
	judged := false
	for _, item := range items {
		judged = judged || item.OracleStrength == "trajectory-rubric" || item.OracleStrength == "mixed"
	}
	a := &SkillOptAggregate{
		SchemaVersion:           skilloptReportSchema,
		Phase:                   phase,
		ReportID:                fmt.Sprintf("%s-%s-%s-%s", r.Suite, phase, arm.Name, r.Plan.Encoded()[:12]),
		CreatedAt:               skilloptNow().UTC().Format("2006-01-02T15:04:05.000Z"),
		GitRevision:             skilloptGit(arm.Observed),
		BenchmarkID:             r.Suite,
		OptimizationUnit:        first.OptimizationUnit,
		TargetSkill:             first.TargetSkill,
		TargetReference:         first.TargetReference,
		TargetSkillRevision:     targetRev,
		ModelID:                 r.Agent.Model,
		Host:                    skilloptHost(r.Agent.Kind),
		Model:                   model,
		ModelVersion:            model,
		AdapterVersion:          one(arm.Observed.CLIVersions, one(arm.Observed.AgentVersions, "unversioned")),
		VariantRole:             role,
		VariantID:               arm.Name,
		InstalledSkills:         append([]string{}, names...),
		InstalledSkillRevisions: installed,
		CaseSetDigest:           skillopt.CaseSetDigest(records),
		CaseIDs:                 caseIDs,
		RunKeys:                 runKeys,
		RunCount:                len(results),
		Metrics:                 *metrics,
		Cost:                    skilloptCost(results, targetBytes),
	}
	if judged && r.Judge != nil {
		// SkillOpt names a judge only when a case is judged.
		a.JudgeModelID, a.JudgeModel, a.JudgeModelVersion = r.Judge.Model, r.Judge.Model, r.Judge.Model
		a.JudgeHost = skilloptJudgeHost(r.Judge.Provider)
		a.JudgeAdapterVersion = "skillgate " + r.Harness
	}
	return a, nil
}

// one is the single value of a list, or def when it has none or several.
func one(list []string, def string) string {
	if len(list) == 1 && list[0] != "" {
		return list[0]
	}
	return def
}

// skilloptGit is the git revision the arm's rollouts ran at.
func skilloptGit(o verdict.ObservedIdentity) string {
	if len(o.Git) == 1 && !o.GitMixed {
		rev := o.Git[0].Revision
		if o.Git[0].Dirty {
			rev += "-dirty"
		}
		return rev
	}
	return "unknown"
}

// skilloptHost names an agent kind as SkillOpt's model hosts do.
func skilloptHost(kind string) string {
	switch kind {
	case "claude-code":
		return "claude"
	case "codex":
		return "codex"
	}
	return kind
}

// skilloptJudgeHost names a judge's provider as SkillOpt's hosts do.
func skilloptJudgeHost(provider string) string {
	switch provider {
	case "anthropic":
		return "claude"
	case "openai":
		return "codex"
	}
	return provider
}
