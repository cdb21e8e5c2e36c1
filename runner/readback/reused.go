package readback

import (
	"time"

	"github.com/skillgate/skillgate/runner/reuse"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/report"
)

// markReused marks in the reports' evidence the cells whose rollouts run
// --reuse took (the run folder's reused.json), with their age when taken.
func markReused(out string, results []grade.CellResult, ev *report.Evidence) error {
	ledger, err := reuse.Ledger(out)
	if err != nil || len(ledger) == 0 {
		return err
	}
	for _, res := range results {
		t, ok := ledger[res.Rollout]
		ce, okc := ev.Cells[res.Cell]
		if !ok || !okc {
			continue
		}
		id := res.Cell
		ce.Reused = &report.ReusedEvidence{From: t.From, RanAt: t.RanAt.UTC().Format(time.RFC3339), Age: reuse.Span(t.TakenAt.Sub(t.RanAt))}
		ev.Cells[id] = ce
	}
	return nil
}
