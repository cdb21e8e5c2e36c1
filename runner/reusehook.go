package runner

import (
	"fmt"
	"io"
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
	res, sentinels, err := ReuseFrom(opts.Log, reuse.Source{From: opts.Reuse, Cache: opts.Cache}, st, p, cells, opts.DryRun)
	if err != nil {
		return 0, 0, err
	}
	return len(res.Taken), sentinels, nil
}

// ReuseFrom takes into st the rollouts src holds under the keys of cells
// (reuse.TakeFrom), and says on w what it refused, how many it took, from
// where and what they cost when they ran. With dryRun it writes nothing
// (st may be nil: a fresh folder), and says the drift sentinels that would
// run before the taken cells count, and how many.
func ReuseFrom(w io.Writer, src reuse.Source, st *store.Store, p *plan.Plan, cells []plan.Cell, dryRun bool) (res *reuse.Result, sentinels int, err error) {
	res, err = reuse.TakeFrom(src, st, p, cells, dryRun)
	if err != nil {
		return nil, 0, err
	}
	for _, r := range res.Refused {
		fmt.Fprintf(w, "reuse: not taken, failed verification: %s\n", r)
	}
	verb := "reused"
	if dryRun {
		verb = "would reuse"
	}
	fmt.Fprintln(w, res.Describe(verb, src.Name(), time.Now()))
	if dryRun && len(res.Taken) > 0 {
		sentinels = logDrySentinels(w, p, cells, res)
	}
	return res, sentinels, nil
}
