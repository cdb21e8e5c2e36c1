//go:build linux

package cache

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skillgate/skillgate/pipeline/plan"
)

// walks is how many walks HashWatched has made.
func walks() int {
	watched.Lock()
	defer watched.Unlock()
	return watchWalks
}

// watchedFolder makes a live folder of regular, executable, nested and
// linked files, one of them also named outside it (outside), and hashes it
// through HashWatched of a fresh cache.
func watchedFolder(t *testing.T) (c *Cache, dir, outside string, tree plan.Tree) {
	t.Helper()
	t.Cleanup(Unwatch)
	root := t.TempDir()
	dir, outside = filepath.Join(root, "suite", "fx"), filepath.Join(root, "elsewhere")
	write := func(rel, text string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("top.txt", "top\n", 0o644)
	write("a/b/c.txt", "deep\n", 0o644)
	write("bin/run.sh", "#!/bin/sh\n", 0o755)
	must(t, os.MkdirAll(filepath.Join(dir, "empty", "too"), 0o755))
	must(t, os.Symlink("top.txt", filepath.Join(dir, "link")))
	must(t, os.WriteFile(outside, []byte("shared\n"), 0o644))
	must(t, os.Link(outside, filepath.Join(dir, "a", "shared.txt")))
	c, err := Open(t.TempDir())
	must(t, err)
	tree, err = c.HashWatched(dir)
	must(t, err)
	return c, dir, outside, tree
}

// TestHashWatchedSeesEveryChange: hashing a watched folder again gives the
// first walk's tree without walking while nothing changed, and after any
// change walks it again and gives HashTree's tree, whatever the change and
// wherever in the folder it was made: a write that keeps size and
// modification time, a mode, a file made, removed or renamed, a folder
// made with a file in it, a link retargeted, the folder replaced by
// another at its path or its parent by another holding another, a write through a file's other name outside the
// folder, and a touch (walked again, the same tree).
func TestHashWatchedSeesEveryChange(t *testing.T) {
	changes := map[string]func(t *testing.T, dir, outside string){
		"write keeping size and time": func(t *testing.T, dir, _ string) {
			p := filepath.Join(dir, "a", "b", "c.txt")
			info, err := os.Stat(p)
			must(t, err)
			must(t, os.WriteFile(p, []byte("DEEP\n"), 0o644))
			must(t, os.Chtimes(p, info.ModTime(), info.ModTime()))
		},
		"mode": func(t *testing.T, dir, _ string) { must(t, os.Chmod(filepath.Join(dir, "top.txt"), 0o755)) },
		"made": func(t *testing.T, dir, _ string) {
			must(t, os.WriteFile(filepath.Join(dir, "empty", "too", "n"), nil, 0o644))
		},
		"remove": func(t *testing.T, dir, _ string) { must(t, os.Remove(filepath.Join(dir, "bin", "run.sh"))) },
		"rename": func(t *testing.T, dir, _ string) {
			must(t, os.Rename(filepath.Join(dir, "a", "b", "c.txt"), filepath.Join(dir, "a", "b", "d.txt")))
		},
		"folder made, then a file in it": func(t *testing.T, dir, _ string) {
			must(t, os.MkdirAll(filepath.Join(dir, "a", "new", "deeper"), 0o755))
			must(t, os.WriteFile(filepath.Join(dir, "a", "new", "deeper", "f"), []byte("x"), 0o644))
		},
		"link retargeted": func(t *testing.T, dir, _ string) {
			must(t, os.Remove(filepath.Join(dir, "link")))
			must(t, os.Symlink("a/b/c.txt", filepath.Join(dir, "link")))
		},
		"folder replaced": func(t *testing.T, dir, _ string) {
			must(t, os.Rename(dir, dir+".old"))
			must(t, os.MkdirAll(filepath.Join(dir, "a"), 0o755))
			must(t, os.WriteFile(filepath.Join(dir, "top.txt"), []byte("top\n"), 0o644))
		},
		"parent replaced": func(t *testing.T, dir, _ string) {
			parent := filepath.Dir(dir)
			must(t, os.Rename(parent, parent+".old"))
			must(t, os.MkdirAll(filepath.Join(dir, "a"), 0o755))
			must(t, os.WriteFile(filepath.Join(dir, "top.txt"), []byte("top\n"), 0o644))
		},
		"write through the other name": func(t *testing.T, _, outside string) {
			info, err := os.Stat(outside)
			must(t, err)
			must(t, os.WriteFile(outside, []byte("SHARED\n"), 0o644))
			must(t, os.Chtimes(outside, info.ModTime(), info.ModTime()))
		},
		"touch": func(t *testing.T, dir, _ string) {
			now := time.Now().Add(time.Hour)
			must(t, os.Chtimes(filepath.Join(dir, "top.txt"), now, now))
		},
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			c, dir, outside, first := watchedFolder(t)
			n := walks()
			again, err := c.HashWatched(dir)
			must(t, err)
			if again.Digest != first.Digest || len(again.Files) != len(first.Files) || walks() != n {
				t.Fatalf("unchanged folder: %s after %d walks, first %s", again.Digest, walks()-n, first.Digest)
			}
			change(t, dir, outside)
			got, err := c.HashWatched(dir)
			must(t, err)
			want, err := plan.HashTree(dir)
			must(t, err)
			if walks() != n+1 {
				t.Errorf("%d walks after the change, want 1", walks()-n)
			}
			if got.Digest != want.Digest {
				t.Errorf("tree %s after the change, HashTree %s", got.Digest, want.Digest)
			}
			if (name == "touch") != (got.Digest == first.Digest) {
				t.Errorf("tree %s, first %s", got.Digest, first.Digest)
			}
			if again, _ := c.HashWatched(dir); again.Digest != want.Digest || walks() != n+1 {
				t.Errorf("watched again after the change: %s after %d walks", again.Digest, walks()-n)
			}
		})
	}
}

// TestHashWatchedBounded: a folder that needs more watches than a folder
// may take is walked every time.
func TestHashWatchedBounded(t *testing.T) {
	old := maxWatches
	maxWatches = 3 // the folder has seven folders
	t.Cleanup(func() { maxWatches = old })
	c, dir, _, first := watchedFolder(t)
	n := walks()
	again, err := c.HashWatched(dir)
	must(t, err)
	if walks() != n+1 || again.Digest != first.Digest {
		t.Errorf("%d walks, tree %s, first %s", walks()-n, again.Digest, first.Digest)
	}
}
