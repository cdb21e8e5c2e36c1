package cache

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/store"
)

// referFolder is a fresh run folder whose plan has the fixture tree fx,
// with its store open.
func referFolder(t *testing.T, c *Cache, tree plan.Tree) (string, *store.Store) {
	t.Helper()
	out := t.TempDir()
	p := &plan.Plan{Format: plan.PlanFormat, Fixtures: map[string]plan.Tree{"fx": tree}}
	p.Digest = p.ComputeDigest()
	if err := os.WriteFile(filepath.Join(out, store.FilePlan), p.Encode(), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenStore(out)
	if err != nil {
		t.Fatal(err)
	}
	st.Shared = c
	return out, st
}

// TestReferTree: a run folder refers to the cache's snapshot, verified,
// instead of linking each file: it holds a link to the snapshot's lease
// and none of its files, reads the snapshot through TreeDir, and has the
// root and the export of a folder holding the files itself. The cache's
// gc keeps a snapshot a folder refers to, and removes it once no folder
// does. A snapshot damaged since is refused by the next folder to refer
// to it (and made again) and by an export of one that did.
func TestReferTree(t *testing.T) {
	src, tree := liveTree(t, 300)
	c, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c.Log = io.Discard
	out, st := referFolder(t, c, tree)
	dir, err := st.ReferTree("fixture fx", src, tree)
	if err != nil {
		t.Fatal(err)
	}
	if dir != c.TreeDir(tree.Digest) || st.TreeDir(tree.Digest) != dir {
		t.Errorf("ReferTree gave %s, TreeDir %s; the cache's snapshot is %s", dir, st.TreeDir(tree.Digest), c.TreeDir(tree.Digest))
	}
	if _, err := os.Lstat(filepath.Join(out, store.DirTrees, tree.Digest.Encoded())); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the folder holds the snapshot's files: %v", err)
	}
	ref, _ := os.Lstat(filepath.Join(out, store.DirTreeRefs, tree.Digest.Encoded()))
	lease, _ := os.Lstat(store.TreeLease(dir))
	if ref == nil || lease == nil || !os.SameFile(ref, lease) {
		t.Fatalf("the folder's reference is not a link to the snapshot's lease")
	}
	if again, err := (&store.Store{Dir: out}).TreeDir(tree.Digest), error(nil); again != dir || err != nil {
		t.Errorf("another process reads the tree at %s, want %s", again, dir)
	}

	// The same tree copied into a folder of its own.
	copied, cst := referFolder(t, c, tree)
	cst.Shared = nil
	if _, err := cst.PinTree("fixture fx", src, tree); err != nil {
		t.Fatal(err)
	}
	ra, err := store.Root(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := store.Root(copied, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ra != rb {
		t.Errorf("root of the referring folder %s, of the copying one %s", ra, rb)
	}
	ma, err := store.Export(out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := store.Export(copied, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if ma.Digest != mb.Digest || len(ma.Files) != len(mb.Files) {
		t.Errorf("export of the referring folder %s (%d files), of the copying one %s (%d files)", ma.Digest, len(ma.Files), mb.Digest, len(mb.Files))
	}
	var pack bytes.Buffer
	if _, err := store.Export(out, &pack); err != nil {
		t.Fatal(err)
	}
	unpacked := filepath.Join(t.TempDir(), "u")
	if _, err := store.Unpack(&pack, unpacked); err != nil {
		t.Fatal(err)
	}
	if err := store.VerifyTree(filepath.Join(unpacked, store.DirTrees, tree.Digest.Encoded()), tree); err != nil {
		t.Errorf("the unpacked export: %v", err)
	}
	if ru, err := store.Root(unpacked, nil); err != nil || ru != ra {
		t.Errorf("root of the unpacked export %s (%v), of the folder %s", ru, err, ra)
	}

	// gc keeps what a folder refers to, whatever its bounds.
	res, err := c.GC(1, time.Nanosecond, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if res.Referred != 1 || res.Removed != 0 {
		t.Errorf("gc with a folder referring to the snapshot: %+v", res)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("gc removed a snapshot a folder refers to: %v", err)
	}

	// Damaged: a byte changed, its times set back.
	f := filepath.Join(dir, "d03", "f0003.txt")
	info, _ := os.Stat(f)
	os.Chmod(f, 0o644)
	if err := os.WriteFile(f, []byte("fil3 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(f, 0o444)
	os.Chtimes(f, info.ModTime(), info.ModTime())
	if _, err := store.Export(out, io.Discard); err == nil || !strings.Contains(err.Error(), "d03/f0003.txt: digest") {
		t.Errorf("export over a damaged snapshot: %v", err)
	}
	var log bytes.Buffer
	c.Log = &log
	next, nst := referFolder(t, c, tree)
	if _, err := nst.ReferTree("fixture fx", src, tree); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "cache: refused the snapshot of fixture fx") {
		t.Errorf("log %q does not say the damaged snapshot was refused", log.String())
	}
	if err := store.VerifyTree(dir, tree); err != nil {
		t.Errorf("the snapshot made again: %v", err)
	}
	// Made again under the same lease: the first folder's reference holds.
	if _, err := store.Export(out, io.Discard); err != nil {
		t.Errorf("export after the snapshot was made again: %v", err)
	}

	// The folder's record of where the snapshot is, lost (a copy from
	// another machine): an error that says so, never a tree missing.
	os.RemoveAll(filepath.Join(next, store.DirTreeCache))
	if _, err := store.Export(next, io.Discard); err == nil || !strings.Contains(err.Error(), "does not record where") {
		t.Errorf("export of a folder that lost where its snapshot is: %v", err)
	}

	// No folder refers to it any more: gc removes it, and its lease.
	for _, o := range []string{out, next} {
		if err := os.RemoveAll(o); err != nil {
			t.Fatal(err)
		}
	}
	if res, err = c.GC(1, time.Nanosecond, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if res.Referred != 0 || res.Removed != 1 {
		t.Errorf("gc once no folder refers to the snapshot: %+v", res)
	}
	for _, p := range []string{dir, store.TreeLease(dir)} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("gc left %s: %v", p, err)
		}
	}
}
