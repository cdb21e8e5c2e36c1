package readback

import (
	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/store"
)

// RerunCells are every possible same-tree rerun of the plan's cells, up to the policy's
// rerunRed: where the report looks for the reruns a run made.
func RerunCells(p *plan.Plan) []plan.Cell {
	var out []plan.Cell
	for n := 1; n <= p.Policy.RerunRed; n++ {
		for _, c := range p.Cells {
			out = append(out, plan.RerunCell(c, n))
		}
	}
	return out
}

// StoredReruns are the results of the reruns the store holds.
func StoredReruns(p *plan.Plan, st *store.Store) ([]plan.Cell, []grade.CellResult, error) {
	cells := RerunCells(p)
	if len(cells) == 0 {
		return nil, nil, nil
	}
	q := *p
	q.Cells = cells
	results, err := store.Results(&q, st)
	if err != nil {
		return nil, nil, err
	}
	return cells, results, nil
}
