package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/skillgate/skillgate/pipeline"
	"github.com/skillgate/skillgate/pipeline/formats/skillopt"
	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// SkillOpt's aggregate reports, in the run folder's skillopt/ folder: for
// each arm, PHASE.ARM.json, the evaluate report over the evaluate
// workspace's cases and, when the suite also runs the release workspace,
// the release report over both, as SkillOpt's skillopt:report writes them
// (schemaVersion 4).
const (
	DirSkillOpt = "skillopt"
	// storeTrees is where a run folder keeps the verified snapshots of the
	// folders its plan digested (runner/store's layout): the workspaces are
	// read from there, as they ran, never from the live suite.
	storeTrees           = "store/trees"
	skilloptReportSchema = 4
)

// skilloptNow is when a report is created; tests fix it.
var skilloptNow = time.Now

// SkillOptWorkspace is one exported workspace as a run holds it: its
// manifest and its cases by ID, in the workspace's own words.
type SkillOptWorkspace struct {
	Dir      string
	Manifest skillopt.Workspace
	Cases    map[string]skillopt.EvalCase
	Digests  map[string]string
	// Root is the folder holding its files, for the target skill's bytes.
	Root string
}

// writeSkillOpt writes SkillOpt's reports of every arm whose cells are all
// there; an arm with a missing cell has no report, as SkillOpt refuses one
// with missing results.
func writeSkillOpt(dir string, r *verdict.Report, ev *Evidence) error {
	if ev == nil {
		return nil
	}
	p := ev.Plan
	if p == nil {
		return fmt.Errorf("write SkillOpt reports: the evidence names no plan")
	}
	ws, partial, err := pinnedWorkspaces(dir, p)
	if err != nil {
		return err
	}
	if partial && !slices.ContainsFunc(ws, func(w SkillOptWorkspace) bool { return w.Manifest.Mode == skillopt.ModeEvaluate }) {
		return nil // the evaluate workspace's cells did not run here: no report is complete
	}
	reports, err := SkillOptReports(ws, r, ev, p.Suite.Seed)
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(reports)) {
		if err := pipeline.WriteFile(filepath.Join(dir, DirSkillOpt, name), reports[name]); err != nil {
			return err
		}
	}
	return nil
}

// pinnedWorkspaces reads the workspaces the plan's cases came from out of
// the run folder's snapshots, in the order their cases appear; partial
// when one has none, since none of its cells ran here.
func pinnedWorkspaces(dir string, p *plan.Plan) (out []SkillOptWorkspace, partial bool, err error) {
	for _, c := range p.Cases {
		if c.CaseDir == "" || slices.ContainsFunc(out, func(w SkillOptWorkspace) bool { return w.Dir == c.CaseDir }) {
			continue
		}
		t, ok := p.CaseDirs[path.Clean(c.CaseDir)]
		if !ok {
			continue
		}
		root := filepath.Join(dir, filepath.FromSlash(storeTrees), t.Digest.Encoded())
		w, err := ReadSkillOptWorkspace(c.CaseDir, root)
		if errors.Is(err, fs.ErrNotExist) {
			partial = true // not rolled out here: no cell of it has a result
			continue
		}
		if err != nil {
			return nil, false, err
		}
		out = append(out, w)
	}
	return out, partial, nil
}

// ReadSkillOptWorkspace reads a workspace's manifest and cases from root.
func ReadSkillOptWorkspace(name, root string) (SkillOptWorkspace, error) {
	w := SkillOptWorkspace{Dir: name, Root: root, Cases: map[string]skillopt.EvalCase{}, Digests: map[string]string{}}
	b, err := os.ReadFile(filepath.Join(root, skillopt.FileManifest))
	if err != nil {
		return w, err
	}
	if err := json.Unmarshal(b, &w.Manifest); err != nil {
		return w, fmt.Errorf("read workspace %s: %s: %w", name, skillopt.FileManifest, err)
	}
	entries, err := os.ReadDir(filepath.Join(root, skillopt.DirData))
	if err != nil {
		return w, fmt.Errorf("read workspace %s: %w", name, err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, skillopt.DirData, e.Name()))
		if err != nil {
			return w, fmt.Errorf("read workspace %s: %w", name, err)
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			line = bytes.TrimSuffix(line, []byte("\r"))
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var c skillopt.EvalCase
			if err := json.Unmarshal(line, &c); err != nil {
				return w, fmt.Errorf("read workspace %s: %s: %w", name, e.Name(), err)
			}
			d, err := skillopt.CaseDigest(line)
			if err != nil {
				return w, fmt.Errorf("read workspace %s: %s: %w", name, e.Name(), err)
			}
			w.Cases[c.ID], w.Digests[c.ID] = c, d
		}
	}
	return w, nil
}

// SkillOptReports builds SkillOpt's reports, by file name, from the
// workspaces a run read and its report and evidence: for each complete arm
// an evaluate report (exactly one evaluate workspace) and, with a release
// workspace of the same identities beside it, a release report.
func SkillOptReports(ws []SkillOptWorkspace, r *verdict.Report, ev *Evidence, seed int64) (map[string][]byte, error) {
	var eval, rel *SkillOptWorkspace
	for i := range ws {
		switch ws[i].Manifest.Mode {
		case skillopt.ModeEvaluate:
			if eval != nil {
				return nil, fmt.Errorf("write skillopt reports: a report takes exactly one evaluate workspace, the run has %s and %s", eval.Dir, ws[i].Dir)
			}
			eval = &ws[i]
		case skillopt.ModeRelease:
			if rel != nil {
				return nil, fmt.Errorf("write skillopt reports: a release report takes exactly one release workspace, the run has %s and %s", rel.Dir, ws[i].Dir)
			}
			rel = &ws[i]
		}
	}
	if eval == nil {
		if rel != nil {
			return nil, fmt.Errorf("write skillopt release report: it needs the evaluate workspace beside release workspace %s, whose held-out evidence a release keeps (formats.skillopt.workspace)", rel.Dir)
		}
		return nil, nil // an optimize workspace has no report
	}
	phases := []struct {
		name string
		ws   []*SkillOptWorkspace
	}{{"evaluate", []*SkillOptWorkspace{eval}}}
	if rel != nil {
		if why := skilloptPairs(eval, rel); why != "" {
			return nil, fmt.Errorf("write skillopt release report: workspaces %s and %s: %s", eval.Dir, rel.Dir, why)
		}
		phases = append(phases, struct {
			name string
			ws   []*SkillOptWorkspace
		}{"release", []*SkillOptWorkspace{eval, rel}})
	}
	out := map[string][]byte{}
	for _, arm := range r.Arms {
		for _, ph := range phases {
			a, err := skilloptAggregate(ph.name, ph.ws, r, arm, ev, seed)
			if errors.Is(err, errIncomplete) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("write skillopt %s report of arm %s: %w", ph.name, arm.Name, err)
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(a); err != nil {
				return nil, err
			}
			out[ph.name+"."+arm.Name+".json"] = buf.Bytes()
		}
	}
	return out, nil
}

// skilloptPairs says why two workspaces cannot make one release report:
// SkillOpt's checkWorkspaces.
func skilloptPairs(a, b *SkillOptWorkspace) string {
	ma, mb := a.Manifest, b.Manifest
	switch {
	case ma.TargetSkill != mb.TargetSkill:
		return "they target different skills"
	case !slices.Equal(slices.Sorted(slices.Values(ma.CompanionSkills)), slices.Sorted(slices.Values(mb.CompanionSkills))):
		return "they use different companion skills"
	case ma.OptimizationUnit != mb.OptimizationUnit:
		return "they use different optimization units"
	case ma.TargetReference != mb.TargetReference:
		return "they use different target references"
	}
	for _, s := range ma.Skills() {
		if ma.SkillRevisions[s] != mb.SkillRevisions[s] {
			return fmt.Sprintf("they use different %s revisions", s)
		}
	}
	return ""
}

// errIncomplete: an arm lacks a result, so it has no report.
var errIncomplete = errors.New("an arm's results are incomplete")

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

// negativeKinds are SkillOpt's assertions whose success means a
// prohibited outcome did not occur.
var negativeKinds = []string{skillopt.KindNotContains, skillopt.KindFileNotExists, skillopt.KindFileUnchanged}

// skilloptMetrics derives SkillOpt's quality metrics from its own case
// data and each cell's outcome, as its measure.getMetrics does.
func skilloptMetrics(rs []skilloptResult) (*SkillOptMetrics, error) {
	all := func(f func(skilloptResult) float64, where func(skillopt.EvalCase) bool) *SkillOptMetric {
		var sum float64
		n := 0
		for _, r := range rs {
			if where(r.item) {
				sum += f(r)
				n++
			}
		}
		if n == 0 {
			return nil
		}
		return &SkillOptMetric{Value: sum / float64(n), Samples: n}
	}
	score := func(r skilloptResult) float64 { return r.score }
	pass := func(r skilloptResult) float64 { return b2f(r.passed) }
	fail := func(r skilloptResult) float64 { return b2f(!r.passed) }
	every := func(skillopt.EvalCase) bool { return true }
	split := func(s string) func(skillopt.EvalCase) bool {
		return func(c skillopt.EvalCase) bool { return c.Split == s }
	}
	kind := func(k string) func(skillopt.EvalCase) bool {
		return func(c skillopt.EvalCase) bool { return c.Kind == k }
	}
	tag := func(t string) func(skillopt.EvalCase) bool {
		return func(c skillopt.EvalCase) bool { return slices.Contains(c.Tags, t) }
	}
	m := &SkillOptMetrics{
		TaskSuccess:          *all(pass, every),
		InvalidRun:           *all(func(r skilloptResult) float64 { return b2f(r.invalid) }, every),
		Transfer:             all(score, split("transfer")),
		Adversarial:          all(score, split("adversarial")),
		Composition:          all(score, kind("composition")),
		Safety:               all(score, kind("safety")),
		Frozen:               all(score, split("test-frozen")),
		Artifact:             all(score, kind("artifact")),
		Fixture:              all(pass, func(c skillopt.EvalCase) bool { return c.Fixture != nil }),
		Hallucination:        all(fail, tag("anti-hallucination")),
		MarkdownPreservation: all(pass, tag("markdown")),
		Verification:         all(pass, tag("verification")),
	}
	vu := all(score, split("valid-unseen"))
	if vu == nil {
		return nil, fmt.Errorf("a report requires at least one valid-unseen case")
	}
	m.ValidUnseen = *vu
	var skills, refs [][2][]string
	observations, violations := 0, 0
	for _, r := range rs {
		activated, read := loaded(r.cell.Skills), loaded(r.cell.References)
		skills = append(skills, [2][]string{r.item.ExpectedSkills, activated})
		refs = append(refs, [2][]string{r.item.RequiredReferences, read})
		for _, s := range r.item.ForbiddenSkills {
			observations++
			if slices.Contains(activated, s) {
				violations++
			}
		}
		for _, p := range r.item.ForbiddenReferences {
			observations++
			if slices.Contains(read, p) {
				violations++
			}
		}
		used := map[int]bool{}
		for _, a := range r.item.Assertions {
			if !slices.Contains(negativeKinds, a.Kind) {
				continue
			}
			observations++
			name := a.Kind + ":"
			if a.Value != nil {
				name += *a.Value
			}
			// A check is named "NAME: what it checks"; NAME is SkillOpt's label.
			is := func(c grade.CheckResult) bool { return c.Name == name || strings.HasPrefix(c.Name, name+": ") }
			i := slices.IndexFunc(r.cell.Checks, is)
			for i >= 0 && used[i] {
				j := slices.IndexFunc(r.cell.Checks[i+1:], is)
				if j < 0 {
					i = -1
					break
				}
				i += j + 1
			}
			if i < 0 || !r.cell.Checks[i].Passed {
				violations++
			}
			if i >= 0 {
				used[i] = true
			}
		}
	}
	m.Activation, m.References = selection(skills), selection(refs)
	if observations > 0 {
		m.ProhibitedOutcome = &SkillOptMetric{Value: float64(violations) / float64(observations), Samples: observations}
	}
	return m, nil
}

// loaded are the names a cell's routing events show loaded, by evidence a
// provider can prove (not "unobservable").
func loaded(events []grade.RoutingEvent) []string {
	var out []string
	for _, e := range events {
		if e.Evidence != "unobservable" && !slices.Contains(out, e.Name) {
			out = append(out, e.Name)
		}
	}
	return out
}

// selection is SkillOpt's micro-averaged precision and recall over
// (expected, observed) pairs: precision 1 with nothing observed, recall 1
// with nothing expected.
func selection(pairs [][2][]string) SkillOptSelection {
	var s SkillOptSelection
	for _, p := range pairs {
		for _, o := range dedupe(p[1]) {
			if slices.Contains(p[0], o) {
				s.TruePositive++
			} else {
				s.FalsePositive++
			}
		}
		for _, e := range dedupe(p[0]) {
			if !slices.Contains(p[1], e) {
				s.FalseNegative++
			}
		}
	}
	s.Precision, s.Recall = 1, 1
	if d := s.TruePositive + s.FalsePositive; d > 0 {
		s.Precision = float64(s.TruePositive) / float64(d)
	}
	if d := s.TruePositive + s.FalseNegative; d > 0 {
		s.Recall = float64(s.TruePositive) / float64(d)
	}
	return s
}

func dedupe(list []string) []string {
	var out []string
	for _, v := range list {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// skilloptCost derives SkillOpt's cost measurements; token means use only
// cells whose provider reported tokens.
func skilloptCost(rs []skilloptResult, targetBytes int64) SkillOptCost {
	mean := func(f func(CellEvidence) (float64, bool)) *SkillOptMetric {
		var sum float64
		n := 0
		for _, r := range rs {
			if v, ok := f(r.cell); ok {
				sum += v
				n++
			}
		}
		if n == 0 {
			return nil
		}
		return &SkillOptMetric{Value: sum / float64(n), Samples: n}
	}
	always := func(f func(CellEvidence) float64) SkillOptMetric {
		return *mean(func(c CellEvidence) (float64, bool) { return f(c), true })
	}
	lines := func(c CellEvidence, sign byte) float64 {
		n := 0
		for _, d := range c.Diffs {
			for _, l := range strings.Split(d.Diff, "\n") {
				if len(l) > 0 && l[0] == sign && !strings.HasPrefix(l, string([]byte{sign, sign, sign})) {
					n++
				}
			}
		}
		return float64(n)
	}
	return SkillOptCost{
		TargetDurationMs: always(func(c CellEvidence) float64 { return c.AgentSeconds * 1000 }),
		ToolCalls: always(func(c CellEvidence) float64 {
			return float64(countTurns(c, func(t Turn) bool { return t.Tool != "" }))
		}),
		Commands: always(func(c CellEvidence) float64 {
			return float64(countTurns(c, func(t Turn) bool { return slices.Contains(shellTools, t.Tool) }))
		}),
		OutputCharacters: always(func(c CellEvidence) float64 { return float64(len(utf16.Encode([]rune(c.Answer)))) }),
		InputTokens: mean(func(c CellEvidence) (float64, bool) {
			if c.Tokens == nil {
				return 0, false
			}
			return float64(c.Tokens.Input + c.Tokens.CacheRead + c.Tokens.CacheWrite), true
		}),
		OutputTokens: mean(func(c CellEvidence) (float64, bool) {
			if c.Tokens == nil {
				return 0, false
			}
			return float64(c.Tokens.Output), true
		}),
		ChangedFiles:     always(func(c CellEvidence) float64 { return float64(len(c.Diffs)) }),
		AddedLines:       always(func(c CellEvidence) float64 { return lines(c, '+') }),
		DeletedLines:     always(func(c CellEvidence) float64 { return lines(c, '-') }),
		TargetSkillBytes: targetBytes,
	}
}

// shellTools are the agents' tools that run a command.
var shellTools = []string{"Bash", "shell", "exec_command", "local_shell"}

func countTurns(c CellEvidence, f func(Turn) bool) int {
	n := 0
	for _, t := range c.Turns {
		if f(t) {
			n++
		}
	}
	return n
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
