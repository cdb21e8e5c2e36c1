package cache

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/store"
)

// TestPlaceTreeStatMoved: a cached file whose stat moved but not its bytes
// (its change time alone, as another link to it or a chmod makes) is
// hashed, found right and placed: the snapshot is not refused, and the
// record then holds the file's new stat. The run folder's snapshot, placed
// by the workers at once from folders of more files than one run, is
// exactly the tree: its files and the folders holding them.
func TestPlaceTreeStatMoved(t *testing.T) {
	src, tree := liveTree(t, 1500)
	c, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	place(t, c, src, tree)
	place(t, c, src, tree)
	rel := "d07/f0007.txt"
	f := filepath.Join(c.TreeDir(tree.Digest), filepath.FromSlash(rel))
	was := c.known(tree.Digest)[rel]
	time.Sleep(20 * time.Millisecond) // past the clock tick of the last link
	if err := os.Chmod(f, 0o444); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	c.Log = &log
	got := place(t, c, src, tree) // verifies the run folder's snapshot
	if log.Len() != 0 {
		t.Errorf("a file whose change time alone moved had the snapshot refused: %s", log.String())
	}
	info, err := os.Lstat(f)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := store.StatOf(info)
	if now := c.known(tree.Digest)[rel]; now.Stat != st || now.Stat.Ctime == was.Stat.Ctime {
		t.Errorf("the record holds %+v, the file's stat is %+v (was %+v)", now.Stat, st, was.Stat)
	}

	var paths, want []string
	filepath.WalkDir(got, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != got {
			r, _ := filepath.Rel(got, p)
			paths = append(paths, filepath.ToSlash(r))
		}
		return err
	})
	folders := map[string]bool{}
	for p := range tree.Files {
		want = append(want, p)
		for d := filepath.Dir(p); d != "."; d = filepath.Dir(d) {
			folders[d] = true
		}
	}
	for d := range folders {
		want = append(want, d)
	}
	slices.Sort(paths)
	slices.Sort(want)
	if !slices.Equal(paths, want) {
		t.Errorf("the run folder's snapshot holds %d paths, the tree %d", len(paths), len(want))
	}
}
