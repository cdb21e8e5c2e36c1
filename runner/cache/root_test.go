package cache

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/opencontainers/go-digest"
)

// TestRootTakesPlacedRecords: a run folder's root digest takes a placed
// tree's file digests from the stat record its placement left, while each
// file's stat is exactly the recorded one, and reads the file otherwise: the
// root is the same with the record and without; a record lying about a
// file's digest under its true stat is believed (so it is what Root used),
// one whose stat is off is not; and a byte of a placed file changed with its
// size and modification time kept changes the root, record or none.
func TestRootTakesPlacedRecords(t *testing.T) {
	c, err := Open(t.TempDir())
	must(t, err)
	src, tree := liveTree(t, 40)
	snap := place(t, c, src, tree)
	out := filepath.Dir(filepath.Dir(filepath.Dir(snap))) // OUT/store/trees/HEX
	record := filepath.Join(out, filepath.FromSlash(store.DirKnown), tree.Digest.Encoded())
	b, err := os.ReadFile(record)
	must(t, err)
	known := store.DecodeKnownUnder(b, tree.Digest.String())
	if len(known) != len(tree.Files)-1 { // all but the link
		t.Fatalf("record of %d files, the tree has %d and a link", len(known), len(tree.Files)-1)
	}
	root := func() digest.Digest {
		t.Helper()
		r, err := store.Root(out)
		must(t, err)
		return r
	}
	if _, err := store.OpenStore(out); err != nil { // the record outlasts a reopening
		t.Fatal(err)
	}
	if _, err := os.Stat(record); err != nil {
		t.Fatalf("the record after the store was opened again: %v", err)
	}
	withRecord := root()
	must(t, os.Rename(record, record+".kept"))
	if without := root(); without != withRecord {
		t.Fatalf("root %s without the record, %s with it", without, withRecord)
	}
	lie := func(ctimeOff int64) {
		t.Helper()
		k := known["d03/f0003.txt"]
		k.Digest = digest.FromString("not its bytes")
		k.Stat.Ctime += ctimeOff
		lied := map[string]store.KnownFile{}
		for p, v := range known {
			lied[p] = v
		}
		lied["d03/f0003.txt"] = k
		must(t, os.WriteFile(record, store.EncodeKnown(tree.Digest.String(), lied), 0o644))
	}
	lie(0)
	if got := root(); got == withRecord {
		t.Error("a record's digest under the file's exact stat was not taken")
	}
	lie(1)
	if got := root(); got != withRecord {
		t.Errorf("a record whose stat is off was taken: root %s, want %s", got, withRecord)
	}
	must(t, os.Rename(record+".kept", record))

	p := filepath.Join(snap, "d05", "f0005.txt")
	info, err := os.Stat(p)
	must(t, err)
	must(t, os.Chmod(p, 0o644))
	must(t, os.WriteFile(p, []byte("FILE 5\n"), 0o644))
	must(t, os.Chmod(p, info.Mode()))
	must(t, os.Chtimes(p, time.Now(), info.ModTime()))
	if got := root(); got == withRecord {
		t.Error("a placed file changed with its size and time kept left the root as it was")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
