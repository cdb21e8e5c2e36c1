package report

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"strings"

	"github.com/skillgate/skillgate/pipeline/inference"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/verdict"

	"github.com/opencontainers/go-digest"
)

// gstackVerdict is verdict.json: gstack's keys first, in the contract's
// order, then resumable (its notes' optional field), then skillgate's
// extensions.
type gstackVerdict struct {
	Verdict        string   `json:"verdict"`
	Reasons        []string `json:"reasons"`
	HarnessVersion string   `json:"harness_version"`
	Model          string   `json:"model"`
	Trials         int      `json:"trials"`
	// Calibration: the three checks, each null when it did not run.
	Calibration gstackCalibration `json:"calibration"`
	Arms        jsonObject        `json:"arms"`
	Tasks       jsonObject        `json:"tasks"`
	// Adjudication: skillgate's judge packets are always blinded; the
	// judge model is null when the suite has no judge.
	Adjudication gstackAdjudication `json:"adjudication"`
	Resumable    bool               `json:"resumable"`
	// Warnings, ExitCode, StandIn (the agent or model was a scripted
	// stand-in) and Identity (every input of the verdict) are extensions.
	Warnings []string       `json:"warnings"`
	ExitCode int            `json:"exit_code"`
	StandIn  string         `json:"stand_in,omitempty"`
	Identity gstackIdentity `json:"identity"`
	// Root is the run folder's root digest (an extension), for a reviewer
	// to compare with the one the run printed.
	Root digest.Digest `json:"root,omitempty"`
	// Adequacy is a mutate run's kill rate and mutants (an extension).
	Adequacy *verdict.Adequacy `json:"adequacy,omitempty"`
	// Sequential (an extension) is what sequential stopping decided, when
	// the policy asks for it.
	Sequential *verdict.Sequential `json:"sequential,omitempty"`
	// NoiseFloor is what the run's replicate arms measured (an
	// extension), absent without one.
	NoiseFloor *verdict.NoiseFloor `json:"noise_floor,omitempty"`
	// Portability (an extension) is each agent's figures and own verdict
	// in a suite on several agents, and PortabilityHeterogeneity the test
	// of whether the uplift differs between them.
	Portability              []verdict.PortabilityAgent `json:"portability,omitempty"`
	PortabilityHeterogeneity *inference.Heterogeneity   `json:"portability_heterogeneity,omitempty"`
	// Comparisons (an extension) are the policy's rules that compare two
	// arms, each with its outcome and its paired, case-clustered inference.
	Comparisons []gstackComparison `json:"comparisons,omitempty"`
}

// gstackComparison is one rule that compares two arms: its outcome and the
// inference it carries.
type gstackComparison struct {
	Rule        string             `json:"rule"`
	Severity    string             `json:"severity"`
	Met         bool               `json:"met"`
	NotMeasured string             `json:"not_measured,omitempty"`
	Inference   *verdict.Inference `json:"inference"`
}

// gstackCalibration is the contract's calibration: the skill, none and
// shell checks.
type gstackCalibration struct {
	Skill *bool `json:"skill"`
	None  *bool `json:"none"`
	Shell *bool `json:"shell"`
}

// gstackIdentity names the verdict's inputs: the plan, every case by
// digest and the case set, every arm's installed skill revisions, the
// agent as configured and as observed, the judge, and the suite's git
// revisions.
type gstackIdentity struct {
	Suite   string        `json:"suite"`
	Plan    digest.Digest `json:"plan"`
	CaseSet digest.Digest `json:"case_set"`
	// Cases: case ID → case digest, in authored order.
	Cases jsonObject `json:"cases"`
	// Arms: arm name → its installed skills, in authored order.
	Arms  jsonObject             `json:"arms"`
	Agent gstackAgent            `json:"agent"`
	Judge *verdict.JudgeIdentity `json:"judge,omitempty"`
	Git   gstackGit              `json:"git"`
}

type gstackAgent struct {
	Kind     string         `json:"kind"`
	Image    string         `json:"image"`
	Model    string         `json:"model,omitempty"`
	Provider string         `json:"provider"`
	Host     string         `json:"host,omitempty"`
	Digest   digest.Digest  `json:"digest"`
	Observed gstackObserved `json:"observed"`
}

type gstackObserved struct {
	Rollouts      int      `json:"rollouts"`
	Models        []string `json:"models"`
	AgentImages   []string `json:"agent_images"`
	AgentVersions []string `json:"agent_versions"`
	CLIVersions   []string `json:"cli_versions"`
	Harness       []string `json:"harness"`
}

type gstackGit struct {
	Revisions []plan.GitRevision `json:"revisions"`
	Mixed     bool               `json:"mixed"`
}

func gstackIdentityOf(r *verdict.Report) gstackIdentity {
	o := r.Observed
	id := gstackIdentity{
		Suite: r.Suite, Plan: r.Plan, CaseSet: r.CaseSet, Cases: jsonObject{}, Arms: jsonObject{},
		Agent: gstackAgent{
			Kind: r.Agent.Kind, Image: r.Agent.Image, Model: r.Agent.Model, Provider: r.Agent.Provider, Host: r.Agent.Host, Digest: r.Agent.Digest,
			Observed: gstackObserved{
				Rollouts: o.Rollouts, Models: nonNilStrings(o.Models), AgentImages: nonNilStrings(o.AgentImages),
				AgentVersions: nonNilStrings(o.AgentVersions), CLIVersions: nonNilStrings(o.CLIVersions), Harness: nonNilStrings(o.Harness),
			},
		},
		Judge: r.Judge,
		Git:   gstackGit{Revisions: o.Git, Mixed: o.GitMixed},
	}
	if id.Git.Revisions == nil {
		id.Git.Revisions = []plan.GitRevision{}
	}
	for _, c := range r.Cases {
		id.Cases = append(id.Cases, jsonField{c.ID, c.Digest})
	}
	for _, a := range r.Arms {
		installed := a.Installed
		if installed == nil {
			installed = []plan.InstalledSkill{}
		}
		id.Arms = append(id.Arms, jsonField{a.Name, installed})
	}
	return id
}

// harnessVersion is verdict.json's harness_version: skillgate and the
// version that built the report.
func harnessVersion(r *verdict.Report) string {
	if r.Harness == "" {
		return "skillgate"
	}
	return "skillgate " + r.Harness
}

// gstackAdjudication is gstack's adjudication: the adjudicator's model and
// the disputed answers.
type gstackAdjudication struct {
	Blinded    bool             `json:"blinded"`
	JudgeModel *string          `json:"judge_model"`
	Disputed   []gstackDisputed `json:"disputed"`
}

// gstackDisputed is one disputed answer: which, what disagreed and what
// the adjudicator decided (pass, fail, invalid or not adjudicated).
type gstackDisputed struct {
	Case      string `json:"case"`
	Arm       string `json:"arm"`
	Trial     int    `json:"trial"`
	Disagreed string `json:"disagreed"`
	Decision  string `json:"decision"`
}

// gstackArm: every figure is null when nothing was measured, never 0.
type gstackArm struct {
	PassRate        *float64       `json:"pass_rate"`
	TokensPerRun    gstackTokens   `json:"tokens_per_run"`
	TurnsPerRun     *float64       `json:"turns_per_run"`
	OpenedSkillRate *float64       `json:"opened_skill_rate"`
	FilesLoaded     map[string]int `json:"files_loaded"`
	// CostUSD is the arm's total over the cells whose cost is known
	// (mean per cell × cells).
	CostUSD *float64 `json:"cost_usd"`
}

type gstackTokens struct {
	Input      *float64 `json:"input"`
	Output     *float64 `json:"output"`
	CacheRead  *float64 `json:"cache_read"`
	CacheWrite *float64 `json:"cache_write"`
}

func metricValuePtr(m map[string]verdict.Metric, key string) *float64 {
	v, ok := m[key]
	if !ok {
		return nil
	}
	x := v.Value
	return &x
}

func renderVerdictJSON(r *verdict.Report) ([]byte, error) {
	// gstack reports an uncovered task among the reasons ("UNCOVERED
	// empty") even where it fails nothing: the verdict lists it there
	// already (Verdict.NotFailing), as report.json and the terminal do.
	v := gstackVerdict{
		Verdict:        r.Verdict.Verdict,
		Reasons:        nonNilStrings(r.Verdict.Reasons),
		Warnings:       nonNilStrings(r.Verdict.Warnings),
		HarnessVersion: harnessVersion(r),
		Model:          r.Agent.Model,
		Trials:         r.Trials,
		Arms:           jsonObject{},
		Tasks:          jsonObject{},
		Adjudication:   gstackAdjudication{Blinded: true, Disputed: []gstackDisputed{}},
		ExitCode:       r.Verdict.ExitCode,
		Resumable:      r.Verdict.Resumable,
		StandIn:        r.StandIn,
		Identity:       gstackIdentityOf(r),
		Root:           r.Root,
		Adequacy:       r.Verdict.Adequacy,
		Sequential:     r.Sequential,
		NoiseFloor:     r.Verdict.NoiseFloor,
	}
	if pt := r.Portability; pt != nil {
		v.Portability, v.PortabilityHeterogeneity = pt.Agents, pt.Heterogeneity
	}
	for _, ro := range r.Verdict.Rules {
		if ro.Inference != nil {
			v.Comparisons = append(v.Comparisons, gstackComparison{Rule: ro.Rule, Severity: ro.Severity, Met: ro.Met, NotMeasured: ro.NotMeasured, Inference: ro.Inference})
		}
	}
	if c := r.Calibration; c != nil {
		v.Calibration = gstackCalibration{Skill: c.Skill, None: c.None, Shell: c.Shell}
	}
	if r.Judge != nil {
		model := r.Judge.Model
		v.Adjudication.JudgeModel = &model
		if a := r.Adjudication; a != nil {
			if a.Model != "" {
				v.Adjudication.JudgeModel = &a.Model
			}
			for _, d := range a.Disputed {
				v.Adjudication.Disputed = append(v.Adjudication.Disputed, gstackDisputed{Case: d.Case, Arm: d.Arm, Trial: d.Trial, Disagreed: d.Disagreed, Decision: d.Decision})
			}
		}
	}
	for _, a := range r.Arms {
		ga := gstackArm{
			PassRate: metricValuePtr(a.Metrics, "taskSuccess"),
			TokensPerRun: gstackTokens{
				Input:      metricValuePtr(a.Cost, "tokensInput"),
				Output:     metricValuePtr(a.Cost, "tokensOutput"),
				CacheRead:  metricValuePtr(a.Cost, "tokensCacheRead"),
				CacheWrite: metricValuePtr(a.Cost, "tokensCacheWrite"),
			},
			TurnsPerRun:     metricValuePtr(a.Cost, "turns"),
			OpenedSkillRate: metricValuePtr(a.Metrics, "openedSkill"),
			FilesLoaded:     gstackFilesLoaded(a),
		}
		if m, ok := a.Cost["usd"]; ok {
			total := math.Round(m.Value*float64(m.Samples)*1e6) / 1e6
			ga.CostUSD = &total
		}
		v.Arms = append(v.Arms, jsonField{a.Name, ga})
	}
	arms := reportArmNames(r)
	for _, c := range r.Cases {
		per := jsonObject{}
		for _, arm := range arms {
			ts, ok := c.Trials[arm]
			if !ok {
				continue
			}
			// One entry per trial: true passed, false failed, null when
			// the cell is missing or invalid (neither a pass nor a fail).
			bs := make([]*bool, len(ts))
			for i, t := range ts {
				switch trialClass(t) {
				case "pass":
					bs[i] = reportPtr(true)
				case "fail":
					bs[i] = reportPtr(false)
				}
			}
			per = append(per, jsonField{arm, bs})
		}
		v.Tasks = append(v.Tasks, jsonField{c.ID, per})
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	// Trial lists on one line, as in gstack's example: [true, true, false].
	b = boolList.ReplaceAllFunc(b, func(m []byte) []byte {
		return append(append([]byte("["), bytes.Join(bytes.Fields(bytes.Trim(m, "[]")), []byte(" "))...), ']')
	})
	return append(b, '\n'), nil
}

// gstackFilesLoaded keys an arm's file reads as gstack does: by path in
// the arm's skill folder ("SKILL.md"), as a gstack arm is one skill
// folder; an arm of several skills keeps skillgate's NAME/PATH.
func gstackFilesLoaded(a verdict.ArmReport) map[string]int {
	out := map[string]int{}
	prefix := ""
	if len(a.Installed) == 1 {
		prefix = a.Installed[0].Name + "/"
	}
	for k, n := range a.FilesLoaded {
		if p, ok := strings.CutPrefix(k, prefix); ok && prefix != "" {
			k = p
		}
		out[k] += n
	}
	return out
}

// boolList matches an indented JSON array of booleans and nulls; its
// newlines keep it from matching inside a string.
var boolList = regexp.MustCompile(`\[\n\s*(?:true|false|null)(?:,\n\s*(?:true|false|null))*\n\s*\]`)
