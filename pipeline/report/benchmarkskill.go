package report

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"path/filepath"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline"
	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// benchmark-skill's outputs: per skill, the results model (SKILL.json) and
// the self-contained HTML report (SKILL.html), which the run folder keeps
// under BenchmarkSkillDir and `skillgate benchmark-skill` writes under the
// repository's tests/.reports/.
const (
	BenchmarkSkillDir = "benchmark-skill"
	// benchmarkSkillHardCheck begins the names the format gives the checks
	// of a case's ## Hard assertions (benchmarkskill.HardAssertionName).
	benchmarkSkillHardCheck = "hard assertion"
	// BenchmarkSkillFootnote is the cost table's footnote.
	BenchmarkSkillFootnote = "Absolute cost is inflated by shared-context cache overhead, so the trustworthy signal is the ratio of the new-skill arm to the no-skill arm. Cost is reported beside quality and never gates the verdict."
)

// Efficacy verdicts of a skill, and of a case.
const (
	EfficacyGreen      = "green"
	EfficacyRed        = "red"
	EfficacyPass       = "pass"
	EfficacyFail       = "fail"
	EfficacyIncomplete = "incomplete"
)

// outcomeNotJudged is a trial with no pairwise judgement yet.
const outcomeNotJudged = "NOT-JUDGED"

// writeBenchmarkSkill writes every skill's results model and HTML report
// under the run folder's BenchmarkSkillDir.
func writeBenchmarkSkill(dir string, r *verdict.Report, ev *Evidence) error {
	files, err := BenchmarkSkillFiles(r, ev)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := pipeline.WriteFile(filepath.Join(dir, BenchmarkSkillDir, f.Name), f.Data); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkSkillFile is one output file by its name in the reports folder.
type BenchmarkSkillFile struct {
	Name string
	Data []byte
}

// BenchmarkSkillFiles renders SKILL.json and SKILL.html for every skill of
// the report's cases, in authored order.
func BenchmarkSkillFiles(r *verdict.Report, ev *Evidence) ([]BenchmarkSkillFile, error) {
	var out []BenchmarkSkillFile
	for _, res := range BenchmarkSkillResultsOf(r, ev) {
		js, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("render %s.json: %w", res.Skill, err)
		}
		page, err := renderBenchmarkSkillHTML(res)
		if err != nil {
			return nil, fmt.Errorf("render %s.html: %w", res.Skill, err)
		}
		out = append(out, BenchmarkSkillFile{res.Skill + ".json", append(js, '\n')}, BenchmarkSkillFile{res.Skill + ".html", page})
	}
	return out, nil
}

// BenchmarkSkillSkill is the skill of a benchmark-skill case: its ID is
// SKILL.CASEFOLDER, and a skill's name has no '.'.
func BenchmarkSkillSkill(caseID string) (skill, folder string) {
	skill, folder, _ = strings.Cut(caseID, ".")
	return skill, folder
}

// BenchmarkSkillResultsOf is the results model of every skill of the
// report's cases, in authored order.
func BenchmarkSkillResultsOf(r *verdict.Report, ev *Evidence) []BenchmarkSkillResults {
	var skills []string
	bySkill := map[string][]verdict.CaseReport{}
	for _, c := range r.Cases {
		s, _ := BenchmarkSkillSkill(c.ID)
		if _, ok := bySkill[s]; !ok {
			skills = append(skills, s)
		}
		bySkill[s] = append(bySkill[s], c)
	}
	comps := benchmarkSkillComparisons(r)
	rule := benchmarkSkillRule(r)
	var out []BenchmarkSkillResults
	for _, s := range skills {
		out = append(out, benchmarkSkillResults(r, ev, s, bySkill[s], comps, rule))
	}
	return out
}

// benchmarkSkillComparisons are the pairs the judge compared, else the
// first two arms in authored order (the format's new-skill and no-skill).
func benchmarkSkillComparisons(r *verdict.Report) []BenchmarkSkillComparison {
	var out []BenchmarkSkillComparison
	seen := map[[2]string]bool{}
	for _, p := range r.Pairwise {
		k := [2]string{p.Candidate, p.Baseline}
		if !seen[k] {
			seen[k] = true
			out = append(out, BenchmarkSkillComparison{Candidate: p.Candidate, Baseline: p.Baseline, Rule: "efficacy"})
		}
	}
	if len(out) == 0 && len(r.Arms) >= 2 {
		out = append(out, BenchmarkSkillComparison{Candidate: r.Arms[0].Name, Baseline: r.Arms[1].Name, Rule: "efficacy"})
	}
	return out
}

// benchmarkSkillRule is the verdict's efficacy rule, nil when the policy
// has none.
func benchmarkSkillRule(r *verdict.Report) *verdict.RuleOutcome {
	for i := range r.Verdict.Rules {
		if r.Verdict.Rules[i].Rule == "efficacy" {
			return &r.Verdict.Rules[i]
		}
	}
	return nil
}

func benchmarkSkillResults(r *verdict.Report, ev *Evidence, skill string, cases []verdict.CaseReport, comps []BenchmarkSkillComparison, rule *verdict.RuleOutcome) BenchmarkSkillResults {
	res := BenchmarkSkillResults{
		Skill: skill,
		Run: BenchmarkSkillRun{
			Suite: r.Suite, Plan: string(r.Plan), CaseSet: string(r.CaseSet), Harness: r.Harness,
			Agent: r.Agent.Kind, Provider: r.Agent.Provider, Model: r.Agent.Model,
			Trials: r.Trials, Policy: r.Policy, StandIn: r.StandIn, Verdict: r.Verdict.Verdict,
			Prices: benchmarkSkillPrices(r.Agent.Prices),
		},
		Comparisons: comps,
		Footnote:    BenchmarkSkillFootnote,
		Arms:        []BenchmarkSkillArm{},
		Cases:       []BenchmarkSkillCase{},
	}
	if res.Comparisons == nil {
		res.Comparisons = []BenchmarkSkillComparison{}
	}
	if r.Judge != nil {
		res.Run.Judge = strings.TrimSuffix(r.Judge.Provider+" "+r.Judge.Model, " ")
	}
	candidate, baseline := "", ""
	if len(comps) > 0 {
		candidate, baseline = comps[0].Candidate, comps[0].Baseline
	}

	res.Arms = benchmarkSkillArms(r, ev, cases, comps, res.Run.Prices)

	// Cases: the candidate's trials against the baseline's.
	judged := map[string]map[int]grade.PairwiseResult{}
	for _, p := range r.Pairwise {
		if p.Candidate != candidate || p.Baseline != baseline {
			continue
		}
		if judged[p.Case] == nil {
			judged[p.Case] = map[int]grade.PairwiseResult{}
		}
		judged[p.Case][p.Trial] = p
	}
	failed := map[string]bool{}
	if rule != nil {
		res.Rule = rule.Detail
		for _, reason := range rule.Reasons {
			failed[strings.TrimPrefix(reason, "EFFICACY ")] = true
		}
	}
	green, incomplete := true, rule == nil || rule.NotMeasured != ""
	for _, c := range cases {
		_, folder := BenchmarkSkillSkill(c.ID)
		bc := BenchmarkSkillCase{ID: c.ID, Case: folder, Description: c.Description, Trials: []BenchmarkSkillTrial{}}
		states := make([]string, len(c.Trials[candidate]))
		hasHard := false
		for i, t := range c.Trials[candidate] {
			bt := BenchmarkSkillTrial{Trial: t.Trial, Outcome: outcomeNotJudged}
			if p, ok := judged[c.ID][t.Trial]; ok {
				bt.Outcome, bt.First = p.Outcome, p.First
			}
			switch bt.Outcome {
			case grade.PairwiseWin:
				bc.Wins++
			case grade.PairwiseLoss:
				bc.Losses++
				bc.Review = true
			case outcomeNotJudged:
			default:
				bc.Ties++
			}
			var shown bool
			states[i], shown = hardAssertion(ev, cellName(c.ID, candidate, t), t)
			hasHard = hasHard || shown
			bc.Trials = append(bc.Trials, bt)
		}
		if hasHard {
			hard := &BenchmarkSkillHard{}
			for i, st := range states {
				bc.Trials[i].HardAssertions = st
				switch st {
				case "pass":
					hard.Passed++
				case "fail":
					hard.Failed++
				}
			}
			bc.HardAssertions = hard
		}
		notJudged := len(bc.Trials) < r.Trials || slices.ContainsFunc(bc.Trials, func(t BenchmarkSkillTrial) bool { return t.Outcome == outcomeNotJudged })
		switch {
		case bc.HardAssertions != nil && bc.HardAssertions.Failed > 0 && rule != nil:
			// A failed hard assertion fails the case whatever the judge says.
			bc.Efficacy = EfficacyFail
			green = false
		case rule == nil || rule.NotMeasured != "" || notJudged:
			// A trial still to judge may turn the rule either way.
			bc.Efficacy = EfficacyIncomplete
			incomplete = true
		case failed[c.ID] || failed["no pairwise judgements"]:
			bc.Efficacy = EfficacyFail
			green = false
		default:
			bc.Efficacy = EfficacyPass
			res.Passed++
		}
		res.Cases = append(res.Cases, bc)
	}
	switch {
	case !green:
		res.Efficacy = EfficacyRed
	case incomplete:
		res.Efficacy = EfficacyIncomplete
	default:
		res.Efficacy = EfficacyGreen
	}
	return res
}

// benchmarkSkillArms are the cost table's rows: per arm, sums over the
// skill's cells, and each candidate's cost against its baseline's.
func benchmarkSkillArms(r *verdict.Report, ev *Evidence, cases []verdict.CaseReport, comps []BenchmarkSkillComparison, prices *BenchmarkSkillPrices) []BenchmarkSkillArm {
	arms := []BenchmarkSkillArm{}
	for _, name := range reportArmNames(r) {
		arm := BenchmarkSkillArm{Name: name}
		var tokens BenchmarkSkillTokens
		turns, turnCells := 0, 0
		for _, c := range cases {
			for _, t := range c.Trials[name] {
				if t.Status == grade.StatusMissing || t.Status == "" {
					continue
				}
				arm.Cells++
				ce, ok := evidenceCell(ev, cellName(c.ID, name, t))
				if !ok {
					continue
				}
				turns += toolRounds(ce.Turns)
				turnCells++
				if tk := ce.Tokens; tk != nil {
					tokens.Input += tk.Input
					tokens.Output += tk.Output
					tokens.CacheRead += tk.CacheRead
					tokens.CacheWrite += tk.CacheWrite
					arm.TokenCells++
				}
			}
		}
		if turnCells > 0 {
			arm.Turns = &turns
		}
		if arm.TokenCells > 0 {
			arm.Tokens = &tokens
			if p := prices; p != nil {
				cet := float64(tokens.Input) + (float64(tokens.Output)*p.Output+float64(tokens.CacheRead)*p.CacheRead+float64(tokens.CacheWrite)*p.CacheWrite)/p.Input
				usd := cet * p.Input / 1e6
				arm.CostEquivalentTokens, arm.ImputedCostUSD = &cet, &usd
			}
		}
		arms = append(arms, arm)
	}
	for _, comp := range comps {
		var cand, base *BenchmarkSkillArm
		for i := range arms {
			switch arms[i].Name {
			case comp.Candidate:
				cand = &arms[i]
			case comp.Baseline:
				base = &arms[i]
			}
		}
		if cand != nil && base != nil && cand.CostEquivalentTokens != nil && base.CostEquivalentTokens != nil && *base.CostEquivalentTokens > 0 {
			ratio := *cand.CostEquivalentTokens / *base.CostEquivalentTokens
			cand.Ratio = &ratio
		}
	}
	return arms
}

// benchmarkSkillPrices are the agent's token prices, when it has an input
// price to weigh the others by.
func benchmarkSkillPrices(p *suite.Prices) *BenchmarkSkillPrices {
	if p == nil || p.InputPerMTok == nil || *p.InputPerMTok <= 0 {
		return nil
	}
	val := func(f *float64) float64 {
		if f == nil {
			return 0
		}
		return *f
	}
	return &BenchmarkSkillPrices{Input: *p.InputPerMTok, Output: val(p.OutputPerMTok), CacheRead: val(p.CacheReadPerMTok), CacheWrite: val(p.CacheWritePerMTok)}
}

func evidenceCell(ev *Evidence, cell string) (CellEvidence, bool) {
	if ev == nil {
		return CellEvidence{}, false
	}
	ce, ok := ev.Cells[cell]
	return ce, ok
}

// toolRounds counts a transcript's tool-call rounds: each tool call is a
// round of the agent's loop (the transcript does not tell which calls one
// model turn made together, so those count one each).
func toolRounds(turns []Turn) int {
	n := 0
	for _, t := range turns {
		if t.Role == "tool" {
			n++
		}
	}
	return n
}

// hardAssertion is the hard-assertion gate's state on one candidate cell
// (pass when every predicate passed, fail when one failed, not-run when the
// cell did not complete), and whether the cell shows the case has the gate:
// its evidence holds the checks, or one is among its failed ones.
func hardAssertion(ev *Evidence, cell string, t verdict.TrialOutcome) (string, bool) {
	isHard := func(name string) bool { return strings.HasPrefix(name, benchmarkSkillHardCheck) }
	if ce, ok := evidenceCell(ev, cell); ok {
		seen, failed := false, false
		for _, ch := range ce.Checks {
			if isHard(ch.Name) {
				seen, failed = true, failed || !ch.Passed
			}
		}
		if failed {
			return "fail", true
		}
		if seen {
			return "pass", true
		}
	}
	if slices.ContainsFunc(t.Failed, isHard) {
		return "fail", true
	}
	if t.Status != grade.StatusCompleted {
		return "not-run", false
	}
	return "pass", false
}

//go:embed benchmarkskill.tmpl
var benchmarkSkillTemplate string

var benchmarkSkillHTML = template.Must(template.New("benchmarkskill.html").Funcs(template.FuncMap{
	"int":   func(v int64) string { return fmtInt(v) },
	"num":   func(v float64) string { return groupThousands(fmt.Sprintf("%.0f", v)) },
	"usd":   fmtUSD,
	"ratio": func(v float64) string { return fmt.Sprintf("%.2f×", v) },
	"short": func(s string) string {
		if i := strings.IndexByte(s, ':'); i >= 0 && len(s) > i+13 {
			return s[:i+13]
		}
		return s
	},
	"lower": strings.ToLower,
}).Parse(benchmarkSkillTemplate))

func renderBenchmarkSkillHTML(res BenchmarkSkillResults) ([]byte, error) {
	var b bytes.Buffer
	if err := benchmarkSkillHTML.Execute(&b, res); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
