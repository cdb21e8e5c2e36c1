package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/skillgate/skillgate/pipeline"

	"github.com/opencontainers/go-digest"
)

// HashTreeParallel is HashTreeWith on several goroutines: folders are
// listed and their entries lstat'ed in parallel, then the regular files
// hashed in parallel, so hash must be safe to call from several goroutines
// at once. It gives the tree and the error HashTreeWith gives, hash called
// with the same arguments: entries are taken in the walk's order and the
// first error in that order is the one reported. No file after a folder,
// link or entry that failed is hashed, nor, once it is seen, any after a
// file whose hash failed.
func HashTreeParallel(dir string, hash FileHasher) (Tree, error) {
	return HashTreeListing(dir, hash, nil)
}

// HashTreeListing is HashTreeParallel telling listing (when not nil) of
// each folder's path just before the folder is listed, from the walk's
// goroutines at once: what listing sets up on a folder (a watch on it) is
// in place before any entry of it is read.
func HashTreeListing(dir string, hash FileHasher, listing func(folder string)) (Tree, error) {
	if hash == nil {
		hash = func(p, _ string, _ os.FileInfo) (digest.Digest, error) { return pipeline.FileDigest(p) }
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return Tree{}, fmt.Errorf("hash tree %s: %w", dir, err)
	}
	if !info.IsDir() {
		return HashTreeWith(dir, hash) // a tree of one entry, "."
	}
	workers := min(runtime.GOMAXPROCS(0), 8)
	top := &folder{p: dir, top: true}
	listAll(top, workers, listing)
	files, err := top.inWalkOrder(nil)
	if herr := hashAll(files, hash, workers); herr != nil {
		err = herr // a file before the entry that failed, if one did
	}
	if err != nil {
		return Tree{}, fmt.Errorf("hash tree %s: %w", dir, err)
	}
	t := Tree{Files: make(map[string]TreeEntry, len(files))}
	var h lineHash
	top.inPathOrder(func(it *entry) {
		t.Files[it.rel] = it.e
		t.Bytes += it.e.Size
		h.add(it.rel, it.e)
	})
	t.Digest = h.sum()
	return t, nil
}

// A folder of the walk: p as filepath.WalkDir names it, rel its
// slash-separated path in the tree ("" at the top), and once listed its
// entries by name, or the error listing it gave.
type folder struct {
	p, rel  string
	top     bool
	entries []entry
	err     error
}

// An entry of a folder: a folder (sub), or a file whose tree entry is e
// once hashed, or the error taking it gave. info is the Lstat of a
// regular file.
type entry struct {
	name, p, rel string
	sub          *folder
	info         os.FileInfo
	e            TreeEntry
	err          error
}

// list lists f, lstats its entries but folders (their kind is the
// listing's, as for filepath.WalkDir) and reads its links; it stops at
// the first entry that fails. It returns f's folders.
func (f *folder) list() (subs []*folder) {
	l, names, err := openList(f.p)
	if err != nil {
		f.err = err
		return nil
	}
	defer l.close()
	f.entries = make([]entry, len(names))
	for i, d := range names {
		it := &f.entries[i]
		it.name = d.Name()
		if f.top {
			it.p, it.rel = filepath.Join(f.p, it.name), it.name
		} else {
			it.p, it.rel = f.p+string(filepath.Separator)+it.name, f.rel+"/"+it.name
		}
		if d.IsDir() {
			it.sub = &folder{p: it.p, rel: it.rel}
			subs = append(subs, it.sub)
			continue
		}
		if it.err = it.take(l, i); it.err != nil {
			f.entries = f.entries[:i+1]
			break
		}
	}
	return subs
}

// take lstats the file it, the i-th of the listing l, and reads it if a link.
func (it *entry) take(l *listing, i int) error {
	info, err := l.lstat(i, it.name)
	if err != nil {
		return err
	}
	switch {
	case info.Mode()&os.ModeSymlink != 0:
		target, err := os.Readlink(it.p)
		if err != nil {
			return err
		}
		it.e = TreeEntry{Digest: digest.FromString(filepath.ToSlash(target)), Mode: "symlink", Size: int64(len(target))}
	case info.Mode().IsRegular():
		it.info = info
		it.e = TreeEntry{Size: info.Size()}
		if info.Mode()&0o111 != 0 {
			it.e.Mode = "exec"
		}
	default:
		return fmt.Errorf("%s is not a regular file, folder or symlink", it.rel)
	}
	return nil
}

// listAll lists top and every folder under it on workers goroutines,
// telling listing of each first.
func listAll(top *folder, workers int, listing func(string)) {
	q := &queue{folders: []*folder{top}, pending: 1, listing: listing}
	q.cond.L = &q.mu
	var wg sync.WaitGroup
	for range workers {
		wg.Go(q.work)
	}
	wg.Wait()
}

// queue holds the folders left to list; pending counts those not yet
// listed, queued or being listed.
type queue struct {
	mu      sync.Mutex
	cond    sync.Cond
	folders []*folder
	pending int
	listing func(string)
}

func (q *queue) work() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		for len(q.folders) == 0 && q.pending > 0 {
			q.cond.Wait()
		}
		if q.pending == 0 {
			return
		}
		f := q.folders[len(q.folders)-1]
		q.folders = q.folders[:len(q.folders)-1]
		q.mu.Unlock()
		if q.listing != nil {
			q.listing(f.p)
		}
		subs := f.list()
		q.mu.Lock()
		q.folders = append(q.folders, subs...)
		q.pending += len(subs) - 1
		if len(subs) > 0 || q.pending == 0 {
			q.cond.Broadcast()
		}
	}
}

// inWalkOrder appends the files under f to out in filepath.WalkDir's
// order, up to the first entry or folder that failed, and returns that
// failure.
func (f *folder) inWalkOrder(out []*entry) ([]*entry, error) {
	if f.err != nil {
		return out, f.err
	}
	for i := range f.entries {
		it := &f.entries[i]
		if it.err != nil {
			return out, it.err
		}
		if it.sub == nil {
			out = append(out, it)
			continue
		}
		var err error
		if out, err = it.sub.inWalkOrder(out); err != nil {
			return out, err
		}
	}
	return out, nil
}

// inPathOrder calls fn on the files under f, every folder listed without
// failure, sorted by path: a folder's entries by name, a folder's name
// taken with the "/" its paths go on with.
func (f *folder) inPathOrder(fn func(*entry)) {
	es := f.entries
	if !slices.IsSortedFunc(es, byPath) {
		es = slices.Clone(es)
		slices.SortFunc(es, byPath)
	}
	for i := range es {
		if es[i].sub != nil {
			es[i].sub.inPathOrder(fn)
		} else {
			fn(&es[i])
		}
	}
}

// byPath orders two entries of a folder as the paths in or under them
// sort: by name, a folder's name followed by "/". No two such names are
// equal, nor one a prefix of the other.
func byPath(a, b entry) int {
	n := min(len(a.name), len(b.name))
	if c := strings.Compare(a.name[:n], b.name[:n]); c != 0 {
		return c
	}
	next := func(x entry) int {
		switch {
		case len(x.name) > n:
			return int(x.name[n])
		case x.sub != nil:
			return '/'
		}
		return -1
	}
	return next(a) - next(b)
}

// hashAll hashes the regular files of files on workers goroutines and
// returns the first error in files' order; no file after one that failed
// is hashed.
func hashAll(files []*entry, hash FileHasher, workers int) error {
	const chunk = 32
	var next atomic.Int64
	var failed atomic.Int64 // the least index of a file that failed
	failed.Store(int64(len(files)))
	run := func() {
		for {
			start := int(next.Add(chunk)) - chunk
			if start >= len(files) {
				return
			}
			for i := start; i < min(start+chunk, len(files)); i++ {
				it := files[i]
				if it.info == nil || int64(i) > failed.Load() {
					continue
				}
				if it.e.Digest, it.err = hash(it.p, it.rel, it.info); it.err != nil {
					for f := failed.Load(); int64(i) < f && !failed.CompareAndSwap(f, int64(i)); f = failed.Load() {
					}
				}
			}
		}
	}
	if len(files) <= chunk || workers <= 1 {
		run()
	} else {
		var wg sync.WaitGroup
		for range min(workers, (len(files)+chunk-1)/chunk) {
			wg.Go(run)
		}
		wg.Wait()
	}
	if i := failed.Load(); i < int64(len(files)) {
		return files[i].err
	}
	return nil
}
