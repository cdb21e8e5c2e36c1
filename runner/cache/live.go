package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
// or found one gone; a damaged one is ignored. Errors in keeping the index never fail the hash.
func (c *Cache) HashLive(dir string) (plan.Tree, error) { return c.hashLive(dir, nil) }

// hashLive is HashLive telling seen of every regular file the walk
// stat'ed, with its stat.
func (c *Cache) hashLive(dir string, seen func(p string, info os.FileInfo)) (plan.Tree, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return plan.HashTree(dir)
	}
	sum := sha256.Sum256([]byte(abs))
	key := hex.EncodeToString(sum[:])
	index := filepath.Join(c.Dir, DirIndex, key)
	var known map[string]store.KnownFile
	var trustBefore int64 // change times from this (ns) on are racy
	if b, err := os.ReadFile(index); err == nil {
		if head, files := store.DecodeKnown(b); files != nil {
			k, taken, _ := strings.Cut(head, " ")
			if ns, err := strconv.ParseInt(taken, 10, 64); err == nil && k == key {
				known, trustBefore = files, ns-int64(RacyMargin)
			}
		}
	}
	taken := time.Now().UnixNano()
	now := map[string]store.KnownFile{}
	read := 0
	t, err := plan.HashTreeWith(abs, func(p, rel string, info os.FileInfo) (digest.Digest, error) {
		if seen != nil {
			seen(p, info)
		}
		st, stated := store.StatOf(info)
		if k, ok := known[rel]; ok && stated && k.Stat == st && st.Mtime < trustBefore && st.Ctime < trustBefore {
			now[rel] = k
			return k.Digest, nil
		}
		read++
		dg, err := pipeline.FileDigest(p)
		if err == nil && stated {
			now[rel] = store.KnownFile{Stat: st, Digest: dg}
		}
		return dg, err
	})
	if err != nil {
		return t, err
	}
	if read == 0 && len(now) == len(known) {
		touchIndex(index) // every entry trusted, none gone: the index stands as it is
		return t, nil
	}
	if os.MkdirAll(filepath.Join(c.Dir, DirIndex), 0o755) == nil {
		c.writeRecord(index, store.EncodeKnown(key+" "+strconv.FormatInt(taken, 10), now))
	}
	return t, nil
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
