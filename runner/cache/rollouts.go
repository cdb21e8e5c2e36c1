package cache

// The machine's store of rollouts (run --keep-rollouts, run --reuse
// cache): each kept rollout is a folder laid out as a run folder holding
// that rollout alone, so runner/reuse reads and verifies it exactly as it
// reads a run folder.
//
//	rollouts/HEX/                   by rollout key
//	rollouts/HEX/entry.json         what it holds; modified at each use (gc)
//	rollouts/HEX/store/rollouts/HEX the sealed record, answer, transcript, files
//	rollouts/HEX/store/exchanges/   its exchange log and every body it names
//	locks/rollout-HEX.lock          shared while it is read, exclusive while
//	                                it is made, replaced or removed
//
// What this file does is keep the layout and the locks; runner/reuse
// copies and verifies what goes in and what comes out.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/opencontainers/go-digest"
)

// DirRollouts holds the kept rollouts, by key.
const DirRollouts = "rollouts"

// FileRolloutEntry describes a kept rollout, inside its folder.
const FileRolloutEntry = "entry.json"

// RolloutEntry describes one kept rollout (rollouts/HEX/entry.json).
type RolloutEntry struct {
	Key  digest.Digest `json:"key"`
	Cell string        `json:"cell"`
	// RanAt is when its session started; Made when it was kept.
	RanAt time.Time `json:"ranAt"`
	Made  time.Time `json:"made"`
	Bytes int64     `json:"bytes"`
	// Used is the last time a run took it or kept it again (the entry
	// file's modification time).
	Used time.Time `json:"-"`
}

// RolloutDir is the folder of the kept rollout of that key: a run folder
// holding it alone.
func (c *Cache) RolloutDir(key digest.Digest) string {
	return filepath.Join(c.Dir, DirRollouts, key.Encoded())
}

// LockRollout takes the lock of a kept rollout, shared (reading it) or
// exclusive (making, replacing or removing it), waiting for it.
func (c *Cache) LockRollout(key digest.Digest, exclusive bool) (func(), error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	return c.lockRollout(key, how)
}

func (c *Cache) lockRollout(key digest.Digest, how int) (func(), error) {
	if err := os.MkdirAll(filepath.Join(c.Dir, DirLocks), 0o755); err != nil {
		return nil, fmt.Errorf("lock cache: %w", err)
	}
	return flock(c.rolloutLock(key), how)
}

func (c *Cache) rolloutLock(key digest.Digest) string {
	return filepath.Join(c.Dir, DirLocks, "rollout-"+key.Encoded()+".lock")
}

// TouchRollout records a use of the kept rollout, for gc.
func (c *Cache) TouchRollout(key digest.Digest) {
	now := time.Now()
	os.Chtimes(filepath.Join(c.RolloutDir(key), FileRolloutEntry), now, now)
}

// StageRollout makes a folder in tmp/ to lay a rollout out in before
// CommitRollout renames it into place.
func (c *Cache) StageRollout() (string, error) {
	if err := os.MkdirAll(filepath.Join(c.Dir, DirTmp), 0o755); err != nil {
		return "", fmt.Errorf("stage kept rollout: %w", err)
	}
	d, err := os.MkdirTemp(filepath.Join(c.Dir, DirTmp), "rollout-")
	if err != nil {
		return "", fmt.Errorf("stage kept rollout: %w", err)
	}
	return d, os.Chmod(d, 0o755)
}

// CommitRollout writes e, sized from the staged folder, into it and
// renames it into place, replacing what the cache held under the key. The
// caller holds the key's lock exclusively.
func (c *Cache) CommitRollout(staged string, e RolloutEntry) error {
	_, e.Bytes = sizeOf(staged)
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return fmt.Errorf("keep rollout %s: %w", e.Cell, err)
	}
	if err := os.WriteFile(filepath.Join(staged, FileRolloutEntry), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("keep rollout %s: %w", e.Cell, err)
	}
	if err := c.RemoveRollout(e.Key); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(c.Dir, DirRollouts), 0o755); err != nil {
		return fmt.Errorf("keep rollout %s: %w", e.Cell, err)
	}
	if err := os.Rename(staged, c.RolloutDir(e.Key)); err != nil {
		return fmt.Errorf("keep rollout %s: %w", e.Cell, err)
	}
	return nil
}

// RemoveRollout takes a kept rollout out of the cache: renamed away first,
// so no reader finds half of it. The caller holds the key's lock
// exclusively.
func (c *Cache) RemoveRollout(key digest.Digest) error {
	if err := c.renameAway(c.RolloutDir(key)); err != nil {
		return fmt.Errorf("remove kept rollout %s: %w", key.Encoded()[:12], err)
	}
	return nil
}

// RolloutEntries lists the kept rollouts, least recently used first.
func (c *Cache) RolloutEntries() ([]RolloutEntry, error) {
	ents, err := os.ReadDir(filepath.Join(c.Dir, DirRollouts))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list cache: %w", err)
	}
	var out []RolloutEntry
	for _, d := range ents {
		key := digest.NewDigestFromEncoded(digest.SHA256, d.Name())
		if !d.IsDir() || key.Validate() != nil {
			continue
		}
		e := RolloutEntry{}
		e.Used = readEntry(filepath.Join(c.RolloutDir(key), FileRolloutEntry), d, &e)
		e.Key = key
		if e.Bytes == 0 {
			_, e.Bytes = sizeOf(c.RolloutDir(key))
		}
		out = append(out, e)
	}
	return out, nil
}

// rolloutItems are the kept rollouts as gc weighs them.
func (c *Cache) rolloutItems() ([]gcItem, error) {
	ents, err := c.RolloutEntries()
	if err != nil {
		return nil, err
	}
	items := make([]gcItem, 0, len(ents))
	for _, e := range ents {
		key := e.Key
		items = append(items, gcItem{rollout: true, bytes: e.Bytes, used: e.Used,
			lock:   func() (func(), error) { return c.lockRollout(key, syscall.LOCK_EX|syscall.LOCK_NB) },
			remove: func() error { return c.RemoveRollout(key) },
			unlink: c.rolloutLock(key),
		})
	}
	return items, nil
}
