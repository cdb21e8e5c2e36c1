package grade

import (
	"fmt"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"

	"github.com/opencontainers/go-digest"
)

// ApplyRubric adds a rubric judgement to a cell's deterministic result.
//
// A valid judgement adds one check of kind "judge" per criterion, so
// reports list them; the cell passes only when it passed deterministically
// and the rubric passes, at least the case's rubricPass fraction of its
// criteria met (every one by default): a judge never passes a failed cell. Score
// stays the deterministic checks' fraction; the criteria's is j.Score.
// When j.Dispute holds an adjudication, the adjudicator's criteria are the
// checks and the score: the adjudicator decides, under the same rule.
//
// An invalid judgement (a missing, duplicate, extra or malformed result,
// or an unreadable reply), the first judge's or the adjudicator's, makes
// the cell invalid, like an infrastructure error: it counts in invalidRun,
// leaves taskSuccess and the other quality metrics, and makes the verdict
// INCOMPLETE. It never passes.
func ApplyRubric(r CellResult, pc plan.PlanCase, j CellJudgement) CellResult {
	r = DeterministicResult(r)
	j.Status, j.DeterministicPassed = r.Status, r.Passed
	if j.Dispute != nil {
		d := *j.Dispute
		j.Dispute = &d
	}
	invalid := func(reason string) CellResult {
		j.Score = 0
		r.Status, r.Passed = StatusInvalid, false
		r.Error = reason
		r.Judge = &j
		return r
	}
	if !j.Valid {
		j.Criteria = nil
		return invalid("judge: " + j.Reason)
	}
	deciding := j.Criteria
	if d := j.Dispute; d != nil && d.Adjudicated {
		if !d.Valid {
			d.Criteria = nil
			return invalid("adjudicator: " + d.Reason)
		}
		deciding = d.Criteria
	}
	passed := 0
	for i, text := range pc.Rubric {
		var c CriterionResult
		if i < len(deciding) {
			c = deciding[i]
		}
		ch := CheckResult{Name: criterionName(i, text), Kind: CheckJudge, Passed: c.Pass, Detail: c.Evidence}
		if c.Pass {
			passed++
		}
		r.Checks = append(r.Checks, ch)
	}
	if len(pc.Rubric) > 0 {
		j.Score = float64(passed) / float64(len(pc.Rubric))
	}
	r.Passed = r.Passed && RubricPasses(passed, len(pc.Rubric), RubricNeed(pc))
	r.Judge = &j
	return r
}

// RubricNeed is the fraction of its rubric's criteria case pc needs met:
// its rubricPass, or every criterion for a plan written before cases had
// one (which reads as 0).
func RubricNeed(pc plan.PlanCase) float64 {
	if pc.RubricPass <= 0 {
		return 1
	}
	return pc.RubricPass
}

// RubricPasses reports whether passed of n criteria meet the fraction
// need: 4 of 5 meet 0.8 and not 1. The ratio is compared, not passed with
// need×n, whose rounding could miss an exact fraction.
func RubricPasses(passed, n int, need float64) bool {
	if n == 0 {
		return true
	}
	return float64(passed)/float64(n) >= need
}

// criterionName is the check name of a rubric criterion.
func criterionName(i int, text string) string {
	return fmt.Sprintf("rubric %d: %s", i, text)
}

// DeterministicResult is a cell's result before any judge: a judged cell
// loses its judge checks and gets its deterministic status back.
func DeterministicResult(r CellResult) CellResult {
	if r.Judge == nil {
		return r
	}
	checks := []CheckResult{}
	for _, ch := range r.Checks {
		if ch.Kind != CheckJudge {
			checks = append(checks, ch)
		}
	}
	r.Checks, r.Status, r.Passed = checks, r.Judge.Status, r.Judge.DeterministicPassed
	if r.Status != StatusInvalid {
		r.Error = ""
	}
	r.Judge = nil
	return r
}

// Why a rubric cell is disputed.
const (
	// DisputeDisagreement: the deterministic checks and the judge disagree.
	DisputeDisagreement = "disagreement"
	// DisputeNamed: the suite's judge.adjudication.cases names the case.
	DisputeNamed = "named"
)

// What an adjudicator decided about a disputed cell's criteria.
const (
	DecisionPass           = "pass"
	DecisionFail           = "fail"
	DecisionInvalid        = "invalid"
	DecisionNotAdjudicated = "not adjudicated"
)

// Dispute is why a rubric cell's judgement went to the adjudicator, and
// the adjudicator's judgement when it was asked.
type Dispute struct {
	// Kind is DisputeDisagreement or DisputeNamed; Disagreed says what
	// disagreed, for people.
	Kind      string `json:"kind"`
	Disagreed string `json:"disagreed"`
	// Adjudicated: the adjudicator was asked (judge.adjudication.enabled).
	Adjudicated bool `json:"adjudicated"`
	// Key names the adjudicator's judgement in store/judgements.
	Key string `json:"key,omitempty"`
	// Need is the fraction of the criteria the case needs met when it is
	// not every one (0).
	Need float64 `json:"need,omitempty"`
	// Valid, Reason and Criteria are read from the adjudicator's reply as a
	// rubric judgement's are.
	Valid    bool              `json:"valid,omitempty"`
	Reason   string            `json:"reason,omitempty"`
	Criteria []CriterionResult `json:"criteria,omitempty"`
	Seconds  float64           `json:"seconds,omitempty"`
	Tokens   *Tokens           `json:"tokens,omitempty"`
}

// Decision is what the adjudicator decided: pass (the criteria the case
// needs met, every one by default), fail, invalid (its reply could not be
// read), or not adjudicated.
func (d *Dispute) Decision() string {
	switch {
	case !d.Adjudicated:
		return DecisionNotAdjudicated
	case !d.Valid:
		return DecisionInvalid
	}
	need := d.Need
	if need == 0 {
		need = 1
	}
	if RubricPasses(countPassed(d.Criteria), len(d.Criteria), need) {
		return DecisionPass
	}
	return DecisionFail
}

// countPassed counts the criteria met.
func countPassed(cs []CriterionResult) int {
	n := 0
	for _, c := range cs {
		if c.Pass {
			n++
		}
	}
	return n
}

// DisputeOf says whether a valid rubric judgement (its criteria) disputes
// a cell's deterministic result r: every deterministic check passed and the
// rubric failed (fewer criteria met than the case needs: with the default,
// one failed), or a check failed and the rubric passed; or the suite names
// the case for adjudication. It returns nil when nothing is disputed. A
// cell with no deterministic check has nothing to disagree with.
func DisputeOf(p *plan.Plan, pc plan.PlanCase, r CellResult, criteria []CriterionResult) *Dispute {
	r = DeterministicResult(r)
	var failedChecks []string
	for _, ch := range r.Checks {
		if !ch.Passed {
			failedChecks = append(failedChecks, ch.Name)
		}
	}
	var failedCriteria []string
	for _, c := range criteria {
		if !c.Pass && c.Criterion >= 0 && c.Criterion < len(pc.Rubric) {
			failedCriteria = append(failedCriteria, criterionName(c.Criterion, pc.Rubric[c.Criterion]))
		}
	}
	need := RubricNeed(pc)
	rubricPassed := RubricPasses(len(pc.Rubric)-len(failedCriteria), len(pc.Rubric), need)
	var d *Dispute
	switch {
	case len(r.Checks) > 0 && len(failedChecks) == 0 && !rubricPassed:
		d = &Dispute{Kind: DisputeDisagreement, Disagreed: "every deterministic check passed; the judge failed " + strings.Join(failedCriteria, ", ")}
	case len(failedChecks) > 0 && rubricPassed && len(failedCriteria) == 0:
		d = &Dispute{Kind: DisputeDisagreement, Disagreed: "the judge passed every criterion; deterministic checks failed: " + strings.Join(failedChecks, ", ")}
	case len(failedChecks) > 0 && rubricPassed:
		d = &Dispute{Kind: DisputeDisagreement, Disagreed: fmt.Sprintf("the judge passed the rubric (%d of %d criteria, %g needed); deterministic checks failed: %s", len(pc.Rubric)-len(failedCriteria), len(pc.Rubric), need, strings.Join(failedChecks, ", "))}
	case p.Judge != nil && slices.Contains(p.Judge.Adjudication.Cases, pc.ID):
		d = &Dispute{Kind: DisputeNamed, Disagreed: "the suite names case " + pc.ID + " for adjudication"}
	}
	if d != nil && need != 1 {
		d.Need = need
	}
	return d
}

// AdjudicationKey names the adjudicator's judgement of the cell with
// grade key grade (which holds the judge's identity, its adjudication
// included), beside the first judge's, which is named by grade itself.
func AdjudicationKey(grade digest.Digest) digest.Digest {
	return plan.DigestJSON(struct {
		Format int           `json:"format"`
		Grade  digest.Digest `json:"grade"`
		Role   string        `json:"role"`
	}{plan.PacketFormat, grade, "adjudicator"})
}

// AdjudicatorOf is the judge that adjudicates the plan's disputes: the
// suite's adjudication.judge, else the judge itself; and its rubric
// template.
func AdjudicatorOf(pj *plan.PlanJudge) (suite.Judge, string) {
	a := pj.Adjudication.Judge
	if a == nil {
		return pj.Judge, pj.Templates.Rubric
	}
	j := suite.Judge{Provider: a.Provider, Model: a.Model, Command: a.Command, Script: a.Script, Upstream: a.Upstream,
		CredentialEnv: a.CredentialEnv, Prices: a.Prices, Mode: "rubric", Templates: pj.Templates, Packet: pj.Packet}
	if a.Template != "" {
		j.Templates.Rubric = a.Template
	}
	return j, j.Templates.Rubric
}

// AdjudicationReport is the run's adjudication as reports show it: who
// adjudicates and every disputed cell.
type AdjudicationReport struct {
	// Blinded: the adjudicator sees the blinded packet only. Always true.
	Blinded bool `json:"blinded"`
	// Enabled: disputes go to the adjudicator (else they are only listed).
	Enabled  bool   `json:"enabled"`
	Provider string `json:"provider"`
	Model    string `json:"model,omitempty"`
	// Disputed lists the disputed cells in plan order.
	Disputed []DisputedCell `json:"disputed"`
}

// DisputedCell is one disputed answer: which, what disagreed and what the
// adjudicator decided (Decision), with the criteria it failed.
type DisputedCell struct {
	Cell      string   `json:"cell"`
	Case      string   `json:"case"`
	Arm       string   `json:"arm"`
	Trial     int      `json:"trial"`
	Kind      string   `json:"kind"`
	Disagreed string   `json:"disagreed"`
	Decision  string   `json:"decision"`
	Failed    []string `json:"failed,omitempty"`
	// Passed is the cell's outcome after adjudication.
	Passed bool `json:"passed"`
}

// BuildAdjudicationReport lists the disputes among a run's results (one
// per plan cell), nil when the plan has no judge.
func BuildAdjudicationReport(p *plan.Plan, results []CellResult) *AdjudicationReport {
	if p.Judge == nil {
		return nil
	}
	aj, _ := AdjudicatorOf(p.Judge)
	model := aj.Model
	if model == "" && aj.Script != nil {
		model = aj.Script.Model // a scripted stand-in names its model there
	}
	rep := &AdjudicationReport{Blinded: true, Enabled: p.Judge.Adjudication.Enabled, Provider: aj.Provider, Model: model, Disputed: []DisputedCell{}}
	cases := p.CasesByID()
	for _, r := range results {
		if r.Judge == nil || r.Judge.Dispute == nil {
			continue
		}
		d := r.Judge.Dispute
		dc := DisputedCell{Cell: r.Cell, Case: r.Case, Arm: r.Arm, Trial: r.Trial, Kind: d.Kind, Disagreed: d.Disagreed, Decision: d.Decision(), Passed: r.Passed}
		if d.Adjudicated && d.Valid {
			rubric := cases[r.Case].Rubric
			for _, c := range d.Criteria {
				if !c.Pass && c.Criterion >= 0 && c.Criterion < len(rubric) {
					dc.Failed = append(dc.Failed, criterionName(c.Criterion, rubric[c.Criterion]))
				}
			}
		}
		rep.Disputed = append(rep.Disputed, dc)
	}
	return rep
}
