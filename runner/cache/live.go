package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skillgate/skillgate/pipeline"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/opencontainers/go-digest"
)

// DirIndex holds the stat index of each live folder hashed through the
// cache: index/KEY, KEY the SHA-256 of the folder's absolute path.
const DirIndex = "index"

// RacyMargin is how much older than the index's walk a file's
// modification and change times must be for its entry to be trusted: a
// file edited in the same clock tick as the stat recorded could keep that
// stat, so an entry recorded within the margin of the file's last change
// is hashed again at the next walk (git's "racy clean" rule).
const RacyMargin = 2 * time.Second

// HashLive hashes the live folder dir as plan.HashTree does, giving the
// same tree, except that a regular file whose stat is exactly the one the
// folder's index recorded with its digest, and whose last change was more
// than RacyMargin before that stat was taken, is not read. Every file is
// stat'ed, so a file added, removed, retyped, edited (its change time
// moves, whatever is done to its modification time) or replaced (its
// inode) is hashed. The index is rewritten after a walk that read a file
// or found one gone; a damaged one is ignored. Errors in keeping the index
// never fail the hash. The folder is walked by plan.HashTreeParallel, the
// index read while its entries are lstat'ed.
func (c *Cache) HashLive(dir string) (plan.Tree, error) { return c.hashLive(dir, nil, nil) }

// hashLive is HashLive telling listing of every folder before the walk
// lists it, and seen of every regular file the walk stat'ed, with its stat
// (from the walk's goroutines, at once).
func (c *Cache) hashLive(dir string, listing func(folder string), seen func(p string, info os.FileInfo)) (plan.Tree, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return plan.HashTree(dir)
	}
	sum := sha256.Sum256([]byte(abs))
	key := hex.EncodeToString(sum[:])
	index := filepath.Join(c.Dir, DirIndex, key)
	read := make(chan liveIndex, 1) // the index, read while the folder's entries are lstat'ed
	go func() { read <- readIndex(index, key) }()
	indexed := sync.OnceValue(func() liveIndex { return <-read })
	taken := time.Now().UnixNano()
	var (
		trusted atomic.Int64
		mu      sync.Mutex
		hashed  = map[string]store.KnownFile{} // files read, with their stat (none: not stated)
	)
	t, err := plan.HashTreeListing(abs, func(p, rel string, info os.FileInfo) (digest.Digest, error) {
		if seen != nil {
			seen(p, info)
		}
		ix := indexed()
		st, stated := store.StatOf(info)
		if k, ok := ix.files[rel]; ok && stated && k.Stat == st && st.Mtime < ix.trustBefore && st.Ctime < ix.trustBefore {
			trusted.Add(1)
			return k.Digest, nil
		}
		dg, err := pipeline.FileDigest(p)
		var k store.KnownFile
		if err == nil && stated {
			k = store.KnownFile{Stat: st, Digest: dg}
		}
		mu.Lock()
		hashed[rel] = k
		mu.Unlock()
		return dg, err
	}, listing)
	if err != nil {
		return t, err
	}
	ix := indexed()
	if len(hashed) == 0 && int(trusted.Load()) == len(ix.files) {
		touchIndex(index) // every entry trusted, none gone: the index stands as it is
		return t, nil
	}
	now := make(map[string]store.KnownFile, len(t.Files))
	for rel, e := range t.Files {
		if k, ok := hashed[rel]; ok {
			if k.Digest != "" {
				now[rel] = k
			}
		} else if e.Mode != "symlink" {
			now[rel] = ix.files[rel] // trusted
		}
	}
	if os.MkdirAll(filepath.Join(c.Dir, DirIndex), 0o755) == nil {
		c.writeRecord(index, store.EncodeKnown(key+" "+strconv.FormatInt(taken, 10), now))
	}
	return t, nil
}

// liveIndex is what a live folder's index holds: files by path, trusted
// while their change times are before trustBefore (ns).
type liveIndex struct {
	files       map[string]store.KnownFile
	trustBefore int64
}

// readIndex reads the index of the live folder whose key is key; empty
// when it is absent, damaged or another folder's.
func readIndex(index, key string) liveIndex {
	b, err := os.ReadFile(index)
	if err != nil {
		return liveIndex{}
	}
	head, files := store.DecodeKnown(b)
	if files == nil {
		return liveIndex{}
	}
	k, taken, _ := strings.Cut(head, " ")
	ns, err := strconv.ParseInt(taken, 10, 64)
	if err != nil || k != key {
		return liveIndex{}
	}
	return liveIndex{files: files, trustBefore: ns - int64(RacyMargin)}
}

// LiveHasher is HashWatched of the cache under dir, for
// plan.SetLiveHasher; plan.HashTree when the cache cannot be opened.
func LiveHasher(dir string) func(string) (plan.Tree, error) {
	return func(live string) (plan.Tree, error) {
		c, err := Open(dir)
		if err != nil {
			return plan.HashTree(live)
		}
		return c.HashWatched(live)
	}
}
