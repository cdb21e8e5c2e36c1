package reuse

import (
	"fmt"
	"os"
	"time"

	"github.com/skillgate/skillgate/runner/cache"

	"github.com/opencontainers/go-digest"
)

// FromCache is the --reuse source that names the machine's cache: the
// rollouts runs kept there (run --keep-rollouts). A run folder named cache
// is given as ./cache.
const FromCache = "cache"

// Source is where rollouts are taken from.
type Source struct {
	// From is a run folder, a pack, or FromCache.
	From string
	// Cache is the machine's cache folder, for FromCache.
	Cache string
}

// origin is an opened source.
type origin interface {
	// at is the run folder that holds key's rollout, if any; release
	// ends its use.
	at(key digest.Digest) (dir string, release func(), ok bool, err error)
	// refuse says why the record under key is not taken, doing what the
	// source does with a record that fails (the cache removes it).
	// again checks the record once more, under the source's exclusive
	// hold, before it is removed.
	refuse(key digest.Digest, why error, again func(dir string) error) string
	// name is what the ledger says the rollouts came from.
	name() string
	close()
}

// Name is how the log names the source.
func (s Source) Name() string {
	if s.From == FromCache {
		return "the machine's cache (" + s.Cache + ")"
	}
	return s.From
}

func (s Source) open(dryRun bool) (origin, error) {
	if s.From != FromCache {
		dir, done, err := openSource(s.From)
		if err != nil {
			return nil, err
		}
		return &folder{from: s.From, dir: dir, done: done}, nil
	}
	if s.Cache == "" {
		return nil, fmt.Errorf("reuse from the machine's cache: there is none (--cache off, or no cache folder): give --cache DIR")
	}
	if _, err := os.Stat(s.Cache); err != nil {
		return nil, fmt.Errorf("reuse from the machine's cache: %w", err)
	}
	c, err := cache.Open(s.Cache)
	if err != nil {
		return nil, fmt.Errorf("reuse from the machine's cache: %w", err)
	}
	return &cached{c: c, dryRun: dryRun}, nil
}

// folder is a run folder, or a pack unpacked.
type folder struct {
	from, dir string
	done      func()
}

func (f *folder) at(digest.Digest) (string, func(), bool, error) {
	return f.dir, func() {}, true, nil
}

func (f *folder) refuse(_ digest.Digest, why error, _ func(string) error) string {
	return why.Error()
}
func (f *folder) name() string { return f.from }
func (f *folder) close()       { f.done() }

// cached is the machine's cache: each kept rollout a run folder of its
// own, read under its shared lock.
type cached struct {
	c      *cache.Cache
	dryRun bool
}

// CacheName is what the ledger and the log call the machine's cache in
// folder dir.
func CacheName(dir string) string { return "cache:" + dir }

func (k *cached) name() string { return CacheName(k.c.Dir) }
func (k *cached) close()       {}

func (k *cached) at(key digest.Digest) (string, func(), bool, error) {
	dir := k.c.RolloutDir(key)
	if _, err := os.Lstat(dir); err != nil {
		return "", nil, false, nil
	}
	unlock, err := k.c.LockRollout(key, false)
	if err != nil {
		return "", nil, false, err
	}
	if _, err := os.Lstat(dir); err != nil {
		unlock() // removed while this one waited
		return "", nil, false, nil
	}
	return dir, func() {
		unlock()
		if !k.dryRun {
			k.c.TouchRollout(key) // a use, for gc; a dry run uses nothing
		}
	}, true, nil
}

// refuse removes a kept rollout that failed verification, so it is never
// used and is kept again the next time its cell runs with --keep-rollouts;
// one made again meanwhile by another process is checked again first. A
// dry run removes nothing.
func (k *cached) refuse(key digest.Digest, why error, again func(dir string) error) string {
	dir := k.c.RolloutDir(key)
	msg := fmt.Sprintf("%v (kept in %s)", why, dir)
	if k.dryRun {
		return msg
	}
	unlock, err := k.c.LockRollout(key, true)
	if err != nil {
		return fmt.Sprintf("%s; not removed: %v", msg, err)
	}
	defer unlock()
	if again(dir) == nil {
		return msg + "; kept again meanwhile, left in place"
	}
	if err := k.c.RemoveRollout(key); err != nil {
		return fmt.Sprintf("%s; not removed: %v", msg, err)
	}
	return msg + "; removed from the cache"
}

// Describe says what Take did (verb "reused") or would do ("would
// reuse"), from where, how old the rollouts are and what they cost when
// they ran: the line run, run --dry-run and plan --reuse print.
func (r *Result) Describe(verb, from string, now time.Time) string {
	if len(r.Taken) == 0 {
		return fmt.Sprintf("%s no cell from %s: none of its rollouts has a selected cell's key", verb, from)
	}
	oldest, newest := r.Taken[0].RanAt, r.Taken[0].RanAt
	for _, t := range r.Taken {
		if t.RanAt.Before(oldest) {
			oldest = t.RanAt
		}
		if t.RanAt.After(newest) {
			newest = t.RanAt
		}
	}
	saved := fmt.Sprintf("%.0f s of cells", r.SavedSeconds)
	if r.SavedUSD > 0 {
		saved = fmt.Sprintf("$%.4f and %s", r.SavedUSD, saved)
	}
	return fmt.Sprintf("%s %d cells from %s (stored rollouts of the same keys, verified; run %s to %s ago), saving %s as they cost when they ran", verb, len(r.Taken), from, Span(now.Sub(newest)), Span(now.Sub(oldest)), saved)
}
