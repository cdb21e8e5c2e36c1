package verdict

import (
	"slices"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
)

// RerunReport is one rerun of a red panel, as the reports show it.
type RerunReport struct {
	plan.Panel
	// Rerun counts from 1.
	Rerun  int            `json:"rerun"`
	Trials []TrialOutcome `json:"trials"`
	// Flaky: the rerun passed where the first run failed; the case is
	// FLAKY, not red. Else the failure stands.
	Flaky bool `json:"flaky"`
}

// reruns indexes rerun results by panel, then rerun number.
type reruns map[plan.Panel]map[int][]grade.CellResult

func indexReruns(results []grade.CellResult, cells []plan.Cell) reruns {
	out := reruns{}
	for i, r := range results {
		c := cells[i]
		if c.Rerun == 0 || r.Status == grade.StatusMissing {
			continue
		}
		pn := plan.Panel{Case: c.Case, Arm: c.Arm}
		if out[pn] == nil {
			out[pn] = map[int][]grade.CellResult{}
		}
		out[pn][c.Rerun] = append(out[pn][c.Rerun], r)
	}
	return out
}

// rerunPanel is the pass count of a panel's n-th rerun, and whether every one of its
// trials has a valid result.
func (rs reruns) panel(pn plan.Panel, n int) (passCounter, bool) {
	var c passCounter
	results := rs[pn][n]
	if len(results) == 0 {
		return c, false
	}
	complete := true
	for _, r := range results {
		if !r.Valid() {
			complete = false
			continue
		}
		c.add(r.Passed)
	}
	return c, complete
}

// ApplyReruns re-decides a report's verdict with the reruns of its red panels: rerun
// results (cells made by RerunCell, results aligned with them), a panel whose rerun passes
// turning FLAKY instead of red. It lists every rerun in the report. The reruns change no
// metric: the first outcomes stay the record; only the rules that allow a rerun read them.
func ApplyReruns(rep *Report, p *plan.Plan, results []grade.CellResult, pairwise []grade.PairwiseResult, cells []plan.Cell, rerunResults []grade.CellResult) {
	if len(cells) == 0 {
		return
	}
	rs := indexReruns(rerunResults, cells)
	rep.Verdict = evaluatePolicy(p, results, rep.Arms, pairwise, rs)
	for _, pc := range p.Cases {
		for _, a := range p.Arms {
			pn := plan.Panel{Case: pc.ID, Arm: a.Name}
			ns := make([]int, 0, len(rs[pn]))
			for n := range rs[pn] {
				ns = append(ns, n)
			}
			slices.Sort(ns)
			for _, n := range ns {
				rr := RerunReport{Panel: pn, Rerun: n, Trials: []TrialOutcome{}}
				for _, r := range rs[pn][n] {
					rr.Trials = append(rr.Trials, trialOutcome(r))
				}
				rr.Flaky = slices.Contains(rep.Verdict.Warnings, "FLAKY "+pc.ID)
				rep.Reruns = append(rep.Reruns, rr)
			}
		}
	}
}

// RedPanels are the panels whose regression or safety rule fails and that have no rerun
// numbered n yet: what a run with rerunRed reruns, one number at a time.
func RedPanels(p *plan.Plan, results []grade.CellResult, cells []plan.Cell, rerunResults []grade.CellResult, n int) []plan.Panel {
	rs := indexReruns(rerunResults, cells)
	in := newPolicyInput(p, alignResults(p, results), nil, nil, rs)
	var out []plan.Panel
	for _, pn := range in.redPanels() {
		if _, ok := rs[pn][n]; !ok {
			out = append(out, pn)
		}
	}
	return out
}
