package cache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"

	"github.com/opencontainers/go-digest"
)

// EnvDir names the environment variable that sets the cache's folder.
const EnvDir = "SKILLGATE_CACHE"

// Off is the folder name that keeps no cache.
const Off = "off"

// Folders and files of the cache (see the package's doc).
const (
	DirTrees = "trees"
	DirLocks = "locks"
	DirTmp   = "tmp"
)

// DefaultDir is the cache's folder when none is given: $SKILLGATE_CACHE,
// else skillgate/ in the user's cache folder; "" when there is none (no
// home) or the variable says off.
func DefaultDir() string {
	if d := os.Getenv(EnvDir); d != "" {
		if d == Off {
			return ""
		}
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "skillgate")
}

// Cache is the machine's store of tree snapshots, under Dir.
type Cache struct {
	Dir string
	// Log hears of snapshots refused and made again.
	Log io.Writer
}

// Open opens (making it if needed) the cache under dir.
func Open(dir string) (*Cache, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open cache: %w", err)
	}
	for _, d := range []string{DirTrees, DirLocks, DirTmp} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("open cache: %w", err)
		}
	}
	return &Cache{Dir: dir, Log: io.Discard}, nil
}

// Entry describes one snapshot of the cache (trees/HEX.json).
type Entry struct {
	Tree  digest.Digest `json:"tree"`
	Files int           `json:"files"`
	Bytes int64         `json:"bytes"`
	Made  time.Time     `json:"made"`
	// Used is the last time a run folder took it (the file's modification
	// time, not stored in it).
	Used time.Time `json:"-"`
}

// Holds says whether the cache has a snapshot of the tree with that digest
// (to be verified as it is placed).
func (c *Cache) Holds(tree digest.Digest) bool {
	_, err := os.Stat(c.entryFile(tree))
	return err == nil
}

// TreeDir is the folder of the snapshot of the tree with that digest.
func (c *Cache) TreeDir(tree digest.Digest) string {
	return filepath.Join(c.Dir, DirTrees, tree.Encoded())
}

func (c *Cache) entryFile(tree digest.Digest) string {
	return c.TreeDir(tree) + ".json"
}

// PlaceTree fills dst with the tree want from the cache's snapshot,
// verified file by file as it is linked; it makes the snapshot from the
// live folder src first when the cache lacks it, and makes it again when
// the one it holds fails verification (store.SharedTrees).
func (c *Cache) PlaceTree(what, src string, want plan.Tree, dst string) (map[string]store.KnownFile, error) {
	entry := c.TreeDir(want.Digest)
	unlock, err := c.lock(want.Digest, syscall.LOCK_SH)
	if err != nil {
		return nil, err
	}
	var refused error
	if _, err := os.Stat(entry); err == nil {
		var known map[string]store.KnownFile
		if known, refused = c.link(entry, dst, want); refused == nil {
			unlock()
			c.touch(want.Digest)
			return known, nil
		}
		if err := clearDir(dst); err != nil {
			unlock()
			return nil, err
		}
	}
	unlock()

	if unlock, err = c.lock(want.Digest, syscall.LOCK_EX); err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := os.Stat(entry); err == nil {
		// Made (or made again) by another process while this one waited;
		// what one placed and found damaged is checked again before it is
		// removed.
		known, err := c.link(entry, dst, want)
		if err == nil {
			c.touch(want.Digest)
			return known, nil
		}
		refused = err
		if err := clearDir(dst); err != nil {
			return nil, err
		}
		fmt.Fprintf(c.Log, "cache: refused the snapshot of %s in %s: %v; making it again from %s\n", what, entry, refused, src)
		if err := c.remove(want.Digest); err != nil {
			return nil, err
		}
	}
	if err := c.make(src, want); err != nil {
		return nil, fmt.Errorf("cache %s: %w", what, err)
	}
	known, err := c.link(entry, dst, want)
	if err != nil {
		return nil, fmt.Errorf("place %s from the cache: %w", what, err)
	}
	return known, nil
}

// make copies the live folder src into the cache as the snapshot of want,
// verifying every file, and renames it into place. The caller holds the
// tree's lock exclusively.
func (c *Cache) make(src string, want plan.Tree) error {
	tmp, err := os.MkdirTemp(filepath.Join(c.Dir, DirTmp), "tree-")
	if err != nil {
		return err
	}
	defer removeAll(tmp) // gone once renamed into place
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := store.CopyTree(src, tmp, want); err != nil {
		return err
	}
	known := statsOf(tmp, want)
	e := Entry{Tree: want.Digest, Files: len(want.Files), Bytes: want.Bytes, Made: time.Now().UTC()}
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.Dir, DirTmp, filepath.Base(tmp)+".json"), b, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, c.TreeDir(want.Digest)); err != nil {
		if _, serr := os.Stat(c.TreeDir(want.Digest)); serr == nil {
			return nil // made meanwhile; verified as it is placed
		}
		return err
	}
	c.record(want.Digest, known)
	return os.Rename(filepath.Join(c.Dir, DirTmp, filepath.Base(tmp)+".json"), c.entryFile(want.Digest))
}

// link places the snapshot entry of want at dst (store.LinkTreeKnown),
// trusting the files whose stats are still the ones its stat record holds,
// and records their stats once linked, which it returns. The caller
// holds the tree's lock.
func (c *Cache) link(entry, dst string, want plan.Tree) (map[string]store.KnownFile, error) {
	known, err := store.LinkTreeKnown(entry, dst, want, c.known(want.Digest))
	if err != nil {
		return nil, err
	}
	c.record(want.Digest, known)
	return known, nil
}

// remove takes the snapshot of tree out of the cache: renamed away first,
// so no reader finds half of it. The caller holds the tree's lock
// exclusively.
func (c *Cache) remove(tree digest.Digest) error {
	if err := c.renameAway(c.TreeDir(tree)); err != nil {
		return fmt.Errorf("remove cached tree %s: %w", tree.Encoded(), err)
	}
	os.Remove(c.entryFile(tree))
	os.Remove(c.statFile(tree))
	return nil
}

// renameAway renames dir into tmp/ and removes it there, so no reader
// finds half of it; a dir already gone is no error.
func (c *Cache) renameAway(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := os.MkdirAll(filepath.Join(c.Dir, DirTmp), 0o755); err != nil {
		return err
	}
	gone, err := os.MkdirTemp(filepath.Join(c.Dir, DirTmp), "gone-")
	if err != nil {
		return err
	}
	if err := os.Rename(dir, filepath.Join(gone, "x")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return removeAll(gone)
}

// touch records a use of the snapshot of tree, for gc.
func (c *Cache) touch(tree digest.Digest) {
	now := time.Now()
	os.Chtimes(c.entryFile(tree), now, now)
}

// lock takes the lock of a tree's snapshot (syscall.LOCK_SH or LOCK_EX),
// waiting for it; the kernel drops it if the process dies.
func (c *Cache) lock(tree digest.Digest, how int) (func(), error) {
	return flock(filepath.Join(c.Dir, DirLocks, tree.Encoded()+".lock"), how)
}

func flock(path string, how int) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock cache: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock cache: %w", err)
	}
	return func() { f.Close() }, nil
}

// clearDir empties dir, a run folder's half-placed snapshot.
func clearDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := removeAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// removeAll removes path, making its folders writable first: a damaged
// snapshot may hold a folder without write permission.
func removeAll(path string) error {
	filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	return os.RemoveAll(path)
}
