package readback

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/store"
)

// PlanAhead is a run folder's plan.json read and decoded in the
// background, while the run's cells run, for the report at its end: the
// report takes it while the file still holds exactly the bytes decoded,
// and reads the file again otherwise.
type PlanAhead struct {
	file string
	done chan struct{}
	b    []byte
	p    *plan.Plan
	err  error
}

// ReadPlanAhead starts reading the plan of the run folder out.
func ReadPlanAhead(out string) *PlanAhead {
	a := &PlanAhead{file: filepath.Join(out, store.FilePlan), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		if a.b, a.err = os.ReadFile(a.file); a.err == nil {
			a.p, a.err = plan.DecodePlan(a.file, a.b)
		}
	}()
	return a
}

// readPlan is the plan in the run folder out's plan.json now: ahead's,
// while the file holds the bytes it decoded (nil ahead: read now).
func readPlan(out string, ahead *PlanAhead) (*plan.Plan, error) {
	file := filepath.Join(out, store.FilePlan)
	if ahead == nil || ahead.file != file {
		return plan.ReadPlan(file)
	}
	<-ahead.done
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	if ahead.err == nil && bytes.Equal(b, ahead.b) {
		return ahead.p, nil
	}
	return plan.DecodePlan(file, b)
}
