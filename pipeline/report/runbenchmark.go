package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/skillgate/skillgate/pipeline"
	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// run-benchmark's split names: a scenario is in one or the other.
const (
	runBenchTrain      = "train"
	runBenchValidation = "validation"
)

// RunBenchmarkStatusPending marks a scenario row with no valid result in
// one of the two modes (its cells invalid, missing or not selected): it
// counts in no pass@k, as the source leaves out a scenario it could not
// grade.
const RunBenchmarkStatusPending = "pending_agent_eval"

// RunBenchmarkOptions say how a report's cases map to run-benchmark's
// terms: which arms are the two modes, which definition's skill each case
// belongs to, k, and how scores are rounded (the passAtK rule's).
type RunBenchmarkOptions struct {
	// With and Without are the arms of the with-skill and without-skill
	// modes.
	With, Without string
	// Skill gives the skill a case belongs to and the scenario ID it was
	// written with; ok is false for a case of no definition.
	Skill func(caseID string) (skill, scenario string, ok bool)
	// K is the k of pass@k (the source's passes/runs is k = 1).
	K int
	// Decimals rounds every score, as the source rounds to 2.
	Decimals int
	// Date is the run date, YYYY-MM-DD.
	Date string
}

// RunBenchmark is one definition's benchmark in run-benchmark's terms.
type RunBenchmark struct {
	Skill string
	Date  string
	// Runs is the number of runs per scenario in each mode.
	Runs       int
	Train      RunBenchmarkSplit
	Validation RunBenchmarkSplit
	// Scenarios in the definition's order.
	Scenarios []RunBenchmarkScenario
	// StandIn names the scripted stand-in that played the agent or judge,
	// "" for a real model: the files say so, as every report does.
	StandIn  string
	decimals int
}

// RunBenchmarkSplit is one split's weighted pass@k in each mode and Δ.
type RunBenchmarkSplit struct {
	With, Without, Delta float64
	// Scenarios are the split's scenario IDs.
	Scenarios []string
}

// RunBenchmarkScenario is one scenario's pass rates.
type RunBenchmarkScenario struct {
	ID, Split            string
	With, Without, Delta float64
	Weight               float64
	// Pending: a mode has no valid result, so the rates are unknown.
	Pending bool
}

// RunBenchmarks computes, per definition's skill in case order, the
// scenarios' pass rates (passes over valid runs), each split's weighted
// pass@k = Σ weight × rate / Σ weight in each mode, and Δ = with −
// without, rounded as the options say (the two scores first, then Δ from
// them, as the source does).
func RunBenchmarks(r *verdict.Report, o RunBenchmarkOptions) []RunBenchmark {
	scale := math.Pow(10, float64(o.Decimals))
	round := func(x float64) float64 { return math.Round(x*scale) / scale }
	k := max(o.K, 1)
	rate := func(ts []verdict.TrialOutcome) (float64, bool) {
		n, c := 0, 0
		for _, t := range ts {
			if t.Status == grade.StatusInvalid || t.Status == grade.StatusMissing || t.Status == "" {
				continue
			}
			n++
			if t.Passed {
				c++
			}
		}
		if n == 0 {
			return 0, false
		}
		return verdict.PassAtKEstimate(n, c, k), true
	}
	var out []RunBenchmark
	index := map[string]int{}
	type sums struct{ with, without, w float64 }
	acc := map[string]map[string]*sums{}
	for _, cr := range r.Cases {
		skill, id, ok := o.Skill(cr.ID)
		if !ok {
			continue
		}
		i, seen := index[skill]
		if !seen {
			i = len(out)
			index[skill] = i
			out = append(out, RunBenchmark{Skill: skill, Date: o.Date, Runs: r.Trials, StandIn: r.StandIn, decimals: o.Decimals,
				Train: RunBenchmarkSplit{Scenarios: []string{}}, Validation: RunBenchmarkSplit{Scenarios: []string{}}})
			acc[skill] = map[string]*sums{runBenchTrain: {}, runBenchValidation: {}}
		}
		b := &out[i]
		split := runBenchValidation
		if cr.Split == runBenchTrain {
			split = runBenchTrain
		}
		sp := &b.Validation
		if split == runBenchTrain {
			sp = &b.Train
		}
		sp.Scenarios = append(sp.Scenarios, id)
		row := RunBenchmarkScenario{ID: id, Split: split, Weight: cr.Weight}
		with, okW := rate(cr.Trials[o.With])
		without, okWo := rate(cr.Trials[o.Without])
		if !okW || !okWo {
			row.Pending = true
			b.Scenarios = append(b.Scenarios, row)
			continue
		}
		row.With, row.Without, row.Delta = round(with), round(without), round(with-without)
		b.Scenarios = append(b.Scenarios, row)
		s := acc[skill][split]
		s.with += cr.Weight * with
		s.without += cr.Weight * without
		s.w += cr.Weight
	}
	for i := range out {
		b := &out[i]
		for split, sp := range map[string]*RunBenchmarkSplit{runBenchTrain: &b.Train, runBenchValidation: &b.Validation} {
			s := acc[b.Skill][split]
			if s.w == 0 {
				continue
			}
			sp.With, sp.Without = round(s.with/s.w), round(s.without/s.w)
			sp.Delta = round(sp.With - sp.Without)
		}
	}
	return out
}

// fixed is a score written with the definition's decimals, as the source's
// reports show them ("0.60").
type fixed struct {
	v float64
	d int
}

// MarshalJSON writes the score with its decimals.
func (f fixed) MarshalJSON() ([]byte, error) {
	return []byte(strconv.FormatFloat(f.v+0, 'f', f.d, 64)), nil
}

// RenderRunBenchmarkJSON renders specs/benchmarks/reports/benchmark-<skill>.json
// as run-benchmark writes it: one line of compact JSON, no newline after it.
func RenderRunBenchmarkJSON(b RunBenchmark) ([]byte, error) {
	type split struct {
		WithSkill    fixed    `json:"with_skill"`
		WithoutSkill fixed    `json:"without_skill"`
		Delta        fixed    `json:"delta"`
		Scenarios    []string `json:"scenarios"`
	}
	conv := func(s RunBenchmarkSplit) split {
		return split{fixed{s.With, b.decimals}, fixed{s.Without, b.decimals}, fixed{s.Delta, b.decimals}, s.Scenarios}
	}
	doc := struct {
		Skill           string `json:"skill"`
		RunDate         string `json:"run_date"`
		RunsPerScenario int    `json:"runs_per_scenario"`
		StandIn         string `json:"stand_in,omitempty"`
		Train           split  `json:"train"`
		Validation      split  `json:"validation"`
	}{b.Skill, b.Date, b.Runs, b.StandIn, conv(b.Train), conv(b.Validation)}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("render benchmark-%s.json: %w", b.Skill, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// RenderRunBenchmarkYAML renders
// specs/benchmarks/reports/BENCHMARK-<skill>-<YYYY-MM-DD>.yaml in the
// source's shape: the splits' scores with their decimals, each scenario's
// rates as a number's shortest form (1.0, 0.67).
func RenderRunBenchmarkYAML(b RunBenchmark) []byte {
	var w strings.Builder
	num := func(x float64) string { return strconv.FormatFloat(x+0, 'f', b.decimals, 64) }
	fmt.Fprintf(&w, "skill: %s\n", yamlString(b.Skill))
	fmt.Fprintf(&w, "run_date: %q\n", b.Date)
	fmt.Fprintf(&w, "runs_per_scenario: %d\n", b.Runs)
	if b.StandIn != "" {
		// Not the source's field: these scores come from a stand-in.
		fmt.Fprintf(&w, "stand_in: %s\n", strconv.Quote(b.StandIn))
	}
	for _, s := range []struct {
		name string
		sp   RunBenchmarkSplit
	}{{runBenchTrain, b.Train}, {runBenchValidation, b.Validation}} {
		fmt.Fprintf(&w, "%s:\n  pass_at_k_with: %s\n  pass_at_k_without: %s\n  delta: %s\n", s.name, num(s.sp.With), num(s.sp.Without), num(s.sp.Delta))
	}
	if len(b.Scenarios) == 0 {
		w.WriteString("scenarios: []\n")
		return []byte(w.String())
	}
	w.WriteString("scenarios:\n")
	for _, sc := range b.Scenarios {
		fmt.Fprintf(&w, "  - id: %s\n    split: %s\n", yamlString(sc.ID), sc.Split)
		if sc.Pending {
			fmt.Fprintf(&w, "    status: %s\n", RunBenchmarkStatusPending)
		} else {
			fmt.Fprintf(&w, "    with_pass_rate: %s\n    without_pass_rate: %s\n    delta: %s\n", pyFloat(sc.With), pyFloat(sc.Without), pyFloat(sc.Delta))
		}
		fmt.Fprintf(&w, "    weight: %s\n", pyFloat(sc.Weight))
	}
	return []byte(w.String())
}

// pyFloat writes a float as Python's repr does for the values a report
// holds: the shortest form, with ".0" on a whole number.
func pyFloat(x float64) string {
	s := strconv.FormatFloat(x+0, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

// yamlPlain is a string YAML reads back as itself without quotes.
var yamlPlain = regexp.MustCompile(`^[a-z_][a-z0-9._-]*$`)

// yamlString writes a string plain when YAML reads it back as that string,
// quoted otherwise (a number, a boolean, null).
func yamlString(s string) string {
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~":
		return strconv.Quote(s)
	}
	if yamlPlain.MatchString(s) {
		return s
	}
	return strconv.Quote(s)
}

// Outcomes of a comparison with the pinned baseline, as the verdict
// decides them (verdict.CompareDelta).
const (
	RunBenchmarkImproved   = verdict.DeltaImproved
	RunBenchmarkRegression = verdict.DeltaRegression
	RunBenchmarkStable     = verdict.DeltaStable
)

// RunBenchmarkBaseline is what a comparison reads of a pinned
// baseline-<skill>.json: its validation Δ.
type RunBenchmarkBaseline struct {
	Validation struct {
		Delta *float64 `json:"delta"`
	} `json:"validation"`
}

// ReadRunBenchmarkBaseline reads the validation Δ of a benchmark.json.
func ReadRunBenchmarkBaseline(b []byte) (float64, error) {
	var doc RunBenchmarkBaseline
	if err := json.Unmarshal(b, &doc); err != nil {
		return 0, fmt.Errorf("read baseline: %w", err)
	}
	if doc.Validation.Delta == nil {
		return 0, fmt.Errorf("read baseline: no validation.delta")
	}
	return *doc.Validation.Delta, nil
}

// CompareRunBenchmark compares the validation Δ with the baseline's, as
// verdict.CompareDelta decides: a change of at most stableWithin is
// STABLE. The line is the source's:
// "IMPROVED: Δ 0.17 → 0.25", "REGRESSION: Δ 0.25 → 0.17 — do NOT ship",
// "STABLE: Δ 0.25 → 0.25".
func CompareRunBenchmark(b RunBenchmark, baseline, stableWithin float64) (outcome, line string) {
	cur := b.Validation.Delta
	num := func(x float64) string { return strconv.FormatFloat(x+0, 'f', b.decimals, 64) }
	outcome = verdict.CompareDelta(baseline, cur, stableWithin)
	line = fmt.Sprintf("%s: Δ %s → %s", outcome, num(baseline), num(cur))
	if outcome == RunBenchmarkRegression {
		line += " — do NOT ship"
	}
	return outcome, line
}

// RunBenchmarkGateLine is the source's delta threshold line on a skill's
// validation Δ, saying what the skill's verdict v (verdict.SkillVerdict)
// decided of its passAtK rule: "REGRESSION: validation Δ -0.10 — do NOT
// ship" when the rule failed, "WARN: ... — marginal contribution" when it
// warned, "OK: validation Δ 0.23" when it was met, and "" when it was not
// evaluated.
func RunBenchmarkGateLine(b RunBenchmark, v verdict.Verdict) string {
	d := strconv.FormatFloat(b.Validation.Delta+0, 'f', b.decimals, 64)
	i := slices.IndexFunc(v.Rules, func(o verdict.RuleOutcome) bool { return o.Rule == "passAtK" })
	switch {
	case i < 0 || v.Rules[i].NotMeasured != "":
		return ""
	case !v.Rules[i].Met:
		return "REGRESSION: validation Δ " + d + " — do NOT ship"
	case len(v.Rules[i].Warnings) > 0:
		return "WARN: validation Δ " + d + " — marginal contribution"
	}
	return "OK: validation Δ " + d
}

// RunBenchmarkDefinition is one run-benchmark definition as a plan holds
// it: its skill, its file (suite-relative) and its scenarios' cases.
type RunBenchmarkDefinition struct {
	Skill string
	File  string
	Cases []string
}

// RunBenchmarkDefinitions lists the definitions whose scenarios are the
// plan's cases, in case order: a case of the format targets one skill, is
// named "<skill>.<scenario>" and comes from one YAML file.
func RunBenchmarkDefinitions(p *plan.Plan) []RunBenchmarkDefinition {
	var out []RunBenchmarkDefinition
	at := map[string]int{}
	for _, pc := range p.Cases {
		if len(pc.Targets) != 1 || len(pc.Sources) != 1 || !strings.HasPrefix(pc.ID, pc.Targets[0]+".") {
			continue
		}
		skill := pc.Targets[0]
		i, ok := at[skill]
		if !ok {
			i = len(out)
			at[skill] = i
			out = append(out, RunBenchmarkDefinition{Skill: skill, File: pc.Sources[0]})
		}
		out[i].Cases = append(out[i].Cases, pc.ID)
	}
	return out
}

// RunBenchmarkPlanOptions are the options of a plan's run-benchmark suite:
// the modes, k and decimals of its passAtK rule, and each case's skill and
// scenario from its definition.
func RunBenchmarkPlanOptions(p *plan.Plan, date string) (RunBenchmarkOptions, error) {
	r := p.Policy.PassAtK
	if r == nil {
		return RunBenchmarkOptions{}, fmt.Errorf("read run-benchmark suite %s: its policy has no passAtK rule", p.Suite.Name)
	}
	skillOf := map[string]string{}
	for _, d := range RunBenchmarkDefinitions(p) {
		for _, id := range d.Cases {
			skillOf[id] = d.Skill
		}
	}
	return RunBenchmarkOptions{
		With: r.With, Without: r.Without, K: r.K, Decimals: r.Decimals, Date: date,
		Skill: func(id string) (string, string, bool) {
			skill, ok := skillOf[id]
			return skill, strings.TrimPrefix(id, skill+"."), ok
		},
	}, nil
}

// RunBenchmarkFiles are the paths of one skill's reports in a reports
// folder, as run-benchmark names them.
type RunBenchmarkFiles struct {
	JSON, YAML, BaselineJSON, BaselineYAML string
}

// RunBenchmarkPaths names the reports of b in dir.
func RunBenchmarkPaths(dir string, b RunBenchmark) RunBenchmarkFiles {
	return RunBenchmarkFiles{
		JSON:         filepath.Join(dir, "benchmark-"+b.Skill+".json"),
		YAML:         filepath.Join(dir, "BENCHMARK-"+b.Skill+"-"+b.Date+".yaml"),
		BaselineJSON: filepath.Join(dir, "baseline-"+b.Skill+".json"),
		BaselineYAML: filepath.Join(dir, "BASELINE-"+b.Skill+".yaml"),
	}
}

// WriteRunBenchmark writes b's benchmark-<skill>.json and dated YAML report
// into dir, and with pin copies them to baseline-<skill>.json and
// BASELINE-<skill>.yaml. Without pin, a baseline already pinned there is
// read and compared with: its outcome and line come back ("" when there
// is none).
func WriteRunBenchmark(dir string, b RunBenchmark, pin bool) (outcome, line string, err error) {
	files := RunBenchmarkPaths(dir, b)
	js, err := RenderRunBenchmarkJSON(b)
	if err != nil {
		return "", "", err
	}
	yml := RenderRunBenchmarkYAML(b)
	if !pin {
		if prev, err := os.ReadFile(files.BaselineJSON); err == nil {
			base, err := ReadRunBenchmarkBaseline(prev)
			if err != nil {
				return "", "", fmt.Errorf("compare with %s: %w", files.BaselineJSON, err)
			}
			outcome, line = CompareRunBenchmark(b, base, 0)
		} else if !os.IsNotExist(err) {
			return "", "", fmt.Errorf("compare with baseline: %w", err)
		}
	}
	writes := map[string][]byte{files.JSON: js, files.YAML: yml}
	if pin {
		writes[files.BaselineJSON], writes[files.BaselineYAML] = js, yml
	}
	for _, p := range []string{files.JSON, files.YAML, files.BaselineJSON, files.BaselineYAML} {
		if b, ok := writes[p]; ok {
			if err := pipeline.WriteFile(p, b); err != nil {
				return "", "", err
			}
		}
	}
	return outcome, line, nil
}
