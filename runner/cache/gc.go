package cache

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/opencontainers/go-digest"
)

// Entries lists the cache's snapshots, least recently used first.
func (c *Cache) Entries() ([]Entry, error) {
	ents, err := os.ReadDir(filepath.Join(c.Dir, DirTrees))
	if err != nil {
		return nil, fmt.Errorf("list cache: %w", err)
	}
	var out []Entry
	for _, d := range ents {
		if !d.IsDir() {
			continue
		}
		tree := digest.NewDigestFromEncoded(digest.SHA256, d.Name())
		if tree.Validate() != nil {
			continue
		}
		e := Entry{}
		e.Used = readEntry(c.entryFile(tree), d, &e)
		e.Tree = tree
		if e.Bytes == 0 {
			e.Files, e.Bytes = sizeOf(c.TreeDir(tree))
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return a.Used.Compare(b.Used) })
	return out, nil
}

// readEntry reads the record file into v (a damaged one is left out: the
// entry is then sized from its folder) and says when the entry was last
// used: the record's modification time, else its folder's (d).
func readEntry(file string, d fs.DirEntry, v any) time.Time {
	if b, err := os.ReadFile(file); err == nil {
		json.Unmarshal(b, v)
	}
	info, err := os.Stat(file)
	if err != nil {
		info, err = d.Info()
	}
	if err != nil {
		return time.Time{}
	}
	return info.ModTime()
}

func sizeOf(dir string) (files int, bytes int64) {
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			files++
			bytes += info.Size()
		}
		return nil
	})
	return files, bytes
}

// Collected is what GC did.
type Collected struct {
	Removed      int   `json:"removed"`
	RemovedBytes int64 `json:"removedBytes"`
	Kept         int   `json:"kept"`
	KeptBytes    int64 `json:"keptBytes"`
	// Busy counts snapshots GC would have removed that a run was using.
	Busy int `json:"busy"`
	// RemovedRollouts and KeptRollouts count the kept rollouts among
	// Removed and Kept.
	RemovedRollouts int `json:"removedRollouts"`
	KeptRollouts    int `json:"keptRollouts"`
	// RemovedIndexes and KeptIndexes count the live folders' stat indexes
	// among Removed and Kept.
	RemovedIndexes int `json:"removedIndexes"`
	KeptIndexes    int `json:"keptIndexes"`
}

// gcItem is a snapshot or a kept rollout as GC weighs it.
type gcItem struct {
	rollout bool
	index   bool // a live folder's stat index
	bytes   int64
	used    time.Time
	lock    func() (func(), error)
	remove  func() error
	unlink  string // its lock file, removed with it
}

// GC removes the snapshots, kept rollouts and live folders' stat indexes not used for longer than
// maxAge (0: no bound), then the least recently used ones until the rest
// hold at most maxBytes (0: no bound), and what interrupted processes left
// in tmp/. One a run is using is skipped (its lock is held), never removed
// under it; run folders keep their own copies of what is removed.
func (c *Cache) GC(maxBytes int64, maxAge time.Duration, now time.Time) (Collected, error) {
	var res Collected
	entries, err := c.Entries()
	if err != nil {
		return res, err
	}
	items, err := c.rolloutItems()
	if err != nil {
		return res, err
	}
	items = append(items, c.indexItems()...)
	for _, e := range entries {
		tree := e.Tree
		items = append(items, gcItem{bytes: e.Bytes, used: e.Used,
			lock:   func() (func(), error) { return c.lock(tree, syscall.LOCK_EX|syscall.LOCK_NB) },
			remove: func() error { return c.remove(tree) },
			unlink: filepath.Join(c.Dir, DirLocks, tree.Encoded()+".lock"),
		})
	}
	slices.SortStableFunc(items, func(a, b gcItem) int { return a.used.Compare(b.used) })
	var total int64
	for _, e := range items {
		total += e.bytes
	}
	keep := func(e gcItem) {
		res.Kept++
		res.KeptBytes += e.bytes
		switch {
		case e.rollout:
			res.KeptRollouts++
		case e.index:
			res.KeptIndexes++
		}
	}
	for _, e := range items {
		old := maxAge > 0 && now.Sub(e.used) > maxAge
		big := maxBytes > 0 && total > maxBytes
		if !old && !big {
			keep(e)
			continue
		}
		unlock, err := e.lock()
		if err != nil {
			res.Busy++
			keep(e)
			continue
		}
		err = e.remove()
		if err == nil && e.unlink != "" {
			os.Remove(e.unlink)
		}
		unlock()
		if err != nil {
			return res, fmt.Errorf("collect cache: %w", err)
		}
		res.Removed++
		res.RemovedBytes += e.bytes
		switch {
		case e.rollout:
			res.RemovedRollouts++
		case e.index:
			res.RemovedIndexes++
		}
		total -= e.bytes
	}
	c.sweepTmp(now)
	return res, nil
}

// sweepTmp removes what processes left in tmp/ over an hour ago: a
// snapshot being made is younger, or its maker holds the tree's lock.
func (c *Cache) sweepTmp(now time.Time) {
	ents, _ := os.ReadDir(filepath.Join(c.Dir, DirTmp))
	for _, d := range ents {
		info, err := d.Info()
		if err != nil || now.Sub(info.ModTime()) < time.Hour {
			continue
		}
		if strings.HasPrefix(d.Name(), "tree-") || strings.HasPrefix(d.Name(), "gone-") || strings.HasPrefix(d.Name(), "rollout-") || strings.HasPrefix(d.Name(), "stat-") {
			removeAll(filepath.Join(c.Dir, DirTmp, d.Name()))
		}
	}
}
