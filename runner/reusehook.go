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
	fmt.Fprintf(opts.Log, "%s %d cells from %s (stored rollouts of the same keys, verified; run %s to %s ago)\n", verb, len(res.Taken), opts.Reuse, age(newest), age(oldest))
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
func age(t time.Time) string {
	d := time.Since(t)
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
