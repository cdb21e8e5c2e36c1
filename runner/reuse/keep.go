package reuse

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/skillgate/skillgate/runner/cache"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/opencontainers/go-digest"
)

// Keep puts into the machine's cache in cacheDir the valid rollouts st
// holds under keys (run --keep-rollouts), so a later run in any folder
// takes them with --reuse cache. Each is kept as the run folder holds it
// (the sealed record, its files, its exchange log and bodies), copied into
// the cache's tmp/, verified there, and renamed into place under the key's
// exclusive lock: a crash leaves only tmp/, and two processes keeping one
// key keep one. A key the cache already holds, verified and no older, is
// left as it is; a damaged one is replaced. What cannot be kept is said on
// log and the run goes on.
func Keep(cacheDir string, st *store.Store, keys []digest.Digest, log io.Writer) (int, error) {
	c, err := cache.Open(cacheDir)
	if err != nil {
		return 0, fmt.Errorf("keep rollouts: %w", err)
	}
	kept := 0
	for _, key := range keys {
		r, ok, err := st.Rollout(key)
		if err != nil {
			fmt.Fprintf(log, "cache: rollout %s not kept: %v\n", key.Encoded()[:12], err)
			continue
		}
		if !ok || r.Status == store.StatusInvalid {
			continue // an invalid rollout is never kept
		}
		done, err := keepOne(c, st, r)
		if err != nil {
			fmt.Fprintf(log, "cache: rollout %s (%s) not kept: %v\n", key.Encoded()[:12], r.Cell, err)
			continue
		}
		if done {
			kept++
		}
	}
	return kept, nil
}

// keepOne keeps r; false when the cache already held it.
func keepOne(c *cache.Cache, st *store.Store, r *store.Rollout) (bool, error) {
	unlock, err := c.LockRollout(r.Key, true)
	if err != nil {
		return false, err
	}
	defer unlock()
	none := func(*store.Rollout) error { return nil }
	if old, err := check(c.RolloutDir(r.Key), r.Key, none); err == nil && !old.StartedAt.Before(r.StartedAt) {
		c.TouchRollout(r.Key)
		return false, nil
	}
	staged, err := c.StageRollout()
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(staged) // nothing there once renamed into place
	into := &store.Store{Dir: staged}
	for _, d := range []string{store.DirTmp, store.DirRollouts} {
		if err := os.MkdirAll(filepath.Join(staged, d), 0o755); err != nil {
			return false, err
		}
	}
	if err := copyExchanges(st.Dir, into, r); err != nil {
		return false, err
	}
	if err := copyRollout(st.RolloutDir(r.Key), into, r.Key); err != nil {
		return false, err
	}
	if err := os.RemoveAll(filepath.Join(staged, store.DirTmp)); err != nil {
		return false, err
	}
	if _, err := check(staged, r.Key, none); err != nil {
		return false, fmt.Errorf("the copy fails verification: %w", err)
	}
	e := cache.RolloutEntry{Key: r.Key, Cell: r.Cell, RanAt: r.StartedAt, Made: time.Now().UTC()}
	if err := c.CommitRollout(staged, e); err != nil {
		return false, err
	}
	return true, nil
}
