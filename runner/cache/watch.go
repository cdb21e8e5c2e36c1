package cache

import (
	"maps"
	"os"
	"path/filepath"
	"sync"

	"github.com/skillgate/skillgate/pipeline/plan"
)

// A live folder hashed by HashWatched is watched for changes by its walk
// (Linux inotify: each folder of it from just before the walk lists it, and
// each file of it that has another name outside it), so that hashing it again in the same
// process, as a run does after its rollouts, gives the walk's tree without
// a second walk when nothing was reported since. Anything reported (a
// write, a change of mode or times, a file made, removed or renamed, the
// watch queue overflowing), the folder's own path now naming another
// folder, or a file of two names whose stat moved between the walk and its
// watch, and the folder is walked again. A folder is only watched on a
// local file system that reports every change made through it (ext2/3/4,
// XFS, Btrfs, tmpfs, F2FS), whole (no other file system mounted inside),
// and within maxWatches watches; elsewhere, HashWatched is HashLive.
//
// What inotify does not report is not seen: a write through a shared
// memory mapping of a file. Such a write still moves the file's times, so
// the next process's walk sees it; the cells of a run always run the bytes
// pinned for them either way.

// maxWatchedFolders is how many folders the process keeps watched at once;
// the least recently hashed is let go beyond it.
const maxWatchedFolders = 16

// maxWatches bounds the watches one folder may take (folders and files of
// two names), as does watchBudget, which all folders share: a folder that
// needs more is walked each time.
var maxWatches = 8192

var watched struct {
	sync.Mutex
	by    map[string]*folderWatch
	order []string // least recently hashed first
}

// watchWalks counts the walks HashWatched made (for tests).
var watchWalks int

// HashWatched is HashLive, but a folder this process already walked
// through it and has watched since, with no change reported, is given the
// tree of that walk without walking it again.
func (c *Cache) HashWatched(dir string) (plan.Tree, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return c.HashLive(dir)
	}
	if t, ok := takeUnchanged(abs); ok {
		return t, nil
	}
	w := startWatch(abs)
	watched.Lock()
	watchWalks++
	watched.Unlock()
	var listing func(string)
	var seen func(string, os.FileInfo)
	if w != nil {
		listing, seen = w.folder, w.seen
	}
	t, err := c.hashLive(abs, listing, seen)
	if err != nil || w == nil || !w.settle() {
		if w != nil {
			w.close()
		}
		return t, err
	}
	w.tree = t
	keepWatch(abs, w)
	return t, nil
}

// takeUnchanged gives the tree of abs's watched walk when nothing changed
// since; a watch that saw a change is let go.
func takeUnchanged(abs string) (plan.Tree, bool) {
	watched.Lock()
	defer watched.Unlock()
	w := watched.by[abs]
	if w == nil {
		return plan.Tree{}, false
	}
	if !w.unchanged() || !w.sameRoot(abs) {
		w.close()
		delete(watched.by, abs)
		watched.order = deleteString(watched.order, abs)
		return plan.Tree{}, false
	}
	watched.order = append(deleteString(watched.order, abs), abs)
	t := w.tree
	t.Files = maps.Clone(t.Files)
	return t, true
}

// keepWatch keeps w as abs's watch, letting go of the one it replaces and
// of the least recently hashed beyond maxWatchedFolders.
func keepWatch(abs string, w *folderWatch) {
	watched.Lock()
	defer watched.Unlock()
	if watched.by == nil {
		watched.by = map[string]*folderWatch{}
	}
	if old := watched.by[abs]; old != nil {
		old.close()
	}
	watched.by[abs] = w
	watched.order = append(deleteString(watched.order, abs), abs)
	total := 0
	for _, w := range watched.by {
		total += w.size()
	}
	for len(watched.order) > maxWatchedFolders || len(watched.order) > 1 && total > watchBudget() {
		oldest := watched.order[0]
		total -= watched.by[oldest].size()
		watched.by[oldest].close()
		delete(watched.by, oldest)
		watched.order = watched.order[1:]
	}
}

// Unwatch lets go of every folder's watch: the next HashWatched of each
// walks it, as a new process would.
func Unwatch() {
	watched.Lock()
	defer watched.Unlock()
	for _, w := range watched.by {
		w.close()
	}
	watched.by, watched.order = nil, nil
}

func deleteString(s []string, v string) []string {
	out := s[:0]
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}
