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
// and every criterion passes: a judge never passes a failed cell. Score
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
	all := true
	for i, text := range pc.Rubric {
		var c CriterionResult
		if i < len(deciding) {
			c = deciding[i]
		}
		ch := CheckResult{Name: criterionName(i, text), Kind: CheckJudge, Passed: c.Pass, Detail: c.Evidence}
		if c.Pass {
			passed++
		} else {
			all = false
		}
		r.Checks = append(r.Checks, ch)
	}
	if len(pc.Rubric) > 0 {
		j.Score = float64(passed) / float64(len(pc.Rubric))
	}
	r.Passed = r.Passed && all
	r.Judge = &j
	return r
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
	// Valid, Reason and Criteria are read from the adjudicator's reply as a
	// rubric judgement's are.
	Valid    bool              `json:"valid,omitempty"`
	Reason   string            `json:"reason,omitempty"`
	Criteria []CriterionResult `json:"criteria,omitempty"`
	Seconds  float64           `json:"seconds,omitempty"`
	Tokens   *Tokens           `json:"tokens,omitempty"`
}

// Decision is what the adjudicator decided: pass (every criterion met),
// fail, invalid (its reply could not be read), or not adjudicated.
func (d *Dispute) Decision() string {
	switch {
	case !d.Adjudicated:
		return DecisionNotAdjudicated
	case !d.Valid:
		return DecisionInvalid
	case allCriteria(d.Criteria):
		return DecisionPass
	}
	return DecisionFail
}

func allCriteria(cs []CriterionResult) bool {
	for _, c := range cs {
		if !c.Pass {
			return false
		}
	}
	return true
}

// DisputeOf says whether a valid rubric judgement (its criteria) disputes
// a cell's deterministic result r: every deterministic check passed and a
// criterion failed, or a check failed and every criterion passed; or the
// suite names the case for adjudication. It returns nil when nothing is
// disputed. A cell with no deterministic check has nothing to disagree
// with.
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
	switch {
	case len(r.Checks) > 0 && len(failedChecks) == 0 && len(failedCriteria) > 0:
		return &Dispute{Kind: DisputeDisagreement, Disagreed: "every deterministic check passed; the judge failed " + strings.Join(failedCriteria, ", ")}
	case len(failedChecks) > 0 && len(failedCriteria) == 0:
		return &Dispute{Kind: DisputeDisagreement, Disagreed: "the judge passed every criterion; deterministic checks failed: " + strings.Join(failedChecks, ", ")}
	case p.Judge != nil && slices.Contains(p.Judge.Adjudication.Cases, pc.ID):
		return &Dispute{Kind: DisputeNamed, Disagreed: "the suite names case " + pc.ID + " for adjudication"}
	}
	return nil
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
	cases := map[string]plan.PlanCase{}
	for _, pc := range p.Cases {
		cases[pc.ID] = pc
	}
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
