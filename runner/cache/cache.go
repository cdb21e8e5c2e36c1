package cache

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
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
	var known map[string]store.KnownFile
	err := c.withSnapshot("place", what, src, want, func(entry string) (err error) {
		known, err = c.link(entry, dst, want)
		return err
	}, func() error { return clearDir(dst) })
	return known, err
}

// ReferTree verifies the cache's snapshot of want file by file in place
// (its stat record trusted for each file whose stat is exactly the one
// recorded, the file hashed otherwise), making it from the live folder src
// first when the cache lacks it or the one it holds fails verification,
// and links the snapshot's lease at ref: the run folder's reference,
// which keeps the snapshot from gc while the folder lives
// (store.TreeReferrer).
func (c *Cache) ReferTree(what, src string, want plan.Tree, ref string) (string, error) {
	entry := c.TreeDir(want.Digest)
	err := c.withSnapshot("refer to", what, src, want, func(entry string) error {
		before := c.known(want.Digest)
		known, err := store.VerifyTreeKnown(entry, want, before)
		if err != nil {
			return err
		}
		if !maps.Equal(known, before) {
			c.record(want.Digest, known)
		}
		lease, err := c.lease(want.Digest)
		if err == nil {
			err = os.Link(lease, ref)
		}
		if err != nil && store.NoRefer(err) {
			err = fmt.Errorf("%w: %v", store.ErrNoRefer, err)
		}
		if err != nil {
			return kept{err}
		}
		return nil
	}, func() error { return nil })
	if err != nil {
		return "", err
	}
	return entry, nil
}

// kept is an error of using a snapshot that says nothing against the
// snapshot: it is returned as it is, the snapshot kept.
type kept struct{ error }

func (k kept) Unwrap() error { return k.error }

// withSnapshot uses the cache's snapshot of want (use verifies it as it
// places or refers to it): a snapshot use refuses is made again from the
// live folder src, once undo has cleared what use left, and used again;
// the cache makes one it lacks first. verb and what name the use in
// errors.
func (c *Cache) withSnapshot(verb, what, src string, want plan.Tree, use func(entry string) error, undo func() error) error {
	entry := c.TreeDir(want.Digest)
	try := func() (ok bool, err error) {
		err = use(entry)
		var k kept
		if err == nil || errors.As(err, &k) {
			if err == nil {
				c.touch(want.Digest)
			}
			return true, err
		}
		if uerr := undo(); uerr != nil {
			return true, uerr
		}
		return false, err
	}
	unlock, err := c.lock(want.Digest, syscall.LOCK_SH)
	if err != nil {
		return err
	}
	if _, err := os.Stat(entry); err == nil {
		if done, err := try(); done {
			unlock()
			return err
		}
	}
	unlock()

	if unlock, err = c.lock(want.Digest, syscall.LOCK_EX); err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(entry); err == nil {
		// Made (or made again) by another process while this one waited;
		// what one used and found damaged is checked again before it is
		// removed.
		done, err := try()
		if done {
			return err
		}
		fmt.Fprintf(c.Log, "cache: refused the snapshot of %s in %s: %v; making it again from %s\n", what, entry, err, src)
		if err := c.remove(want.Digest); err != nil {
			return err
		}
	}
	if err := c.make(src, want); err != nil {
		return fmt.Errorf("cache %s: %w", what, err)
	}
	if _, err := try(); err != nil {
		return fmt.Errorf("%s %s from the cache: %w", verb, what, err)
	}
	return nil
}

// lease is the lease file of the snapshot of tree, made when missing (or
// made again when damaged): run folders refer to the snapshot by hard
// links to it, so its link count says whether any does. The caller holds
// the tree's lock.
func (c *Cache) lease(tree digest.Digest) (string, error) {
	lease := store.TreeLease(c.TreeDir(tree))
	want := store.LeaseBytes(tree)
	if b, err := os.ReadFile(lease); err == nil && bytes.Equal(b, want) {
		if fi, err := os.Lstat(lease); err == nil && fi.Mode().IsRegular() {
			return lease, nil
		}
	}
	if err := os.MkdirAll(filepath.Join(c.Dir, DirTmp), 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(filepath.Join(c.Dir, DirTmp), "lease-")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(want)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o444)
	}
	if err != nil {
		return "", err
	}
	// Never over a good lease another process linked meanwhile: the run
	// folders linking it would lose the snapshot.
	if err := os.Link(f.Name(), lease); err == nil || !errors.Is(err, fs.ErrExist) {
		return lease, err
	}
	if b, err := os.ReadFile(lease); err == nil && bytes.Equal(b, want) {
		return lease, nil
	}
	return lease, os.Rename(f.Name(), lease) // a damaged one
}

// Referred says whether a run folder refers to the snapshot of tree: its
// lease has another link than its own.
func (c *Cache) Referred(tree digest.Digest) bool {
	fi, err := os.Lstat(store.TreeLease(c.TreeDir(tree)))
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink > 1
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
