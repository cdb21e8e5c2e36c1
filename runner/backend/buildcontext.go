package backend

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
)

// LayerTar is the name, inside a build context, of the tar that carries every entry added
// to a BuildContext. The Dockerfile unpacks it with "ADD skillgate-layer.tar /": ADD of a
// local tar is the one instruction of the classic builder that keeps the owners written in
// the tar headers (COPY resets them to root unless --chown), so a fixture owned by the agent
// user needs no "RUN chown -R", which would copy the whole fixture into another layer.
const LayerTar = "skillgate-layer.tar"

// LayerEpoch is the modification time of every entry: fixed so that equal inputs give equal
// context bytes, and so equal layers.
var LayerEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// maxEntrySize keeps every entry's size in the ustar size field, so the layer's length can
// be computed from its headers before the host files are streamed into it.
const maxEntrySize = 1<<33 - 1

// BuildContext is a Docker build context assembled in memory and streamed on demand: a
// Dockerfile plus entries destined for the image's file system. Entry paths are paths in the
// image ("workspace/main.go" or "/workspace/main.go"); each carries its owner, mode and a
// fixed mtime in its tar header. Host files are read only while the context is written.
type BuildContext struct {
	dockerfile string
	entries    map[string]*layerEntry
	err        error
	// tree: the entries are the context itself, its own Dockerfile among them
	// (NewTreeContext), not a layer beside a Dockerfile.
	tree bool
	// args are the build arguments.
	args map[string]*string
}

// layerEntry is one file, folder or symlink of the layer.
type layerEntry struct {
	hdr      tar.Header
	data     []byte
	hostPath string // streamed from here when set
	// want, when set, is the digest the streamed host file must have:
	// writing the context fails, naming the file, when it has other bytes.
	want digest.Digest
}

// NewBuildContext starts a build context with the given Dockerfile. When entries are added,
// the Dockerfile must unpack them with "ADD " + LayerTar + " /".
func NewBuildContext(dockerfile string) *BuildContext {
	return &BuildContext{dockerfile: dockerfile, entries: map[string]*layerEntry{}}
}

// AddFile adds a regular file with the given content. A later entry at the same path
// replaces an earlier one. Parent folders that are neither added nor present in the base
// image are created owned by root, mode 0755.
func (b *BuildContext) AddFile(p string, mode int64, uid, gid int, data []byte) {
	b.add(p, tar.TypeReg, mode, uid, gid, &layerEntry{data: data}, int64(len(data)), "")
}

// AddHostFile adds a regular file whose content is streamed from hostPath when the context
// is written. Its mode is 0755 if the host file is executable by anyone, else 0644, so the
// image does not depend on the host's umask.
func (b *BuildContext) AddHostFile(p string, hostPath string, uid, gid int) {
	fi, err := os.Stat(hostPath)
	if err != nil {
		b.fail(fmt.Errorf("add host file %s: %w", hostPath, err))
		return
	}
	if !fi.Mode().IsRegular() {
		b.fail(fmt.Errorf("add host file %s: not a regular file", hostPath))
		return
	}
	b.add(p, tar.TypeReg, normalMode(fi.Mode()), uid, gid, &layerEntry{hostPath: hostPath}, fi.Size(), "")
}

// AddDir adds a folder.
func (b *BuildContext) AddDir(p string, mode int64, uid, gid int) {
	b.add(p, tar.TypeDir, mode, uid, gid, &layerEntry{}, 0, "")
}

// AddSymlink adds a symbolic link to target.
func (b *BuildContext) AddSymlink(p string, target string, uid, gid int) {
	b.add(p, tar.TypeSymlink, 0o777, uid, gid, &layerEntry{}, 0, target)
}

// AddHostTree adds the host folder hostDir at prefix, with every folder, regular file and
// symlink below it, all owned by uid:gid. Folders get mode 0755 and files 0644 or 0755 (as
// git keeps them). A symlink is kept as a symlink when it is relative and stays inside the
// tree; any other symlink, and any other kind of file, is an error rather than a silent
// difference between the host folder and the image.
func (b *BuildContext) AddHostTree(prefix string, hostDir string, uid, gid int) error {
	root, err := ImagePath(prefix)
	if err != nil {
		return fmt.Errorf("add tree %s: %w", hostDir, err)
	}
	err = filepath.WalkDir(hostDir, func(hp string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(hostDir, hp)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		p := path.Join(root, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			b.AddDir(p, 0o755, uid, gid)
		case fi.Mode().IsRegular():
			if fi.Size() > maxEntrySize {
				return fmt.Errorf("%s: larger than 8 GiB", rel)
			}
			b.add(p, tar.TypeReg, normalMode(fi.Mode()), uid, gid, &layerEntry{hostPath: hp}, fi.Size(), "")
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(hp)
			if err != nil {
				return err
			}
			t := filepath.ToSlash(target)
			if path.IsAbs(t) || escapes(path.Join(path.Dir(rel), t)) {
				return fmt.Errorf("%s: symlink to %s leaves the tree", rel, target)
			}
			b.AddSymlink(p, t, uid, gid)
		default:
			return fmt.Errorf("%s: unsupported file type %s", rel, fi.Mode().Type())
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("add tree %s: %w", hostDir, err)
	}
	return b.err
}

// TreeFile is one file of a tree a plan digested, as AddTree verifies it:
// Mode is "" for a regular file, "exec" for an executable one and
// "symlink" for a link, whose Digest is that of its target text.
type TreeFile struct {
	Digest digest.Digest
	Mode   string
	Size   int64
}

// AddTree adds the folder dir, which holds the files of a tree (a snapshot
// of a skill or fixture the plan digested), at prefix: every file with its
// mode, prefix itself and every folder leading to a file, all owned by
// uid:gid. The bytes of each file are hashed while the context is written
// and must have the digest the tree gives them, else writing fails naming
// the file: an image holds exactly the plan's bytes or is not built.
func (b *BuildContext) AddTree(prefix, dir string, files map[string]TreeFile, uid, gid int) error {
	root, err := ImagePath(prefix)
	if err != nil {
		return fmt.Errorf("add tree %s: %w", dir, err)
	}
	b.AddDir(root, 0o755, uid, gid)
	return b.addTreeFiles(root, dir, files, uid, gid)
}

// addTreeFiles adds a tree's files below root ("" for the context's root).
func (b *BuildContext) addTreeFiles(root, dir string, files map[string]TreeFile, uid, gid int) error {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, rel := range paths {
		e := files[rel]
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			if _, ok := b.entries[path.Join(root, d)]; ok {
				break
			}
			b.AddDir(path.Join(root, d), 0o755, uid, gid)
		}
		p, host := path.Join(root, rel), filepath.Join(dir, filepath.FromSlash(rel))
		switch e.Mode {
		case "symlink":
			target, err := os.Readlink(host)
			if err != nil {
				return fmt.Errorf("add tree %s: %w", dir, err)
			}
			target = filepath.ToSlash(target)
			if got := digest.FromString(target); got != e.Digest {
				return fmt.Errorf("verify %s: symlink to %s (digest %s), the plan says %s", host, target, got, e.Digest)
			}
			if path.IsAbs(target) || escapes(path.Join(path.Dir(rel), target)) {
				return fmt.Errorf("add tree %s: %s: symlink to %s leaves the tree", dir, rel, target)
			}
			b.AddSymlink(p, target, uid, gid)
		default:
			mode := int64(0o644)
			if e.Mode == "exec" {
				mode = 0o755
			}
			b.add(p, tar.TypeReg, mode, uid, gid, &layerEntry{hostPath: host, want: e.Digest}, e.Size, "")
		}
	}
	return b.err
}

func (b *BuildContext) add(p string, typ byte, mode int64, uid, gid int, e *layerEntry, size int64, link string) {
	name, err := ImagePath(p)
	if err != nil {
		b.fail(fmt.Errorf("add %q: %w", p, err))
		return
	}
	if size > maxEntrySize {
		b.fail(fmt.Errorf("add %q: larger than 8 GiB", p))
		return
	}
	if typ == tar.TypeDir {
		name += "/"
	}
	e.hdr = tar.Header{
		Typeflag: typ,
		Name:     name,
		Linkname: link,
		Mode:     mode,
		Uid:      uid,
		Gid:      gid,
		Size:     size,
		ModTime:  LayerEpoch,
	}
	b.entries[strings.TrimSuffix(name, "/")] = e
}

// Has reports whether an entry was added at image path p.
func (b *BuildContext) Has(p string) bool {
	name, err := ImagePath(p)
	if err != nil {
		return false
	}
	_, ok := b.entries[name]
	return ok
}

// Err is the first error an Add met, which writing the context reports too.
func (b *BuildContext) Err() error { return b.err }

func (b *BuildContext) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// ImagePath turns p into a slash-separated path relative to the image root, refusing the
// root itself and any ".." element.
func ImagePath(p string) (string, error) {
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return "", errors.New("path contains ..")
		}
	}
	clean := strings.TrimPrefix(path.Clean("/"+p), "/")
	if clean == "" {
		return "", errors.New("path is the image root")
	}
	return clean, nil
}

// escapes reports whether a cleaned relative path leaves its root.
func escapes(rel string) bool {
	return rel == ".." || strings.HasPrefix(rel, "../")
}

func normalMode(m fs.FileMode) int64 {
	if m&0o111 != 0 {
		return 0o755
	}
	return 0o644
}

// check reports a failed Add and a Dockerfile that would ignore the entries.
func (b *BuildContext) Check() error {
	if b.err != nil {
		return b.err
	}
	if !b.tree && len(b.entries) > 0 && !strings.Contains(b.dockerfile, LayerTar) {
		return fmt.Errorf("dockerfile does not ADD %s, so its %d entries would be lost", LayerTar, len(b.entries))
	}
	return nil
}

// WriteTo writes the context as a tar stream: the Dockerfile, then LayerTar holding the
// entries sorted by path. Equal inputs give equal bytes.
func (b *BuildContext) WriteTo(w io.Writer) (int64, error) {
	if err := b.Check(); err != nil {
		return 0, err
	}
	cw := &countingWriter{w: w}
	tw := tar.NewWriter(cw)
	if b.tree {
		err := b.writeTree(tw)
		if err == nil {
			err = tw.Close()
		}
		if err != nil {
			return cw.n, fmt.Errorf("write build context: %w", err)
		}
		return cw.n, nil
	}
	err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg,
		Name:     "Dockerfile",
		Mode:     0o644,
		Size:     int64(len(b.dockerfile)),
		ModTime:  LayerEpoch,
	})
	if err == nil {
		_, err = io.WriteString(tw, b.dockerfile)
	}
	if err == nil && len(b.entries) > 0 {
		err = b.writeLayer(tw)
	}
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		return cw.n, fmt.Errorf("write build context: %w", err)
	}
	return cw.n, nil
}

func (b *BuildContext) sorted() []*layerEntry {
	names := make([]string, 0, len(b.entries))
	for n := range b.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]*layerEntry, len(names))
	for i, n := range names {
		out[i] = b.entries[n]
	}
	return out
}

// writeLayer writes LayerTar into the outer tar. Its length must be known before its
// header, so it is computed first from the headers and the entry sizes.
func (b *BuildContext) writeLayer(outer *tar.Writer) error {
	entries := b.sorted()
	size, err := layerSize(entries)
	if err != nil {
		return err
	}
	err = outer.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg,
		Name:     LayerTar,
		Mode:     0o644,
		Size:     size,
		ModTime:  LayerEpoch,
	})
	if err != nil {
		return err
	}
	tw := tar.NewWriter(outer)
	for _, e := range entries {
		if err := writeEntry(tw, e); err != nil {
			return err
		}
	}
	return tw.Close()
}

func writeEntry(tw *tar.Writer, e *layerEntry) error {
	hdr := e.hdr
	if err := tw.WriteHeader(&hdr); err != nil {
		return err
	}
	if e.hostPath == "" {
		_, err := tw.Write(e.data)
		return err
	}
	f, err := os.Open(e.hostPath)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if e.want != "" {
		if fi.Size() != hdr.Size {
			return fmt.Errorf("verify %s: %d bytes, the plan says %d", e.hostPath, fi.Size(), hdr.Size)
		}
		h := sha256.New()
		if _, err := io.CopyN(io.MultiWriter(tw, h), f, hdr.Size); err != nil {
			return err
		}
		if got := digest.NewDigest(digest.SHA256, h); got != e.want {
			return fmt.Errorf("verify %s: digest %s, the plan says %s", e.hostPath, got, e.want)
		}
		return nil
	}
	if fi.Size() != hdr.Size {
		return fmt.Errorf("%s changed size while the build context was written", e.hostPath)
	}
	_, err = io.CopyN(tw, f, hdr.Size)
	return err
}

// layerSize is the exact length of the tar that writeLayer writes. Below maxEntrySize a
// header's encoding does not depend on the entry's size, so each header is measured with a
// zero size and the padded data size is added.
func layerSize(entries []*layerEntry) (int64, error) {
	cw := &countingWriter{w: io.Discard}
	tw := tar.NewWriter(cw)
	var data int64
	for _, e := range entries {
		hdr := e.hdr
		hdr.Size = 0
		if err := tw.WriteHeader(&hdr); err != nil {
			return 0, err
		}
		data += (e.hdr.Size + 511) &^ 511
	}
	if err := tw.Close(); err != nil {
		return 0, err
	}
	return cw.n + data, nil
}

// Digest is the sha256 of the context bytes: everything a build from it depends on besides
// its base image. It reads every host file.
func (b *BuildContext) Digest() (digest.Digest, error) {
	d := digest.Canonical.Digester()
	if _, err := b.WriteTo(d.Hash()); err != nil {
		return "", err
	}
	return d.Digest(), nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// AddHostFileMode adds a regular file streamed from hostPath with the given mode.
func (b *BuildContext) AddHostFileMode(p, hostPath string, mode int64, uid, gid int) {
	fi, err := os.Stat(hostPath)
	if err != nil {
		b.fail(fmt.Errorf("add host file %s: %w", hostPath, err))
		return
	}
	b.add(p, tar.TypeReg, mode, uid, gid, &layerEntry{hostPath: hostPath}, fi.Size(), "")
}

// Layer is the context's entries as one tar, without a Dockerfile: what a Session's
// CopyIn unpacks.
func (b *BuildContext) Layer() ([]byte, error) {
	if b.err != nil {
		return nil, b.err
	}
	var buf bytes.Buffer
	if err := b.WriteEntries(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteEntries writes the context's entries to w as one tar, without a
// Dockerfile: Layer's bytes, LayerSize long.
func (b *BuildContext) WriteEntries(w io.Writer) error {
	tw := tar.NewWriter(w)
	for _, e := range b.sorted() {
		if err := writeEntry(tw, e); err != nil {
			return err
		}
	}
	return tw.Close()
}

// LayerSize is the exact length of what WriteEntries writes.
func (b *BuildContext) LayerSize() (int64, error) { return layerSize(b.sorted()) }

// BuildArgs are the build arguments SetBuildArg set.
func (b *BuildContext) BuildArgs() map[string]*string { return b.args }
