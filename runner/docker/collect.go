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

// errUpperUnsupported means the upper layer uses an overlay feature (redirected folders,
// metadata-only copies) whose content lives elsewhere: the engine's API must answer.
var errUpperUnsupported = errors.New("the overlay upper layer uses redirects or metadata-only copies")

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
			e = e.WithContent(func() (io.ReadCloser, error) { return openNoFollow(file) })
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
				if en.HasContent() {
					en = en.WithContent(deadlineOpen(en.Open, deadline, lim.Timeout))
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
				en = en.WithContent(deadlineOpen(func() (io.ReadCloser, error) { return io.NopCloser(io.LimitReader(tr, size)), nil }, deadline, lim.Timeout))
			}
		case tar.TypeSymlink:
			en.Type, en.Target = TypeSymlink, hdr.Linkname
		case tar.TypeLink:
			// A hard link: the archive does not repeat the content of its earlier name.
			en.Type, en.Size = TypeFile, 0
			target := strings.TrimPrefix(path.Clean(hdr.Linkname), base+"/")
			en = en.WithContent(func() (io.ReadCloser, error) { return nil, fmt.Errorf("%s is a hard link to %s", rel, target) })
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
