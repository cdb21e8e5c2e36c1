package cache

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/opencontainers/go-digest"
)

// A stat record (trees/HEX.stat for a snapshot, index/KEY for a live
// folder) is store's (store.EncodeKnown): files by path, each with the
// stat it had when its digest was last known.

// writeRecord writes b at path atomically, through tmp/: processes that
// write the same record at once each write a whole one, the last kept.
func (c *Cache) writeRecord(path string, b []byte) {
	f, err := os.CreateTemp(filepath.Join(c.Dir, DirTmp), "stat-")
	if err != nil {
		return
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
}

func (c *Cache) statFile(tree digest.Digest) string {
	return c.TreeDir(tree) + ".stat"
}

// known reads the stat record of the snapshot of tree (nil: none, or
// damaged). A snapshot's files are read-only and were verified against the
// plan when the stats recorded were taken: at the snapshot's making, or
// just after a run folder linked them (a link changes a file's change
// time, so whoever links records the stats again).
func (c *Cache) known(tree digest.Digest) map[string]store.KnownFile {
	b, err := os.ReadFile(c.statFile(tree))
	if err != nil {
		return nil
	}
	return store.DecodeKnownUnder(b, tree.String())
}

// record writes the stat record of the snapshot of tree. Two processes
// placing the snapshot at once each write theirs; a file whose stat the
// other's link changed since is hashed at its next placement, then
// recorded again.
func (c *Cache) record(tree digest.Digest, files map[string]store.KnownFile) {
	if files != nil {
		c.writeRecord(c.statFile(tree), store.EncodeKnown(tree.String(), files))
	}
}

// statsOf records the stats of the files of dir, a snapshot just copied
// and verified against want, that nothing else has written.
func statsOf(dir string, want plan.Tree) map[string]store.KnownFile {
	out := make(map[string]store.KnownFile, len(want.Files))
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		e, ok := want.Files[rel]
		if err != nil || !ok {
			return nil
		}
		if st, ok := store.StatOf(info); ok {
			out[rel] = store.KnownFile{Stat: st, Digest: e.Digest}
		}
		return nil
	})
	return out
}
