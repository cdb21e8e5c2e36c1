package plan

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"sync"
	"syscall"
	"testing"

	"github.com/opencontainers/go-digest"
)

// call is what a FileHasher was given.
type call struct {
	p, rel string
	info   os.FileInfo
}

// recorder is a FileHasher that records its calls and answers the digest
// of rel, or err for the file at fail.
type recorder struct {
	mu    sync.Mutex
	calls map[string]call
	fail  string
	err   error
}

func (r *recorder) hash(p, rel string, info os.FileInfo) (digest.Digest, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls = map[string]call{}
	}
	r.calls[rel] = call{p, rel, info}
	if rel == r.fail {
		return "", r.err
	}
	return digest.FromString(rel), nil
}

// sameCalls fails unless a and b hashed the same files with the same
// paths and Lstats.
func sameCalls(t *testing.T, a, b *recorder) {
	t.Helper()
	if len(a.calls) != len(b.calls) {
		t.Fatalf("%d files hashed, want %d", len(a.calls), len(b.calls))
	}
	for rel, ca := range a.calls {
		cb, ok := b.calls[rel]
		switch {
		case !ok:
			t.Errorf("%s hashed, not by HashTreeWith", rel)
		case ca.p != cb.p || ca.info.Name() != cb.info.Name() || ca.info.Size() != cb.info.Size() ||
			ca.info.Mode() != cb.info.Mode() || !ca.info.ModTime().Equal(cb.info.ModTime()) || ca.info.IsDir() != cb.info.IsDir():
			t.Errorf("%s hashed as %s %v, HashTreeWith %s %v", rel, ca.p, ca.info, cb.p, cb.info)
		case !reflect.DeepEqual(ca.info.Sys(), cb.info.Sys()):
			t.Errorf("%s: Sys %+v, HashTreeWith %+v", rel, ca.info.Sys(), cb.info.Sys())
		}
	}
}

// bigTree adds n folders of files, some nested and some executable, to dir.
func bigTree(t *testing.T, dir string, n int) {
	t.Helper()
	for i := range n {
		sub := filepath.Join(dir, fmt.Sprintf("big%02d", i), fmt.Sprintf("in%d", i%3))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		for j := range 40 {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%02d", j)), []byte(fmt.Sprint(i, j)), 0o644|os.FileMode(j%2*0o100)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestHashTreeParallel: HashTreeParallel gives the tree HashTree gives,
// and calls its hasher on the files, paths and Lstats HashTreeWith does,
// on a tree of exec files, symlinks, nested and empty folders, names that
// sort apart from the walk, and folders enough to be walked in parallel.
func TestHashTreeParallel(t *testing.T) {
	dir := writeTree(t)
	bigTree(t, dir, 30)
	for _, root := range []string{dir, dir + "/", filepath.Join(dir, "a") + "/../b/.."} {
		want, err := HashTree(root)
		if err != nil {
			t.Fatal(err)
		}
		got, err := HashTreeParallel(root, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: tree %s (%d files, %d bytes), want %s (%d files, %d bytes)",
				root, got.Digest, len(got.Files), got.Bytes, want.Digest, len(want.Files), want.Bytes)
		}
		var seq, par recorder
		HashTreeWith(root, seq.hash)
		HashTreeParallel(root, par.hash)
		sameCalls(t, &par, &seq)
	}
	// A folder's top that is a file or a link is a tree of one entry, ".".
	for _, root := range []string{filepath.Join(dir, "a.b"), filepath.Join(dir, "b", "link"), filepath.Join(dir, "e", "f")} {
		want, err := HashTree(root)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := HashTreeParallel(root, nil); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, %+v, want %+v", root, err, got, want)
		}
	}
}

// TestHashTreeParallelErrors: HashTreeParallel fails as HashTree does, on
// the first failure in the walk's order: a fifo, a missing top, a file
// whose hash fails; it hashes no file after a fifo.
func TestHashTreeParallelErrors(t *testing.T) {
	dir := writeTree(t)
	bigTree(t, dir, 12)
	if _, err := HashTreeParallel(filepath.Join(dir, "none"), nil); err == nil || !errors.Is(err, os.ErrNotExist) ||
		err.Error() != "hash tree "+filepath.Join(dir, "none")+": lstat "+filepath.Join(dir, "none")+": no such file or directory" {
		t.Errorf("a missing folder: %v", err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "big05", "in2", "f20.pipe"), 0o644); err != nil {
		t.Skip("no fifo here:", err)
	}
	_, err := HashTreeParallel(dir, nil)
	if want := "hash tree " + dir + ": big05/in2/f20.pipe is not a regular file, folder or symlink"; err == nil || err.Error() != want {
		t.Errorf("a fifo: %v, want %s", err, want)
	}
	var seq, par recorder
	_, errSeq := HashTreeWith(dir, seq.hash)
	_, errPar := HashTreeParallel(dir, par.hash)
	if errSeq == nil || errPar == nil || errSeq.Error() != errPar.Error() {
		t.Errorf("a fifo: %v, HashTreeWith %v", errPar, errSeq)
	}
	sameCalls(t, &par, &seq)
	var after []string
	for rel := range par.calls {
		if rel > "big05/in2/f20.pipe" {
			after = append(after, rel)
		}
	}
	if sort.Strings(after); len(after) > 0 {
		t.Errorf("files after the fifo hashed: %v", after)
	}

	// A hash that fails before the fifo, in a folder walked before it, and
	// one after it: the first in the walk's order is the one told.
	boom := errors.New("boom")
	for fail, want := range map[string]string{
		"big03/in0/f07": "hash tree " + dir + ": boom",
		"big05/in2/f19": "hash tree " + dir + ": boom",
		"big05/in2/f21": "hash tree " + dir + ": big05/in2/f20.pipe is not a regular file, folder or symlink",
		"z/empty.txt":   "hash tree " + dir + ": big05/in2/f20.pipe is not a regular file, folder or symlink",
	} {
		r := &recorder{fail: fail, err: boom}
		_, err := HashTreeParallel(dir, r.hash)
		if err == nil || err.Error() != want || errors.Is(err, boom) != (want == "hash tree "+dir+": boom") {
			t.Errorf("%s failing: %v, want %s", fail, err, want)
		}
		_, errSeq := HashTreeWith(dir, (&recorder{fail: fail, err: boom}).hash)
		if errSeq == nil || errSeq.Error() != want {
			t.Errorf("%s failing: HashTreeWith %v, want %s", fail, errSeq, want)
		}
	}
}

// TestHashTreeListing: HashTreeListing tells listing of every folder of
// the tree once, the top and empty folders included, each before any of
// its entries is hashed, and gives HashTree's tree.
func TestHashTreeListing(t *testing.T) {
	dir := writeTree(t)
	bigTree(t, dir, 30)
	var want []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			want = append(want, p)
		}
		return nil
	})
	var mu sync.Mutex
	heard := map[string]int{}
	early := 0 // files hashed before their folder was heard
	tree, err := HashTreeListing(dir, func(p, rel string, info os.FileInfo) (digest.Digest, error) {
		mu.Lock()
		if heard[filepath.Dir(p)] == 0 {
			early++
		}
		mu.Unlock()
		return digest.FromString(rel), nil
	}, func(folder string) {
		mu.Lock()
		heard[folder]++
		mu.Unlock()
	})
	if err != nil || len(tree.Files) == 0 {
		t.Fatalf("tree of %d files: %v", len(tree.Files), err)
	}
	var got []string
	for f, n := range heard {
		got = append(got, f)
		if n != 1 {
			t.Errorf("%s heard %d times", f, n)
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("heard %q, want the folders %q", got, want)
	}
	if early != 0 {
		t.Errorf("%d files hashed before their folder was heard", early)
	}
}
