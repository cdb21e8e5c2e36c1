package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"
)

// liveTree writes a live folder of n small files (one executable, one
// symlink) and returns it with its tree.
func liveTree(t *testing.T, n int) (string, plan.Tree) {
	t.Helper()
	dir := t.TempDir()
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i%10), fmt.Sprintf("f%04d.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("file %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("run.sh", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	tree, err := plan.HashTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, tree
}

// place pins tree into a fresh run folder's store through the cache and
// returns the run folder's snapshot.
func place(t *testing.T, c *Cache, src string, tree plan.Tree) string {
	t.Helper()
	st, err := store.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st.Shared = c
	dir, err := st.PinTree("fixture fx", src, tree)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.VerifyTree(dir, tree); err != nil {
		t.Fatalf("the run folder's snapshot: %v", err)
	}
	return dir
}

func TestPlaceTreeLinksOneSnapshot(t *testing.T) {
	c, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	src, tree := liveTree(t, 50)
	a := place(t, c, src, tree)
	b := place(t, c, src, tree)
	ia, _ := os.Stat(filepath.Join(a, "d03", "f0003.txt"))
	ib, _ := os.Stat(filepath.Join(b, "d03", "f0003.txt"))
	if !os.SameFile(ia, ib) {
		t.Errorf("two run folders hold two copies of a cached file, not links to one")
	}
	if ents, _ := c.Entries(); len(ents) != 1 || ents[0].Files != len(tree.Files) || ents[0].Bytes != tree.Bytes {
		t.Errorf("entries %+v, want one of %d files", ents, len(tree.Files))
	}
}

// TestPlaceTreeRefusesDamaged: a cached snapshot damaged on disk (a byte
// changed with its size and time kept, a file added, a file made writable)
// is refused, removed and made again from the live folder; the run folder
// gets the plan's bytes, never the damaged ones.
func TestPlaceTreeRefusesDamaged(t *testing.T) {
	src, tree := liveTree(t, 20)
	for name, damage := range map[string]func(entry string) error{
		"byte changed": func(entry string) error {
			f := filepath.Join(entry, "d01", "f0001.txt")
			info, _ := os.Stat(f)
			os.Chmod(f, 0o644)
			if err := os.WriteFile(f, []byte("file X\n"), 0o644); err != nil {
				return err
			}
			os.Chmod(f, 0o444)
			return os.Chtimes(f, info.ModTime(), info.ModTime())
		},
		"file added": func(entry string) error {
			return os.WriteFile(filepath.Join(entry, "extra.txt"), []byte("x"), 0o444)
		},
		"made writable": func(entry string) error {
			return os.Chmod(filepath.Join(entry, "d02", "f0002.txt"), 0o644)
		},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			place(t, c, src, tree)
			if err := damage(c.TreeDir(tree.Digest)); err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			c.Log = &log
			place(t, c, src, tree) // verifies the run folder's snapshot
			if !strings.Contains(log.String(), "cache: refused the snapshot of fixture fx") {
				t.Errorf("log %q does not say the snapshot was refused", log.String())
			}
			if err := store.VerifyTree(c.TreeDir(tree.Digest), tree); err != nil {
				t.Errorf("the snapshot made again: %v", err)
			}
			log.Reset()
			place(t, c, src, tree)
			if log.Len() != 0 {
				t.Errorf("the snapshot made again was refused: %s", log.String())
			}
		})
	}
}

// TestPlaceTreeTwoProcesses: two processes pin the same tree through one
// cache at once; each gets a verified snapshot, the cache makes it once.
func TestPlaceTreeTwoProcesses(t *testing.T) {
	if dir := os.Getenv("CACHE_TEST_PLACE"); dir != "" {
		src := os.Getenv("CACHE_TEST_SRC")
		tree, err := plan.HashTree(src)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		place(t, c, src, tree)
		return
	}
	src, tree := liveTree(t, 3000)
	dir := t.TempDir()
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for i := 0; i < 2; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPlaceTreeTwoProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), "CACHE_TEST_PLACE="+dir, "CACHE_TEST_SRC="+src)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, &out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, outs[i])
		}
	}
	c, _ := Open(dir)
	if ents, _ := c.Entries(); len(ents) != 1 {
		t.Fatalf("%d snapshots in the cache, want 1", len(ents))
	}
	if err := store.VerifyTree(c.TreeDir(tree.Digest), tree); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, DirTmp)); len(left) != 0 {
		t.Errorf("tmp/ holds %d entries after both processes", len(left))
	}
}

func TestGC(t *testing.T) {
	c, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srcA, a := liveTree(t, 5)
	srcB, b := liveTree(t, 6)
	kept := place(t, c, srcA, a)
	place(t, c, srcB, b)
	old := time.Now().Add(-48 * time.Hour)
	os.Chtimes(c.entryFile(a.Digest), old, old)

	res, err := c.GC(0, 24*time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if res.Removed != 1 || res.Kept != 1 {
		t.Fatalf("gc by age: %+v, want one removed, one kept", res)
	}
	if _, err := os.Stat(c.TreeDir(a.Digest)); err == nil {
		t.Errorf("the snapshot unused for 48h is still there")
	}
	if err := store.VerifyTree(kept, a); err != nil {
		t.Errorf("a run folder lost its snapshot to gc: %v", err)
	}
	if res, _ = c.GC(1, 0, time.Now()); res.Removed != 1 || res.Kept != 0 {
		t.Errorf("gc by size: %+v, want the last one removed", res)
	}
	place(t, c, srcA, a) // made again after gc
}

// TestGCIndexes: a live folder's stat index unused for longer than the
// age bound is removed, a recent one kept; the next hash of the folder
// is whole and right without it.
func TestGCIndexes(t *testing.T) {
	c, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srcA, a := liveTree(t, 5)
	srcB, _ := liveTree(t, 6)
	for _, src := range []string{srcA, srcB} {
		if _, err := c.HashLive(src); err != nil {
			t.Fatal(err)
		}
	}
	ents, _ := os.ReadDir(filepath.Join(c.Dir, DirIndex))
	if len(ents) != 2 {
		t.Fatalf("%d indexes after hashing two folders, want 2", len(ents))
	}
	absA, _ := filepath.Abs(srcA)
	sum := sha256.Sum256([]byte(absA))
	indexA := filepath.Join(c.Dir, DirIndex, hex.EncodeToString(sum[:]))
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(indexA, old, old); err != nil {
		t.Fatal(err)
	}
	res, err := c.GC(0, 24*time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if res.RemovedIndexes != 1 || res.KeptIndexes != 1 {
		t.Fatalf("gc by age: %+v, want one index removed, one kept", res)
	}
	if _, err := os.Stat(indexA); err == nil {
		t.Errorf("the index unused for 48h is still there")
	}
	got, err := c.HashLive(srcA)
	if err != nil || got.Digest != a.Digest {
		t.Errorf("hash without its index: %v %v, want %v", got.Digest, err, a.Digest)
	}
}
