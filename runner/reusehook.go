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
	res, err := reuse.TakeFrom(reuse.Source{From: opts.Reuse, Cache: opts.Cache}, st, p, cells, opts.DryRun)
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
	fmt.Fprintln(opts.Log, res.Describe(verb, reuseName(opts), time.Now()))
	return len(res.Taken), nil
}

// reuseName is how the log names where --reuse takes from.
func reuseName(opts Options) string {
	if opts.Reuse == reuse.FromCache {
		return "the machine's cache (" + opts.Cache + ")"
	}
	return opts.Reuse
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
