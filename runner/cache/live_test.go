package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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

// TestHashLiveRewrite: a walk that read a file rewrites the index with
// every regular file, those trusted as the index had them and those read
// with the stat they were read at; links are left out. A record whose sum
// is right but one of whose lines is not a file's is ignored whole.
func TestHashLiveRewrite(t *testing.T) {
	dir, tree := liveTree(t, 40)
	trusted, edited := "d05/f0005.txt", "d07/f0017.txt"
	lie := digest.FromString("not the file")
	c, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	index := plantIndex(t, c, dir, trusted, lie, time.Now().Add(RacyMargin+time.Second))
	time.Sleep(20 * time.Millisecond)
	f := filepath.Join(dir, filepath.FromSlash(edited))
	editKept(t, f)
	got, err := c.HashLive(dir)
	if err != nil || got.Files[trusted].Digest != lie {
		t.Fatalf("%v: %s read, not trusted (%s)", err, trusted, got.Files[trusted].Digest)
	}
	want, _ := plan.HashTree(dir)
	if got.Files[edited] != want.Files[edited] || got.Files[edited] == tree.Files[edited] {
		t.Fatalf("the edited file hashed as %v, want %v", got.Files[edited], want.Files[edited])
	}
	b, _ := os.ReadFile(index)
	_, files := store.DecodeKnown(b)
	if len(files) != len(tree.Files)-1 {
		t.Fatalf("the index rewritten holds %d files, want %d (all but the link)", len(files), len(tree.Files)-1)
	}
	info, _ := os.Lstat(f)
	st, _ := store.StatOf(info)
	if k := files[edited]; k.Digest != want.Files[edited].Digest || k.Stat != st {
		t.Errorf("the edited file indexed as %+v, want %s at %+v", k, want.Files[edited].Digest, st)
	}
	if k := files[trusted]; k.Digest != lie {
		t.Errorf("the trusted file indexed as %+v, not as the index had it", k)
	}
	for rel, e := range tree.Files {
		if k, ok := files[rel]; rel != trusted && e.Mode != "symlink" && (!ok || k.Digest != want.Files[rel].Digest) {
			t.Errorf("%s indexed as %+v, want %s", rel, k, want.Files[rel].Digest)
		}
	}

	// The lie's line given a digest in capitals, the record summed again.
	index = plantIndex(t, c, dir, trusted, lie, time.Now().Add(RacyMargin+time.Second))
	b, _ = os.ReadFile(index)
	body := string(b[:strings.LastIndex(string(b), "sum ")])
	body = strings.Replace(body, string(lie), "sha256:"+strings.ToUpper(lie.Encoded()), 1)
	sum := sha256.Sum256([]byte(body))
	os.WriteFile(index, []byte(body+"sum "+hex.EncodeToString(sum[:])+"\n"), 0o644)
	if got, _ := c.HashLive(dir); got.Files[trusted].Digest != tree.Files[trusted].Digest {
		t.Errorf("a record with a digest in capitals was trusted: %s", got.Files[trusted].Digest)
	}
}

// TestHashLiveFifo: a fifo in a live folder fails HashLive as it fails
// plan.HashTree, index or not.
func TestHashLiveFifo(t *testing.T) {
	dir, _ := liveTree(t, 30)
	c, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.HashLive(dir); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "d03", "pipe"), 0o644); err != nil {
		t.Skip("no fifo here:", err)
	}
	_, want := plan.HashTree(dir)
	_, err = c.HashLive(dir)
	if err == nil || want == nil || err.Error() != want.Error() || !strings.Contains(err.Error(), "d03/pipe is not a regular file") {
		t.Errorf("HashLive: %v, HashTree: %v", err, want)
	}
}
