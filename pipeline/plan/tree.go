package plan

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/skillgate/skillgate/pipeline"

	"github.com/opencontainers/go-digest"
)

// TreeEntry is one file of a tree: its content digest, and its kind when it
// is not a plain file.
type TreeEntry struct {
	Digest digest.Digest `json:"digest"`
	// Mode is "" for a regular file, "exec" for an executable one and
	// "symlink" for a link, whose Digest is that of its target text.
	Mode string `json:"mode,omitempty"`
	Size int64  `json:"size"`
}

// Tree is a folder by content: every file by slash-separated path, and one
// digest over them all. Modification times and owners never enter it, so a
// tree has the same digest in every checkout.
type Tree struct {
	Digest digest.Digest        `json:"digest"`
	Bytes  int64                `json:"bytes"`
	Files  map[string]TreeEntry `json:"files"`
}

// HashTree reads a folder into a Tree. Empty folders are not part of it.
func HashTree(dir string) (Tree, error) { return HashTreeWith(dir, nil) }

// A FileHasher gives the digest of the bytes of the regular file p, at rel
// in its tree, whose Lstat is info: a store that knows the file by its
// stat may answer without reading it.
type FileHasher func(p, rel string, info os.FileInfo) (digest.Digest, error)

// HashTreeWith is HashTree with each regular file's digest from hash (nil:
// read and hashed).
func HashTreeWith(dir string, hash FileHasher) (Tree, error) {
	if hash == nil {
		hash = func(p, _ string, _ os.FileInfo) (digest.Digest, error) { return pipeline.FileDigest(p) }
	}
	t := Tree{Files: map[string]TreeEntry{}}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		var e TreeEntry
		switch {
		case info.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			e = TreeEntry{Digest: digest.FromString(filepath.ToSlash(target)), Mode: "symlink", Size: int64(len(target))}
		case info.Mode().IsRegular():
			dg, err := hash(p, rel, info)
			if err != nil {
				return err
			}
			e = TreeEntry{Digest: dg, Size: info.Size()}
			if info.Mode()&0o111 != 0 {
				e.Mode = "exec"
			}
		default:
			return fmt.Errorf("%s is not a regular file, folder or symlink", rel)
		}
		t.Files[rel] = e
		t.Bytes += e.Size
		return nil
	})
	if err != nil {
		return Tree{}, fmt.Errorf("hash tree %s: %w", dir, err)
	}
	t.Digest = t.digest()
	return t, nil
}

// ContentDigest is the digest of the tree's files as listed, which is its
// Digest for a tree HashTree made: a reader of a stored tree checks the
// two agree before trusting the list.
func (t Tree) ContentDigest() digest.Digest { return t.digest() }

// digest is the tree digest: one line per file, sorted by path.
func (t Tree) digest() digest.Digest {
	var h lineHash
	for _, p := range slices.Sorted(maps.Keys(t.Files)) {
		h.add(p, t.Files[p])
	}
	return h.sum()
}

// lineHash is the SHA-256 of a tree's lines, taken file by file in path
// order: path NUL mode NUL digest NL.
type lineHash struct {
	h   hash.Hash
	buf []byte
}

func (l *lineHash) add(p string, e TreeEntry) {
	if l.h == nil {
		l.h, l.buf = sha256.New(), make([]byte, 0, 32<<10)
	}
	if len(l.buf)+len(p)+len(e.Mode)+len(e.Digest)+3 > cap(l.buf) {
		l.h.Write(l.buf)
		l.buf = l.buf[:0]
	}
	l.buf = append(l.buf, p...)
	l.buf = append(l.buf, 0)
	l.buf = append(l.buf, e.Mode...)
	l.buf = append(l.buf, 0)
	l.buf = append(l.buf, e.Digest...)
	l.buf = append(l.buf, '\n')
}

func (l *lineHash) sum() digest.Digest {
	if l.h == nil {
		l.h = sha256.New()
	}
	l.h.Write(l.buf)
	return digest.NewDigest(digest.SHA256, l.h)
}

// TreeChange is one file that differs between two trees.
type TreeChange struct {
	Path   string `json:"path"`
	Change string `json:"change"` // added | removed | modified
}

// DiffTrees lists the files that differ from a to b, sorted by path.
func DiffTrees(a, b Tree) []TreeChange {
	var out []TreeChange
	for p, ea := range a.Files {
		eb, ok := b.Files[p]
		switch {
		case !ok:
			out = append(out, TreeChange{p, "removed"})
		case ea != eb:
			out = append(out, TreeChange{p, "modified"})
		}
	}
	for p := range b.Files {
		if _, ok := a.Files[p]; !ok {
			out = append(out, TreeChange{p, "added"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// liveHasher is what HashLive hashes a suite's folders with.
var liveHasher atomic.Pointer[func(dir string) (Tree, error)]

// HashLive is HashTree for a live folder of a suite (a skill, a fixture, a
// Dockerfile folder) as a plan compiles it: through the hasher SetLiveHasher
// gave (a machine cache's stat index of the folder), else HashTree.
func HashLive(dir string) (Tree, error) {
	if fn := liveHasher.Load(); fn != nil {
		return (*fn)(dir)
	}
	return HashTree(dir)
}

// SetLiveHasher has HashLive hash through fn (nil: HashTree). fn gives the
// tree HashTree gives, or an error.
func SetLiveHasher(fn func(dir string) (Tree, error)) {
	if fn == nil {
		liveHasher.Store(nil)
		return
	}
	liveHasher.Store(&fn)
}
