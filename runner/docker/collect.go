package docker

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/docker/docker/api/types/container"

	"golang.org/x/sys/unix"
)

// Types of WorkspaceEntry. They are the words the stored changes use for
// the same types, so an entry's Type is stored as it is.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
	TypeOther   = "other"
)

// WorkspaceEntry is one path below a finished container's CollectPrefix as the container
// left it, relative to the image it started from: a file, folder, symlink or other entry
// written there, or a deletion of the image's entry.
type WorkspaceEntry struct {
	// Path is relative to the prefix, slash-separated; its elements may hold any byte but
	// NUL and '/'.
	Path string
	// Type is TypeFile, TypeDir, TypeSymlink or TypeOther; "" for a deletion.
	Type string
	// Deleted: the image's entry at Path, and everything below it, is gone.
	Deleted bool
	// Opaque: a folder that replaced the image's folder at Path; nothing of the image's
	// below it remains except what later entries name.
	Opaque bool
	// Listed: the entry is only listed, unchanged from the image (collections that list
	// the whole final workspace); it has no content to read.
	Listed bool
	Mode   fs.FileMode
	Size   int64
	Target string // a symlink's

	open func() (io.ReadCloser, error)
}

// Open returns a regular file's content. It is valid only while the entry is visited.
func (e WorkspaceEntry) Open() (io.ReadCloser, error) {
	if e.open == nil {
		return nil, fmt.Errorf("open %s: no content", e.Path)
	}
	return e.open()
}

// WithContent returns the entry with its content read from open, for a
// backend that reads a workspace another way than this package does.
func (e WorkspaceEntry) WithContent(open func() (io.ReadCloser, error)) WorkspaceEntry {
	e.open = open
	return e
}

// CollectLimits bound what a collection reads of a container's workspace.
type CollectLimits struct {
	// Entries is the most paths visited; past it the rest is cut. 0 means no bound.
	Entries int
	// Timeout bounds the whole collection; 0 means none.
	Timeout time.Duration
}

// Collection says how a container's workspace was read.
type Collection struct {
	// Method is "upper" (the container's own overlay layer, read on the host: the cost
	// follows the changes alone) or "api" (the engine's change list and an archive of
	// the workspace, where the upper layer cannot be read here).
	Method string `json:"method"`
	// Entries counts the paths visited.
	Entries int `json:"entries"`
	// Cut says why the collection stopped before the end; empty when complete.
	Cut string `json:"cut,omitempty"`
}

// errUpperUnsupported means the upper layer uses an overlay feature (redirected folders,
// metadata-only copies) whose content lives elsewhere: the engine's API must answer.
var errUpperUnsupported = errors.New("the overlay upper layer uses redirects or metadata-only copies")

// errCollectCut ends a collection at a limit; a CollectCut carries the reason.
var errCollectCut = errors.New("collection cut")

// CollectCut ends a collection at a limit, saying which: a visitor returns one to stop, and
// reading a file past the collection's deadline gives one.
type CollectCut struct{ Reason string }

func (c CollectCut) Error() string { return c.Reason }

// Is makes every CollectCut match errCollectCut.
func (CollectCut) Is(target error) bool { return target == errCollectCut }

// cutReason is the reason a collection was cut.
func cutReason(err error) string {
	var c CollectCut
	if errors.As(err, &c) {
		return c.Reason
	}
	return err.Error()
}

// deadlineOpen wraps an entry's opener so that reading past the deadline ends the
// collection as cut.
func deadlineOpen(open func() (io.ReadCloser, error), deadline time.Time, timeout time.Duration) func() (io.ReadCloser, error) {
	if deadline.IsZero() {
		return open
	}
	return func() (io.ReadCloser, error) {
		rc, err := open()
		if err != nil {
			return nil, err
		}
		return &deadlineReader{rc: rc, deadline: deadline, timeout: timeout}, nil
	}
}

type deadlineReader struct {
	rc       io.ReadCloser
	deadline time.Time
	timeout  time.Duration
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	if time.Now().After(d.deadline) {
		return 0, CollectCut{Reason: fmt.Sprintf("the collection took longer than limits.collect.timeout (%s)", d.timeout)}
	}
	return d.rc.Read(p)
}

func (d *deadlineReader) Close() error { return d.rc.Close() }

// overlay extended attributes, as the kernel names them for a root-mounted overlay and for
// one mounted with userxattr.
var (
	xattrOpaque   = []string{"trusted.overlay.opaque", "user.overlay.opaque"}
	xattrRedirect = []string{"trusted.overlay.redirect", "user.overlay.redirect"}
	xattrMetacopy = []string{"trusted.overlay.metacopy", "user.overlay.metacopy"}
)

// upperReadable reports whether this process can read a container's upper layer with its
// overlay attributes: it must be root, since an unprivileged reader sees no trusted.*
// attribute and would take an opaque folder for a plain one.
func upperReadable(dir string) bool {
	if os.Geteuid() != 0 || dir == "" {
		return false
	}
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir()
}

// hasXattr reports whether p carries one of the attributes (not following a symlink).
func hasXattr(p string, names []string) (string, bool) {
	buf := make([]byte, 256)
	for _, n := range names {
		sz, err := unix.Lgetxattr(p, n, buf)
		if err == nil {
			return string(buf[:sz]), true
		}
	}
	return "", false
}

// walkUpper lists the entries of a container's overlay upper layer below prefix, in path
// order (a folder before what it holds), without reading any content. Only what the
// container changed is in that layer, so the cost follows the changes, not the image.
func walkUpper(upper, prefix string, lim CollectLimits, deadline time.Time) ([]WorkspaceEntry, string, error) {
	root := filepath.Join(upper, filepath.FromSlash(path.Clean("/"+prefix)))
	if _, err := os.Lstat(root); errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil // nothing below the prefix changed
	}
	var out []WorkspaceEntry
	cut := ""
	err := filepath.WalkDir(root, func(hp string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if hp == root {
			return nil
		}
		if lim.Entries > 0 && len(out) >= lim.Entries {
			cut = fmt.Sprintf("more than %d changed paths (limits.collect.entries): the rest was not collected", lim.Entries)
			return errCollectCut
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			cut = fmt.Sprintf("the collection took longer than limits.collect.timeout (%s)", lim.Timeout)
			return errCollectCut
		}
		rel, err := filepath.Rel(root, hp)
		if err != nil {
			return err
		}
		fi, err := os.Lstat(hp)
		if err != nil {
			return err
		}
		e := WorkspaceEntry{Path: filepath.ToSlash(rel), Mode: fi.Mode().Perm(), Size: fi.Size()}
		if _, ok := hasXattr(hp, xattrRedirect); ok {
			return errUpperUnsupported
		}
		switch m := fi.Mode(); {
		case m&fs.ModeCharDevice != 0 && isWhiteout(fi):
			e.Deleted, e.Size, e.Mode = true, 0, 0
		case m.IsDir():
			e.Type = TypeDir
			v, ok := hasXattr(hp, xattrOpaque)
			e.Opaque = ok && v == "y"
		case m.IsRegular():
			if _, ok := hasXattr(hp, xattrMetacopy); ok {
				return errUpperUnsupported
			}
			e.Type = TypeFile
			file := hp
			e.open = func() (io.ReadCloser, error) { return openNoFollow(file) }
		case m&fs.ModeSymlink != 0:
			t, err := os.Readlink(hp)
			if err != nil {
				return err
			}
			e.Type, e.Target = TypeSymlink, t
		default:
			e.Type = TypeOther
		}
		out = append(out, e)
		return nil
	})
	if errors.Is(err, errCollectCut) {
		err = nil
	}
	if err != nil {
		return nil, "", err
	}
	return out, cut, nil
}

// isWhiteout reports whether a character device is an overlay whiteout (device 0:0).
func isWhiteout(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Rdev == 0
}

// openNoFollow opens a regular file for reading, refusing a symlink in its place.
func openNoFollow(p string) (*os.File, error) {
	return os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}

// sortEntries puts entries in path order, a folder before what it holds.
func sortEntries(es []WorkspaceEntry) {
	sort.SliceStable(es, func(i, j int) bool { return pathLess(es[i].Path, es[j].Path) })
}

// pathLess orders paths element by element, so "a/b" comes before "a.txt" and after "a".
func pathLess(a, b string) bool {
	for a != "" && b != "" {
		ea, ra, _ := cutSlash(a)
		eb, rb, _ := cutSlash(b)
		if ea != eb {
			return ea < eb
		}
		a, b = ra, rb
	}
	return a == "" && b != ""
}

func cutSlash(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// collect visits what the container changed below spec.CollectPrefix. On a local overlay2
// engine it reads the container's own upper layer, which holds only the changes, so the
// cost follows them and not the image; elsewhere it asks the engine for its change list and
// an archive of the folder (the whole final folder, listed, with the content of what
// changed).
func (e *Engine) collect(ctx context.Context, id, driver, upper string, spec ContainerSpec) (Collection, error) {
	prefix := path.Clean("/" + spec.CollectPrefix)
	lim := spec.CollectLimits
	var deadline time.Time
	if lim.Timeout > 0 {
		deadline = time.Now().Add(lim.Timeout)
	}
	if driver == "overlay2" && !spec.CollectAPI && upperReadable(upper) {
		entries, cut, err := walkUpper(upper, prefix, lim, deadline)
		if err == nil {
			col := Collection{Method: "upper", Cut: cut}
			for _, en := range entries {
				if en.open != nil {
					en.open = deadlineOpen(en.open, deadline, lim.Timeout)
				}
				if err := spec.Collect(en); err != nil {
					if errors.Is(err, errCollectCut) {
						col.Cut = cutReason(err)
						break
					}
					return col, err
				}
				col.Entries++
			}
			return col, nil
		}
		if !errors.Is(err, errUpperUnsupported) {
			return Collection{}, fmt.Errorf("collect container %s: %w", shortID(id), err)
		}
	}
	return e.collectAPI(ctx, id, prefix, spec.Collect, lim, deadline)
}

// collectAPI collects through the engine's API: the change list says what changed, and
// one archive of the folder lists everything in it and carries the changed content.
func (e *Engine) collectAPI(ctx context.Context, id, prefix string, visit func(WorkspaceEntry) error, lim CollectLimits, deadline time.Time) (Collection, error) {
	col := Collection{Method: "api"}
	diff, err := e.c.ContainerDiff(ctx, id)
	if err != nil {
		return col, fmt.Errorf("diff container %s: %w", shortID(id), err)
	}
	changed := map[string]bool{}
	var deleted []WorkspaceEntry
	for _, c := range diff {
		rel, ok := under(prefix, path.Clean(c.Path))
		if !ok {
			continue
		}
		if c.Kind == container.ChangeDelete {
			deleted = append(deleted, WorkspaceEntry{Path: rel, Deleted: true})
		} else {
			changed[rel] = true
		}
	}
	if len(changed) == 0 && len(deleted) == 0 {
		return col, nil
	}
	sortEntries(deleted)
	for _, d := range deleted {
		if err := visit(d); err != nil {
			return col, err
		}
		col.Entries++
	}
	rc, _, err := e.c.CopyFromContainer(ctx, id, prefix)
	if err != nil {
		return col, fmt.Errorf("copy %s from container %s: %w", prefix, shortID(id), err)
	}
	defer rc.Close()
	base := path.Base(prefix)
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return col, nil
		}
		if err != nil {
			return col, fmt.Errorf("copy %s from container %s: %w", prefix, shortID(id), err)
		}
		rel, ok := strings.CutPrefix(path.Clean(hdr.Name), base+"/")
		if !ok {
			continue // the folder itself
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			col.Cut = fmt.Sprintf("the collection took longer than limits.collect.timeout (%s)", lim.Timeout)
			return col, nil
		}
		en := WorkspaceEntry{Path: rel, Mode: hdr.FileInfo().Mode().Perm(), Size: hdr.Size, Listed: !changed[rel]}
		switch hdr.Typeflag {
		case tar.TypeDir:
			en.Type = TypeDir
		case tar.TypeReg:
			en.Type = TypeFile
			if !en.Listed {
				size := hdr.Size
				en.open = deadlineOpen(func() (io.ReadCloser, error) { return io.NopCloser(io.LimitReader(tr, size)), nil }, deadline, lim.Timeout)
			}
		case tar.TypeSymlink:
			en.Type, en.Target = TypeSymlink, hdr.Linkname
		case tar.TypeLink:
			// A hard link: the archive does not repeat the content of its earlier name.
			en.Type, en.Size = TypeFile, 0
			target := strings.TrimPrefix(path.Clean(hdr.Linkname), base+"/")
			en.open = func() (io.ReadCloser, error) { return nil, fmt.Errorf("%s is a hard link to %s", rel, target) }
		default:
			en.Type = TypeOther
		}
		if !en.Listed {
			if lim.Entries > 0 && col.Entries >= lim.Entries {
				col.Cut = fmt.Sprintf("more than %d changed paths (limits.collect.entries): the rest was not collected", lim.Entries)
				return col, nil
			}
			col.Entries++
		}
		if err := visit(en); err != nil {
			if errors.Is(err, errCollectCut) {
				col.Cut = cutReason(err)
				return col, nil
			}
			return col, err
		}
	}
}

// under returns full relative to prefix when it lies strictly below it.
func under(prefix, full string) (string, bool) {
	if prefix == "/" {
		return strings.TrimPrefix(full, "/"), full != "/"
	}
	rel, ok := strings.CutPrefix(full, prefix+"/")
	return rel, ok && rel != ""
}
