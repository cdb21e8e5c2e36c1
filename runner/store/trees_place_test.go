package store_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/opencontainers/go-digest"
)

// snapshotTree writes a live folder of folders x files small files
// (nested folders, an executable, symlinks, an empty folder) and copies it
// into a snapshot under parent, as PinTree does; it returns the snapshot
// and its tree.
func snapshotTree(t *testing.T, parent string, folders, files int) (string, plan.Tree) {
	t.Helper()
	live := t.TempDir()
	for d := range folders {
		dir := filepath.Join(live, fmt.Sprintf("d%02d", d))
		if d%3 == 1 {
			dir = filepath.Join(live, fmt.Sprintf("d%02d", d-1), fmt.Sprintf("sub%02d", d))
		}
		must(t, os.MkdirAll(dir, 0o755))
		for f := range files {
			must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d", f)), fmt.Appendf(nil, "file %d/%d\n", d, f), 0o644))
		}
	}
	must(t, os.MkdirAll(filepath.Join(live, "only", "deeper"), 0o755))
	must(t, os.WriteFile(filepath.Join(live, "only", "deeper", "run.sh"), []byte("#!/bin/sh\n"), 0o755))
	must(t, os.Symlink("deeper/run.sh", filepath.Join(live, "only", "link")))
	must(t, os.Symlink("d00/f000", filepath.Join(live, "top")))
	want, err := plan.HashTree(live)
	must(t, err)
	snap := filepath.Join(parent, "snap")
	must(t, os.Mkdir(snap, 0o755))
	must(t, store.CopyTree(live, snap, want))
	must(t, os.MkdirAll(filepath.Join(snap, "empty", "too"), 0o755)) // a folder without files: not placed
	return snap, want
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// listing is every path under dir (folders with a trailing slash), with
// each symlink's target.
func listing(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	must(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.IsDir():
			rel += "/"
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			rel += " -> " + target
		}
		out = append(out, rel)
		return nil
	}))
	return out
}

// TestLinkTreeKnownExact: a snapshot of many folders, some of more files
// than one worker places at a time, placed by workers at once, is exactly
// the tree: every file a hard link to the snapshot's, every symlink, the
// folders that hold them and no other (the snapshot's empty folder is not
// made); what it returns of each file is the stat its link has now.
func TestLinkTreeKnownExact(t *testing.T) {
	snap, want := snapshotTree(t, t.TempDir(), 6, 300)
	dst := t.TempDir()
	known, err := store.LinkTreeKnown(snap, dst, want, nil)
	must(t, err)
	must(t, store.VerifyTree(dst, want))
	wantList := slices.DeleteFunc(listing(t, snap), func(p string) bool { return strings.HasPrefix(p, "empty/") })
	if got := listing(t, dst); !slices.Equal(got, wantList) {
		t.Fatalf("placed %d paths, want %d: %v", len(got), len(wantList), got)
	}
	regular := 0
	for rel, e := range want.Files {
		if e.Mode == "symlink" {
			continue
		}
		regular++
		a, err := os.Lstat(filepath.Join(snap, rel))
		must(t, err)
		b, err := os.Lstat(filepath.Join(dst, rel))
		must(t, err)
		if !os.SameFile(a, b) {
			t.Errorf("%s: not a link to the snapshot's file", rel)
		}
		st, _ := store.StatOf(b)
		if k := known[rel]; k.Stat != st || k.Digest != e.Digest {
			t.Errorf("%s: known %+v, its link's stat %+v digest %s", rel, k, st, e.Digest)
		}
	}
	if len(known) != regular {
		t.Errorf("known holds %d files, want %d", len(known), regular)
	}
}

// TestLinkTreeKnownTrustsOnlyItsStats: a file whose stat is the one known
// is not read (a record that says the file has other bytes is believed:
// the record is the proof); once anything changed its stat (here its
// change time alone), it is hashed through its link and refused, naming
// it; with the record right, the file hashed is placed and known by its
// new stat.
func TestLinkTreeKnownTrustsOnlyItsStats(t *testing.T) {
	snap, want := snapshotTree(t, t.TempDir(), 4, 20)
	known, err := store.LinkTreeKnown(snap, t.TempDir(), want, nil)
	must(t, err)
	rel := "d03/f007"
	f := filepath.Join(snap, rel)

	// A record and a plan that agree on other bytes than the file's.
	other := plan.Tree{Files: maps(want.Files)}
	forged := digest.FromString("other bytes")
	other.Files[rel] = plan.TreeEntry{Digest: forged, Size: want.Files[rel].Size}
	lied := maps(known)
	lied[rel] = store.KnownFile{Stat: known[rel].Stat, Digest: forged}
	now, err := store.LinkTreeKnown(snap, t.TempDir(), other, lied)
	if err != nil {
		t.Fatalf("a file whose stat is the record's was read: %v", err)
	}

	time.Sleep(20 * time.Millisecond) // past the clock tick of the last link
	must(t, os.Chmod(f, 0o444))       // its change time, nothing else
	_, err = store.LinkTreeKnown(snap, t.TempDir(), other, now)
	if err == nil || !strings.Contains(err.Error(), f+": digest "+want.Files[rel].Digest.String()+", the plan says "+forged.String()) {
		t.Fatalf("a file whose change time changed: %v, want it hashed and refused", err)
	}

	known2, err := store.LinkTreeKnown(snap, t.TempDir(), want, now)
	must(t, err)
	info, err := os.Lstat(f)
	must(t, err)
	if st, _ := store.StatOf(info); known2[rel].Stat != st {
		t.Errorf("known %+v, the file's stat %+v", known2[rel].Stat, st)
	}
}

func maps[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestLinkTreeKnownRefuses: each way a snapshot can differ from its plan
// is refused naming the file, the same file every time however the
// workers ran; a file of the wrong kind is named before one that failed
// otherwise, as it was found before any file was linked.
func TestLinkTreeKnownRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(snap string) error
		want   string
	}{
		{"added", func(s string) error { return os.WriteFile(filepath.Join(s, "d09", "extra"), nil, 0o444) }, "d09/extra: not in the plan"},
		{"missing", func(s string) error { return os.Remove(filepath.Join(s, "d06", "f010")) }, "d06/f010: in the plan, missing from the snapshot"},
		{"bytes", func(s string) error {
			return rewrite(filepath.Join(s, "d09", "f100"), "file X\n")
		}, "d09/f100: digest sha256:"},
		{"writable and bytes", func(s string) error {
			if err := rewrite(filepath.Join(s, "d09", "f100"), "file X\n"); err != nil {
				return err
			}
			return os.Chmod(filepath.Join(s, "d03", "f050"), 0o644)
		}, "d03/f050: writable, a snapshot's files are read-only"},
		{"kind after a failure", func(s string) error {
			if err := rewrite(filepath.Join(s, "d00", "f001"), "file X\n"); err != nil {
				return err
			}
			return os.Chmod(filepath.Join(s, "d09", "f130"), 0o555)
		}, "d09/f130: an executable file, the plan says a regular file"},
		{"symlink", func(s string) error {
			os.Remove(filepath.Join(s, "only", "link"))
			return os.Symlink("deeper", filepath.Join(s, "only", "link"))
		}, "only/link: symlink to deeper (digest"},
		{"symlink for a file", func(s string) error {
			os.Remove(filepath.Join(s, "d06", "f020"))
			return os.Symlink("f021", filepath.Join(s, "d06", "f020"))
		}, "d06/f020: a symlink, the plan says a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap, want := snapshotTree(t, t.TempDir(), 10, 140)
			must(t, tc.damage(snap))
			for range 3 {
				_, err := store.LinkTreeKnown(snap, t.TempDir(), want, nil)
				if err == nil || !strings.HasPrefix(err.Error(), filepath.Join(snap, tc.want)) {
					t.Fatalf("LinkTreeKnown: %v, want %q", err, filepath.Join(snap, tc.want))
				}
			}
		})
	}
}

// rewrite writes s into the read-only file f, its modification time kept.
func rewrite(f, s string) error {
	info, err := os.Stat(f)
	if err != nil {
		return err
	}
	os.Chmod(f, 0o644)
	if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
		return err
	}
	os.Chmod(f, info.Mode().Perm())
	return os.Chtimes(f, info.ModTime(), info.ModTime())
}

// TestLinkTreeKnownAcrossFileSystems: a snapshot on another file system
// than dst is copied, each file hashed while copied: a damaged file is
// refused, and nothing is known of files copied.
func TestLinkTreeKnownAcrossFileSystems(t *testing.T) {
	shm, err := os.MkdirTemp("/dev/shm", "skillgate-test-")
	if err != nil {
		t.Skipf("no second file system: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(shm) })
	dst := t.TempDir()
	var a, b syscall.Stat_t
	if syscall.Stat(shm, &a) != nil || syscall.Stat(dst, &b) != nil || a.Dev == b.Dev {
		t.Skip("/dev/shm is on the file system of the test's folder")
	}
	snap, want := snapshotTree(t, shm, 3, 10)
	known, err := store.LinkTreeKnown(snap, dst, want, nil)
	must(t, err)
	must(t, store.VerifyTree(dst, want))
	if len(known) != 0 {
		t.Errorf("%d files known after a copy, want none", len(known))
	}
	must(t, rewrite(filepath.Join(snap, "d02", "f003"), "file X\n"))
	if _, err := store.LinkTreeKnown(snap, t.TempDir(), want, nil); err == nil || !strings.Contains(err.Error(), "d02/f003: digest") {
		t.Errorf("a damaged file copied: %v", err)
	}
}
