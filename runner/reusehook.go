package runner

import (
	"fmt"
	"time"

	"github.com/skillgate/skillgate/runner/reuse"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/report"
)

// reuseFrom takes into the run folder the rollouts opts.Reuse holds under
// the selected cells' keys (runner/reuse), verified, and says how many and
// from where; with DryRun it only counts them.
func reuseFrom(st *store.Store, p *plan.Plan, cells []plan.Cell, opts Options) (int, error) {
	res, err := reuse.Take(opts.Reuse, st, p, cells, opts.DryRun)
	if err != nil {
		return 0, err
	}
	for _, r := range res.Refused {
		fmt.Fprintf(opts.Log, "reuse: not taken, failed verification: %s\n", r)
	}
	verb := "reused"
	if opts.DryRun {
		verb = "would reuse"
	}
	if len(res.Taken) == 0 {
		fmt.Fprintf(opts.Log, "%s no cell from %s: none of its rollouts has a selected cell's key\n", verb, opts.Reuse)
		return 0, nil
	}
	oldest, newest := res.Taken[0].RanAt, res.Taken[0].RanAt
	for _, t := range res.Taken {
		oldest, newest = minTime(oldest, t.RanAt), maxTime(newest, t.RanAt)
	}
	saved := fmt.Sprintf("%.0f s of cells", res.SavedSeconds)
	if res.SavedUSD > 0 {
		saved = fmt.Sprintf("$%.4f and %s", res.SavedUSD, saved)
	}
	fmt.Fprintf(opts.Log, "%s %d cells from %s (stored rollouts of the same keys, verified; run %s to %s ago), saving %s as they cost when they ran\n", verb, len(res.Taken), opts.Reuse, age(newest), age(oldest), saved)
	return len(res.Taken), nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// age says how long ago t was, to the unit that matters.
func age(t time.Time) string { return span(time.Since(t)) }

// span says d to the unit that matters.
func span(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

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
		ce.Reused = &report.ReusedEvidence{From: t.From, RanAt: t.RanAt.UTC().Format(time.RFC3339), Age: span(t.TakenAt.Sub(t.RanAt))}
		ev.Cells[id] = ce
	}
	return nil
}
