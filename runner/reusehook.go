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
	res, err := reuse.TakeFrom(reuse.Source{From: opts.Reuse, Cache: opts.Cache}, st, p, cells, opts.DryRun)
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
	fmt.Fprintln(opts.Log, res.Describe(verb, reuseName(opts), time.Now()))
	if opts.DryRun && len(res.Taken) > 0 {
		sentinels = LogDrySentinels(opts.Log, p, cells, res)
	}
	return len(res.Taken), sentinels, nil
}

// reuseName is how the log names where --reuse takes from.
func reuseName(opts Options) string {
	if opts.Reuse == reuse.FromCache {
		return "the machine's cache (" + opts.Cache + ")"
	}
	return opts.Reuse
}
