package runner

import (
	"fmt"

	"github.com/skillgate/skillgate/runner/reuse"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/opencontainers/go-digest"
)

// keepRollouts puts the valid rollouts the run made into the machine's
// cache (opts.KeepRollouts, runner/reuse.Keep), for run --reuse cache in
// any folder; a rollout made invalid after its cell (its inputs changed)
// is not kept.
func keepRollouts(st *store.Store, done []ranCell, opts Options) error {
	if !opts.KeepRollouts || opts.Cache == "" || len(done) == 0 {
		return nil
	}
	keys := make([]digest.Digest, 0, len(done))
	for _, rc := range done {
		keys = append(keys, rc.cell.Rollout)
	}
	n, err := reuse.Keep(opts.Cache, st, keys, opts.Log)
	if err != nil {
		return err
	}
	if n > 0 {
		fmt.Fprintf(opts.Log, "kept %d rollouts in the machine's cache (%s) for run --reuse cache\n", n, opts.Cache)
	}
	return nil
}
