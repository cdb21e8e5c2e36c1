package readback

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/skillgate/skillgate/pipeline"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/runfolder"
	"github.com/skillgate/skillgate/pipeline/verdict"
	"github.com/skillgate/skillgate/runner/judge"
	"github.com/skillgate/skillgate/runner/store"
)

// FileSequential is the run folder's record of sequential stopping: each
// comparison's decision with its round and e-value, and every cell not
// needed with the round it belongs to and the comparisons that stopped
// before it. It is rewritten with the reports, from the plan and the
// stored results alone.
const FileSequential = runfolder.FileSequential

// SequentialOf decides the plan's sequential stopping from what the run
// folder stores (graded, and judged where the plan judges), and counts
// the cells not needed that never ran; nil without policy.sequential.
func SequentialOf(out string, p *plan.Plan) (*verdict.Sequential, error) {
	if p.Policy.Sequential == nil {
		return nil, nil
	}
	st := &store.Store{Dir: out}
	results, err := store.Results(p, st)
	if err != nil {
		return nil, err
	}
	if p.Judge != nil {
		if results, _, _, _, err = judge.JudgedResults(p, st, results); err != nil {
			return nil, err
		}
	}
	seq := verdict.DecideSequential(p, results)
	cells := map[string]plan.Cell{}
	for _, c := range p.Cells {
		cells[c.ID] = c
	}
	for _, c := range seq.NotNeeded {
		if _, ok, err := st.Rollout(cells[c.Cell].Rollout); err != nil {
			return nil, err
		} else if !ok {
			seq.Saved++
		}
	}
	return seq, nil
}

// WriteSequential writes FileSequential beside the reports.
func WriteSequential(out string, seq *verdict.Sequential) error {
	if seq == nil {
		return nil
	}
	b, err := json.MarshalIndent(seq, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", FileSequential, err)
	}
	return pipeline.WriteFile(filepath.Join(out, FileSequential), append(b, '\n'))
}
