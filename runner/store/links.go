package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/skillgate/skillgate/pipeline"
	"github.com/skillgate/skillgate/pipeline/fswalk"

	"github.com/opencontainers/go-digest"
)

// CheckLinks refuses a run folder that holds a link anywhere but inside a
// tree snapshot (store/trees/HEX/), or a link there that leads out of its
// tree: no command follows a link out of a run folder, so a link at
// store/grades cannot make a run write elsewhere, nor a linked transcript
// put a host file into a report. What is being written (store/tmp) and the
// lock are not looked at.
func CheckLinks(out string) error {
	if err := checkLinks(out); err != nil {
		return fmt.Errorf("check run folder %s: %w", out, err)
	}
	return nil
}

func checkLinks(out string) error {
	rel := func(p string) string {
		r, _ := filepath.Rel(out, p)
		return filepath.ToSlash(r)
	}
	err := fswalk.WalkAll(out, fswalk.Funcs{
		Folder: func(p string) error {
			if packSkipped(rel(p)) {
				return fswalk.SkipDir
			}
			return nil
		},
		Link: func(p string) error {
			r := rel(p)
			if r == "." || packSkipped(r) {
				return nil
			}
			target, err := os.Readlink(p)
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile (a record replaced)
			}
			if err != nil {
				return err
			}
			return treeLink(r, target)
		},
		Other: func(p string, _ fs.FileMode) error {
			if r := rel(p); !packSkipped(r) {
				return fmt.Errorf("%s is neither a file nor a folder", r)
			}
			return nil
		},
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil // a folder removed meanwhile
	}
	return err
}

// treeLink accepts a link at rel (a path of the run folder) only inside a
// tree snapshot, relative, leading to a path strictly inside that tree
// below the link's own folder's tree root (never the root or above it).
func treeLink(rel, target string) error {
	const trees = DirTrees + "/"
	inTree, ok := strings.CutPrefix(rel, trees)
	hex, inside, _ := strings.Cut(inTree, "/")
	if !ok || !isHexKey(hex) || inside == "" {
		return fmt.Errorf("%s is a link (to %s): a run folder holds links only inside its tree snapshots", rel, target)
	}
	to := path.Join(path.Dir(inside), filepath.ToSlash(target))
	if path.IsAbs(target) || to == "." || to == ".." || strings.HasPrefix(to, "../") {
		return fmt.Errorf("%s is a link to %s, out of its tree", rel, target)
	}
	return nil
}

// Root is the run folder's root digest: one digest over every stored
// record (the plan, the calibration and shard records, and the store but
// what is being written), each by its path and content digest. Reports
// print it, so a reviewer compares the folder they read with the one the
// run left: any record edited, added or removed, even sealed again, gives
// another root.
func Root(out string) (digest.Digest, error) {
	var entries []rootEntry
	var hosts []string // by entry; "" for a link
	add := func(p, rel string, d fs.DirEntry) error {
		if d.Type()&fs.ModeSymlink != 0 {
			t, err := os.Readlink(p)
			entries, hosts = append(entries, rootEntry{Path: rel, Link: t}), append(hosts, "")
			return err
		}
		entries, hosts = append(entries, rootEntry{Path: rel}), append(hosts, p)
		return nil
	}
	for _, f := range []string{FilePlan, FileCalibration, FileShard, FileMerge} {
		fi, err := os.Lstat(filepath.Join(out, f))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("digest run folder %s: %w", out, err)
		}
		if err := add(filepath.Join(out, f), f, fs.FileInfoToDirEntry(fi)); err != nil {
			return "", fmt.Errorf("digest run folder %s: %w", out, err)
		}
	}
	err := filepath.WalkDir(filepath.Join(out, "store"), func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == filepath.Join(out, "store") {
			return filepath.SkipDir
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		rel = filepath.ToSlash(rel)
		if packSkipped(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		return add(p, rel, d)
	})
	if err == nil {
		// The files' bytes are read on every core, but a placed tree's
		// files whose stats are still the ones recorded as they were
		// placed (root_known.go): a fixture's snapshot can hold most of a
		// folder's bytes.
		records := &treeRecords{out: out}
		err = forEachFile(len(entries), func(i int) (err error) {
			if hosts[i] == "" {
				return nil
			}
			if k, ok := records.lookup(entries[i].Path); ok {
				if info, err := os.Lstat(hosts[i]); err == nil {
					if st, ok := StatOf(info); ok && st == k.Stat {
						entries[i].Digest = k.Digest
						return nil
					}
				}
			}
			entries[i].Digest, err = pipeline.FileDigest(hosts[i])
			return err
		})
	}
	if err != nil {
		return "", fmt.Errorf("digest run folder %s: %w", out, err)
	}
	slices.SortFunc(entries, func(a, b rootEntry) int { return strings.Compare(a.Path, b.Path) })
	b := encodeRoot(entries)
	return digest.FromBytes(b), nil
}

// rootEntry is one file or link of a run folder in its root digest.
type rootEntry struct {
	Path   string        `json:"path"`
	Digest digest.Digest `json:"digest,omitempty"`
	Link   string        `json:"link,omitempty"`
}

// encodeRoot is encoding/json's bytes of entries, written by hand: a
// fixture's snapshot gives a folder tens of thousands.
func encodeRoot(entries []rootEntry) []byte {
	if entries == nil {
		return []byte("null")
	}
	b := make([]byte, 0, 2+len(entries)*128)
	b = append(b, '[')
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = pipeline.AppendJSONString(append(b, `{"path":`...), e.Path)
		if e.Digest != "" {
			b = pipeline.AppendJSONString(append(b, `,"digest":`...), string(e.Digest))
		}
		if e.Link != "" {
			b = pipeline.AppendJSONString(append(b, `,"link":`...), e.Link)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// OpenLock opens the run folder's lock file without following a link: a link
// at its path (which would have skillgate create or open a file anywhere) or
// anything but a regular file is refused, before anything else of the folder
// is read. With create, a missing lock is made; without, it is fs.ErrNotExist.
func OpenLock(out string, create bool) (*os.File, error) {
	flag := os.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK
	if create {
		flag = os.O_CREATE | os.O_RDWR | syscall.O_NOFOLLOW | syscall.O_NONBLOCK
	}
	path := filepath.Join(out, FileLock)
	f, err := os.OpenFile(path, flag, 0o644)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("open %s: a link, refused: a run folder's files are never followed out of it", path)
	}
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("open %s: not a regular file (%s), refused", path, fi.Mode().Type())
		}
		return nil, err
	}
	return f, nil
}
