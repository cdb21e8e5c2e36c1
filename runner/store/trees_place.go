package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"

	"github.com/skillgate/skillgate/pipeline"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/internal/bounded"

	"github.com/opencontainers/go-digest"
)

// statAt is what placing a file reads of its stat (dirAt.lstat).
type statAt struct {
	kind   byte // kindRegular, kindDir, kindSymlink; kindOther for anything else
	perm   uint32
	stat   FileStat
	stated bool // stat holds what an edit changes (false where the system gives no inode or change time)
}

const (
	kindOther = iota
	kindRegular
	kindDir
	kindSymlink
)

// mode is the tree mode of the file: "", "exec" or "symlink".
func (s statAt) mode() (string, error) {
	switch s.kind {
	case kindSymlink:
		return "symlink", nil
	case kindRegular:
		if s.perm&0o111 != 0 {
			return "exec", nil
		}
		return "", nil
	default:
		return "", errors.New("not a regular file, folder or symlink")
	}
}

// placing is a snapshot being placed: its regular files in path order,
// each with its folder, once the walk (walkPlacing) has checked the paths
// against the plan and placed the symlinks.
type placing struct {
	src, dst string
	folders  []*placingDir // every folder of src, the root first
	files    []placingFile
}

type placingFile struct {
	rel    string // path in the tree
	name   string // in its folder: the end of rel
	folder int    // index in folders
	want   plan.TreeEntry
}

// placingDir is a folder of the snapshot, made at dst once, by the first
// worker to place a file in it or below it: no folder is made empty.
type placingDir struct {
	rel    string // path in the tree, "" the root
	parent int    // index in folders, -1 for the root
	once   sync.Once
	err    error
}

// host is the file rel of the snapshot, as errors name it.
func (p *placing) host(rel string) string { return filepath.Join(p.src, filepath.FromSlash(rel)) }

// made makes the folder i at dst, and its parents first, once.
func (p *placing) made(i int) error {
	d := p.folders[i]
	d.once.Do(func() {
		if d.parent < 0 {
			return // dst itself
		}
		if d.err = p.made(d.parent); d.err == nil {
			d.err = os.Mkdir(filepath.Join(p.dst, filepath.FromSlash(d.rel)), 0o755)
		}
	})
	return d.err
}

// walkPlacing walks the snapshot src in path order, reading its folders
// (not its files' stats), and fails at the first path the plan lacks, of
// a kind a folder walk tells apart from the plan's (a symlink, or neither
// file, folder nor symlink), or a symlink whose target is not the plan's;
// then at the first of the plan's paths missing. It places each symlink at
// dst; the regular files are the caller's to place.
func walkPlacing(src, dst string, want plan.Tree) (*placing, error) {
	info, err := os.Lstat(src)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%s: not a folder", src)
	}
	w := &placingWalk{p: &placing{src: src, dst: dst, files: make([]placingFile, 0, len(want.Files))}, want: want}
	if err := w.walk("", -1); err != nil {
		return nil, err
	}
	if w.seen != len(want.Files) {
		seen := make(map[string]bool, w.seen)
		for _, f := range w.p.files {
			seen[f.rel] = true
		}
		for _, l := range w.links {
			seen[l] = true
		}
		var missing []string
		for p := range want.Files {
			if !seen[p] {
				missing = append(missing, p)
			}
		}
		slices.Sort(missing)
		return nil, fmt.Errorf("%s: in the plan, missing from the snapshot", w.p.host(missing[0]))
	}
	return w.p, nil
}

type placingWalk struct {
	p     *placing
	want  plan.Tree
	seen  int      // paths found in the plan
	links []string // the symlinks' paths
}

// walk walks the folder rel, whose parent is the folder of that index.
func (w *placingWalk) walk(rel string, parent int) error {
	ents, err := os.ReadDir(w.p.host(rel))
	if err != nil {
		return err
	}
	folder := len(w.p.folders)
	w.p.folders = append(w.p.folders, &placingDir{rel: rel, parent: parent})
	for _, d := range ents {
		r := d.Name()
		if rel != "" {
			r = rel + "/" + r
		}
		if d.IsDir() {
			if err := w.walk(r, folder); err != nil {
				return err
			}
			continue
		}
		e, ok := w.want.Files[r]
		if !ok {
			return fmt.Errorf("%s: not in the plan", w.p.host(r))
		}
		w.seen++
		switch t := d.Type(); {
		case t.IsRegular(): // its kind, exec or not, told by its stat as it is placed
			w.p.files = append(w.p.files, placingFile{rel: r, name: d.Name(), folder: folder, want: e})
		case t&os.ModeSymlink != 0:
			if err := w.link(r, folder, e); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: not a regular file, folder or symlink", w.p.host(r))
		}
	}
	return nil
}

// link checks the symlink rel of the snapshot, in the folder of that
// index, against e and places it.
func (w *placingWalk) link(rel string, folder int, e plan.TreeEntry) error {
	w.links = append(w.links, rel)
	if e.Mode != "symlink" {
		return fmt.Errorf("%s: %s, the plan says %s", w.p.host(rel), entryKind("symlink"), entryKind(e.Mode))
	}
	target, err := os.Readlink(w.p.host(rel))
	if err != nil {
		return err
	}
	target = filepath.ToSlash(target)
	if got := digest.FromString(target); got != e.Digest {
		return fmt.Errorf("%s: symlink to %s (digest %s), the plan says %s", w.p.host(rel), target, got, e.Digest)
	}
	if err := w.p.made(folder); err != nil {
		return err
	}
	return os.Symlink(target, filepath.Join(w.p.dst, filepath.FromSlash(rel)))
}

// placeRunSize bounds the files one worker places at a time: a folder's
// files are placed in runs, so a tree of one large folder uses every
// worker too.
const placeRunSize = 128

// placed is what placing a run of files found: the error of its first
// file (by path) whose kind is not the plan's, and of its first that
// failed otherwise.
type placed struct {
	kindErr, failErr error
}

// place links and verifies the regular files of p, runs of files of one
// folder at once on hashWorkers workers, each file by its stat relative
// to its folder's open handle (placeFile). It fails naming the first file
// (by path) whose kind is not the plan's, else the first that failed. It
// returns what is known of each file once linked, by path.
func (p *placing) place(known map[string]KnownFile) (map[string]KnownFile, error) {
	var runs [][2]int
	for lo := 0; lo < len(p.files); {
		hi := lo + 1
		for hi < len(p.files) && hi-lo < placeRunSize && p.files[hi].folder == p.files[lo].folder {
			hi++
		}
		runs = append(runs, [2]int{lo, hi})
		lo = hi
	}
	now := make([]KnownFile, len(p.files))
	stated := make([]bool, len(p.files))
	results := make([]placed, len(runs))
	index := make([]int, len(runs))
	for i := range index {
		index[i] = i
	}
	bounded.ForEach(context.Background(), hashWorkers(), index, func(r int) {
		results[r] = p.placeRun(runs[r][0], runs[r][1], known, now, stated)
	})
	var kindErr, failErr error
	for _, r := range results {
		if kindErr == nil && r.kindErr != nil {
			kindErr = r.kindErr
		}
		if failErr == nil && r.failErr != nil {
			failErr = r.failErr
		}
	}
	if kindErr != nil {
		return nil, kindErr
	}
	if failErr != nil {
		return nil, failErr
	}
	out := make(map[string]KnownFile, len(p.files))
	for i, f := range p.files {
		if stated[i] {
			out[f.rel] = now[i]
		}
	}
	return out, nil
}

// placeRun places the files lo to hi, all of one folder.
func (p *placing) placeRun(lo, hi int, known map[string]KnownFile, now []KnownFile, stated []bool) placed {
	var res placed
	folder := p.files[lo].folder
	rel := p.folders[folder].rel
	if err := p.made(folder); err != nil {
		res.failErr = err
		return res
	}
	src, err := openDirAt(filepath.Join(p.src, filepath.FromSlash(rel)))
	if err != nil {
		res.failErr = err
		return res
	}
	defer src.close()
	dst, err := openDirAt(filepath.Join(p.dst, filepath.FromSlash(rel)))
	if err != nil {
		res.failErr = err
		return res
	}
	defer dst.close()
	for i := lo; i < hi; i++ {
		k, ok, kindErr, err := p.placeFile(&p.files[i], src, dst, known)
		switch {
		case kindErr != nil:
			if res.kindErr == nil {
				res.kindErr = kindErr
			}
		case err != nil:
			if res.failErr == nil {
				res.failErr = err
			}
		default:
			now[i], stated[i] = k, ok
		}
	}
	return res
}

// placeFile links the file f from the folder src into dst and proves the
// link holds the plan's bytes: trusted, not hashed, when the file's stat
// just before the link is exactly the one known with the plan's digest and
// the link's stat after says the same inode with the same bytes (a link
// changes only its change time); hashed through the link otherwise. Where
// a link is refused (another file system), the file is copied and hashed
// while copied. It returns the link's stat (false when the system gives
// none, or the file was copied), or an error of the file's kind (kindErr)
// or of its placing (err).
func (p *placing) placeFile(f *placingFile, src, dst dirAt, known map[string]KnownFile) (k KnownFile, ok bool, kindErr, err error) {
	pre, err := src.lstat(f.name)
	if err != nil {
		return k, false, nil, err
	}
	mode, err := pre.mode()
	if err != nil {
		return k, false, fmt.Errorf("%s: %w", p.host(f.rel), err), nil
	}
	if mode != f.want.Mode {
		return k, false, fmt.Errorf("%s: %s, the plan says %s", p.host(f.rel), entryKind(mode), entryKind(f.want.Mode)), nil
	}
	if pre.perm&0o222 != 0 {
		return k, false, nil, fmt.Errorf("%s: writable, a snapshot's files are read-only", p.host(f.rel))
	}
	kn, found := known[f.rel]
	trusted := pre.stated && found && kn.Stat == pre.stat && kn.Digest == f.want.Digest
	out := func() string { return filepath.Join(dst.path, f.name) }
	if err := linkAt(src, dst, f.name); err != nil {
		if errors.Is(err, syscall.EXDEV) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EMLINK) {
			got, err := copyHashed(p.host(f.rel), out(), mode == "exec")
			if err != nil {
				return k, false, nil, err
			}
			if got != f.want.Digest {
				return k, false, nil, fmt.Errorf("%s: digest %s, the plan says %s", p.host(f.rel), got, f.want.Digest)
			}
			return k, false, nil, nil
		}
		return k, false, nil, &os.LinkError{Op: "link", Old: p.host(f.rel), New: out(), Err: err}
	}
	// The link's own stat: the inode linked, whatever the snapshot's path
	// names by now.
	post, err := dst.lstat(f.name)
	if err != nil {
		return k, false, nil, fmt.Errorf("%s: %w", p.host(f.rel), err)
	}
	if !trusted || !post.stated || !sameBytes(pre.stat, post.stat) {
		got, err := pipeline.FileDigest(out())
		if err != nil {
			return k, false, nil, fmt.Errorf("%s: %w", p.host(f.rel), err)
		}
		if got != f.want.Digest {
			return k, false, nil, fmt.Errorf("%s: digest %s, the plan says %s", p.host(f.rel), got, f.want.Digest)
		}
	}
	return KnownFile{Stat: post.stat, Digest: f.want.Digest}, post.stated, nil, nil
}
