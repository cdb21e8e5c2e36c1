package store

import (
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/skillgate/skillgate/pipeline/runfolder"

	"github.com/opencontainers/go-digest"
)

// A tree snapshot's files are most of a run folder's bytes, and its root
// digest (Root) covers every byte of the folder. A tree placed from the
// machine's cache leaves a stat record of its files at
// .stat-records/HEX: each file's stat as linked, with the digest it was
// verified to hold. Root takes a snapshot file's digest from that record
// while a stat of the file is exactly the one recorded, as the cache
// trusts its own records (a write, a mode set, the modification time set
// back, and another link to the file made or removed all move its change
// time), and reads the file otherwise. The records are machine-local, as
// the lock is (packSkipped): never part of the root, of an export or of a
// merge.

// DirKnown holds the stat records of a run folder's placed trees.
const DirKnown = runfolder.DirStatRecords

// recordTree writes the stat record of the snapshot of tree, known its
// files' stats as placed; nothing when none is known. A record that cannot
// be written is no error: Root then reads the files.
func (s *Store) recordTree(tree digest.Digest, known map[string]KnownFile) {
	if len(known) == 0 {
		return
	}
	dir := filepath.Join(s.Dir, DirKnown)
	if os.MkdirAll(dir, 0o755) != nil {
		return
	}
	f, err := os.CreateTemp(dir, ".record-")
	if err != nil {
		return
	}
	_, err = f.Write(EncodeKnown(tree.String(), known))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, tree.Encoded()))
	}
	if err != nil {
		os.Remove(f.Name())
	}
}

// treeRecords reads the stat records of out's placed trees as Root asks
// for them, each once.
type treeRecords struct {
	out string
	mu  sync.Mutex
	by  map[string]map[string]KnownFile // by tree HEX; nil: none or damaged
}

// lookup gives the record of the file at rel (a run folder path) when it
// is a tree snapshot's file and its tree has a record of it.
func (r *treeRecords) lookup(rel string) (KnownFile, bool) {
	inTree, ok := strings.CutPrefix(rel, DirTrees+"/")
	hex, file, _ := strings.Cut(inTree, "/")
	if !ok || !isHexKey(hex) || file == "" {
		return KnownFile{}, false
	}
	r.mu.Lock()
	files, read := r.by[hex]
	if !read {
		if b, err := os.ReadFile(filepath.Join(r.out, filepath.FromSlash(DirKnown), hex)); err == nil {
			files = DecodeKnownUnder(b, "sha256:"+hex)
		}
		if r.by == nil {
			r.by = map[string]map[string]KnownFile{}
		}
		r.by[hex] = files
	}
	r.mu.Unlock()
	k, ok := files[file]
	return k, ok
}
