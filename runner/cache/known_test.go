package cache

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/store"
)

// editKept changes a byte of the read-only file f and sets its size, mode
// and modification time back as they were: only its change time tells.
func editKept(t *testing.T, f string) {
	t.Helper()
	info, err := os.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(f)
	b[0] ^= 1
	os.Chmod(f, 0o644)
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(f, info.Mode().Perm())
	if err := os.Chtimes(f, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(f)
	if after.Size() != info.Size() || !after.ModTime().Equal(info.ModTime()) || after.Mode() != info.Mode() {
		t.Fatalf("the edit left a trace besides the change time: %v %v", info, after)
	}
}

// TestPlaceTreeStatRecord: the snapshot's stat record lets a placement
// skip hashing the files whose stats it holds, and never lets an edited
// file through: an edit with the size, mode and modification time set back
// (the change time tells), under a record damaged on disk, or under a
// record edited to hold the edited file's stat, is refused and the
// snapshot made again.
func TestPlaceTreeStatRecord(t *testing.T) {
	src, tree := liveTree(t, 20)
	rel := "d04/f0004.txt"
	for name, tamper := range map[string]func(c *Cache, f string){
		"modification time set back": func(c *Cache, f string) {},
		"record damaged": func(c *Cache, f string) {
			b, _ := os.ReadFile(c.statFile(tree.Digest))
			b[len(b)/2] ^= 1
			os.WriteFile(c.statFile(tree.Digest), b, 0o644)
		},
		"record edited to match": func(c *Cache, f string) {
			// The record rewritten with the edited file's stat, its sum
			// left as it was.
			b, _ := os.ReadFile(c.statFile(tree.Digest))
			info, _ := os.Lstat(f)
			st, _ := store.StatOf(info)
			var out []string
			for _, line := range strings.Split(string(b), "\n") {
				if strings.HasSuffix(line, "\t"+rel) {
					k := c.known(tree.Digest)[rel]
					line = strings.Replace(line, "\t"+strconv.FormatInt(k.Stat.Ctime, 10)+"\t", "\t"+strconv.FormatInt(st.Ctime, 10)+"\t", 1)
				}
				out = append(out, line)
			}
			os.WriteFile(c.statFile(tree.Digest), []byte(strings.Join(out, "\n")), 0o644)
			if c.known(tree.Digest) != nil {
				t.Fatalf("a record edited without its sum was read")
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			place(t, c, src, tree)
			place(t, c, src, tree)
			known := c.known(tree.Digest)
			if len(known) != len(tree.Files)-1 { // every file but the symlink
				t.Fatalf("the stat record holds %d files, want %d", len(known), len(tree.Files)-1)
			}
			f := filepath.Join(c.TreeDir(tree.Digest), filepath.FromSlash(rel))
			time.Sleep(20 * time.Millisecond) // past the clock tick of the last link
			editKept(t, f)
			tamper(c, f)
			var log bytes.Buffer
			c.Log = &log
			got := place(t, c, src, tree) // verifies the run folder's snapshot
			if !strings.Contains(log.String(), "cache: refused the snapshot of fixture fx") || !strings.Contains(log.String(), rel) {
				t.Errorf("log %q does not say the snapshot was refused for %s", log.String(), rel)
			}
			if err := store.VerifyTree(got, tree); err != nil {
				t.Error(err)
			}
			if err := store.VerifyTree(c.TreeDir(tree.Digest), tree); err != nil {
				t.Errorf("the snapshot made again: %v", err)
			}
		})
	}
}
