package runner

import (
	"github.com/opencontainers/go-digest"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/store"
)

// queueCells counts the selected cells whose rollout is stored and valid as
// reused, and queues the rest, one cell per rollout key: cells sharing a key
// share its rollout.
func queueCells(st *store.Store, cells []plan.Cell, sum *Summary) (todo []plan.Cell, queued map[digest.Digest]bool, err error) {
	queued = map[digest.Digest]bool{}
	for _, c := range cells {
		r, ok, err := st.Rollout(c.Rollout)
		if err != nil {
			return nil, nil, err
		}
		if ok && r.Status != store.StatusInvalid {
			sum.Reused++
			sum.Statuses[r.Status]++
			continue
		}
		if !queued[c.Rollout] {
			queued[c.Rollout] = true
			todo = append(todo, c)
		}
	}
	return todo, queued, nil
}

// countShared counts the cells that shared a key with a cell run now (and so
// did not run themselves) with that cell's stored rollout.
func countShared(st *store.Store, cells, todo []plan.Cell, queued map[digest.Digest]bool, sum *Summary) {
	ran := make(map[string]bool, len(todo))
	for _, t := range todo {
		ran[t.ID] = true
	}
	for _, c := range cells {
		if queued[c.Rollout] && !ran[c.ID] {
			if ro, ok, _ := st.Rollout(c.Rollout); ok {
				sum.Reused++
				sum.Statuses[ro.Status]++
			}
		}
	}
}
