package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/grade"

	"github.com/opencontainers/go-digest"
)

// TestStoreFollowsNoLink: a link at store/grades makes OpenStore refuse
// the folder before anything is written (nothing lands where the link
// leads), a linked record is refused by its reader, and a grade edited by
// hand is refused naming its file, while Root tells a re-sealed edit from
// the folder the run left.
func TestStoreFollowsNoLink(t *testing.T) {
	out, elsewhere := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(out, "store"), 0o755)
	if err := os.Symlink(elsewhere, filepath.Join(out, DirGrades)); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStore(out); err == nil || !strings.Contains(err.Error(), "store/grades is a link") {
		t.Fatalf("open a store whose grades folder is a link: %v", err)
	}
	if left, _ := os.ReadDir(elsewhere); len(left) != 0 {
		t.Errorf("wrote %v through the link", left)
	}
	os.Remove(filepath.Join(out, DirGrades))

	st, err := OpenStore(out)
	if err != nil {
		t.Fatal(err)
	}
	key := digest.FromString("grade")
	if err := st.PutGrade(grade.CellResult{Cell: "c/none/1", Grade: key, Status: grade.StatusCompleted, Passed: false}); err != nil {
		t.Fatal(err)
	}
	if g, ok, err := st.Grade(key); err != nil || !ok || g.Passed {
		t.Fatalf("read the stored grade: %v %v %v", g, ok, err)
	}
	root, err := Root(out)
	if err != nil {
		t.Fatal(err)
	}
	file := st.GradePath(key)
	b, _ := os.ReadFile(file)
	os.WriteFile(file, []byte(strings.Replace(string(b), `"passed": false`, `"passed": true`, 1)), 0o644)
	if _, _, err := st.Grade(key); err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "edited or damaged") {
		t.Errorf("read a grade edited by hand: %v", err)
	}
	if err := Reseal(file); err != nil {
		t.Fatal(err)
	}
	if g, _, err := st.Grade(key); err != nil || !g.Passed {
		t.Fatalf("read the re-sealed grade: %v %v", g, err)
	}
	if again, err := Root(out); err != nil || again == root {
		t.Errorf("root of the re-sealed folder %s (%v), of the run's %s", again, err, root)
	}

	os.Remove(file)
	if err := os.Symlink(filepath.Join(elsewhere, "x.json"), file); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Grade(key); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("read a linked grade: %v", err)
	}
	if err := CheckLinks(out); err == nil {
		t.Errorf("a linked grade passes CheckLinks")
	}
}

// TestLockLinkRefused: a link at a run folder's lock path is refused before it
// is opened, so no run creates or locks a file outside the folder through it;
// a folder whose lock is a folder is refused too, and a plain one opens.
func TestLockLinkRefused(t *testing.T) {
	out, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "made-by-skillgate")
	if err := os.Symlink(target, filepath.Join(out, FileLock)); err != nil {
		t.Fatal(err)
	}
	for _, create := range []bool{true, false} {
		if f, err := OpenLock(out, create); err == nil || !strings.Contains(err.Error(), "a link, refused") {
			t.Errorf("create %v: %v, want the link refused", create, err)
			if f != nil {
				f.Close()
			}
		}
	}
	if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the link's target was made: %v", err)
	}
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, FileLock), 0o755)
	if _, err := OpenLock(dir, true); err == nil {
		t.Error("a folder at the lock path was opened")
	}
	plain := t.TempDir()
	f, err := OpenLock(plain, true)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := OpenLock(t.TempDir(), false); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no lock, not creating: %v", err)
	}
}

// TestEncodeRootAsJSON: the root's entries are written as encoding/json
// writes them, for names that need escaping too, so a folder's root digest
// is what it always was.
func TestEncodeRootAsJSON(t *testing.T) {
	for _, entries := range [][]rootEntry{nil, {}, {
		{Path: "plan.json", Digest: "sha256:00"},
		{Path: `store/trees/ab/odd<&>"\` + "\u2028é\x01", Digest: "sha256:01"},
		{Path: "store/trees/ab/link", Link: "../é<x>"},
		{Path: "empty"},
	}} {
		want, err := json.Marshal(entries)
		if err != nil {
			t.Fatal(err)
		}
		if got := encodeRoot(entries); !bytes.Equal(got, want) {
			t.Errorf("encodeRoot(%v) = %s, want %s", entries, got, want)
		}
	}
}
