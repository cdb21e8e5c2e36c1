package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/opencontainers/go-digest"
)

// plantIndex writes the index of the live folder dir as a walk started at
// taken would have, every file with its current stat but rel with the
// digest lie: what HashLive then answers for rel shows whether it trusted
// the index or read the file.
func plantIndex(t *testing.T, c *Cache, dir, rel string, lie digest.Digest, taken time.Time) string {
	t.Helper()
	abs, _ := filepath.Abs(dir)
	sum := sha256.Sum256([]byte(abs))
	key := hex.EncodeToString(sum[:])
	tree, err := plan.HashTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]store.KnownFile{}
	for p, e := range tree.Files {
		info, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		st, ok := store.StatOf(info)
		if !ok {
			t.Skip("no inode stats on this system")
		}
		files[p] = store.KnownFile{Stat: st, Digest: e.Digest}
	}
	files[rel] = store.KnownFile{Stat: files[rel].Stat, Digest: lie}
	index := filepath.Join(c.Dir, DirIndex, key)
	os.MkdirAll(filepath.Dir(index), 0o755)
	if err := os.WriteFile(index, store.EncodeKnown(key+" "+strconv.FormatInt(taken.UnixNano(), 10), files), 0o644); err != nil {
		t.Fatal(err)
	}
	return index
}

// TestHashLiveIndex: HashLive trusts a file's indexed digest only while
// its stat is exactly the one indexed and its last change is older than
// the index's walk by the racy margin; an edit with its size and
// modification time set back, a damaged index, and a racy entry are all
// read and hashed, giving the tree HashTree gives.
func TestHashLiveIndex(t *testing.T) {
	dir, tree := liveTree(t, 30)
	rel := "d05/f0005.txt"
	lie := digest.FromString("not the file")
	c, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.HashLive(dir)
	if err != nil || got.Digest != tree.Digest {
		t.Fatalf("first walk: %v, tree %s, want %s", err, got.Digest, tree.Digest)
	}
	later := time.Now().Add(RacyMargin + time.Second) // the files' last change is well before it

	plantIndex(t, c, dir, rel, lie, later)
	if got, _ := c.HashLive(dir); got.Files[rel].Digest != lie {
		t.Fatalf("a file with its indexed stat was read, not taken from the index (%s)", got.Files[rel].Digest)
	}
	// The index that walk wrote was taken now, within the margin of the
	// files' last change: the file is read again.
	if got, _ := c.HashLive(dir); got.Files[rel].Digest != tree.Files[rel].Digest {
		t.Fatalf("an entry written within the margin of its file's change was trusted")
	}

	// Racy: the index's walk within the margin of the file's change.
	plantIndex(t, c, dir, rel, lie, time.Now())
	if got, _ := c.HashLive(dir); got.Files[rel].Digest != tree.Files[rel].Digest {
		t.Errorf("a racy entry was trusted: %s", got.Files[rel].Digest)
	}

	// Damaged: one byte of the index changed.
	index := plantIndex(t, c, dir, rel, lie, later)
	b, _ := os.ReadFile(index)
	b[len(b)/3] ^= 1
	os.WriteFile(index, b, 0o644)
	if got, _ := c.HashLive(dir); got.Files[rel].Digest != tree.Files[rel].Digest {
		t.Errorf("a damaged index was trusted: %s", got.Files[rel].Digest)
	}

	// Edited, its size and modification time set back: the change time tells.
	plantIndex(t, c, dir, rel, tree.Files[rel].Digest, later)
	time.Sleep(20 * time.Millisecond)
	f := filepath.Join(dir, filepath.FromSlash(rel))
	os.Chmod(f, 0o444)
	editKept(t, f)
	got, err = c.HashLive(dir)
	want, _ := plan.HashTree(dir)
	if err != nil || got.Digest != want.Digest || got.Digest == tree.Digest {
		t.Errorf("after an edit with its time set back: %v, tree %s, want %s", err, got.Digest, want.Digest)
	}
	if ch := plan.DiffTrees(tree, got); len(ch) != 1 || ch[0].Path != rel {
		t.Errorf("changes %v, want %s modified", ch, rel)
	}
}
