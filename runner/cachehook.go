package runner

import (
	"github.com/skillgate/skillgate/runner/cache"
	"github.com/skillgate/skillgate/runner/store"
)

// useCache has the run folder's store pin its trees from the machine's
// cache (runner/cache) when the options name one.
func useCache(st *store.Store, opts Options) error {
	if opts.Cache == "" {
		return nil
	}
	c, err := cache.Open(opts.Cache)
	if err != nil {
		return err
	}
	if opts.Log != nil {
		c.Log = opts.Log
	}
	st.Shared = c
	return nil
}
