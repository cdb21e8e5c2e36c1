package runner

import (
	"fmt"
	"time"

	"github.com/skillgate/skillgate/runner/reuse"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"
)

// reuseFrom takes into the run folder the rollouts opts.Reuse holds under
// the selected cells' keys (runner/reuse), verified, and says how many and
// from where; with DryRun it only counts them, and the sentinel cells
// that would run again before they count.
func reuseFrom(st *store.Store, p *plan.Plan, cells []plan.Cell, opts Options) (taken, sentinels int, err error) {
	res, err := reuse.Take(opts.Reuse, st, p, cells, opts.DryRun)
	if err != nil {
		return 0, 0, err
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
		return 0, 0, nil
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
	if opts.DryRun {
		sentinels = logDrySentinels(p, cells, res.Taken, opts)
	}
	return len(res.Taken), sentinels, nil
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
func age(t time.Time) string { return reuse.Span(time.Since(t)) }
