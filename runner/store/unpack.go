package store

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/opencontainers/go-digest"
)

// Unpack unpacks a pack written by Export into the new run folder out. The
// manifest, the pack's first entry, is checked whole before anything is
// written: its digest, every path inside a run folder, every link inside a
// tree snapshot and leading nowhere out of it, and the sum of its sizes
// against the free space. Then each entry is written only if the manifest
// lists it, with its listed size, never more bytes than listed, and must
// have its listed digest: a pack altered on its way, a bomb whose sizes
// lie, an unlisted entry, a hard link or a link out of the folder is
// refused, and nothing is left behind. out must not exist yet.
func Unpack(r io.Reader, out string) (*Manifest, error) {
	if _, err := os.Lstat(out); err == nil {
		return nil, fmt.Errorf("unpack into %s: it exists; name a new run folder", out)
	}
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("unpack pack: read pack: %w", err)
	}
	tr := tar.NewReader(zr)
	m, want, err := readManifest(tr)
	if err != nil {
		return nil, fmt.Errorf("unpack pack: %w", err)
	}
	if err := roomFor(filepath.Dir(out), m); err != nil {
		return nil, fmt.Errorf("unpack pack: %w", err)
	}
	tmp := out + ".unpacking"
	if err := os.MkdirAll(filepath.Dir(tmp), 0o755); err != nil {
		return nil, fmt.Errorf("unpack pack: %w", err)
	}
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("unpack pack: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := unpackEntries(tr, tmp, m, want); err != nil {
		return nil, fmt.Errorf("unpack pack: %w", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return nil, fmt.Errorf("unpack pack: %w", err)
	}
	return m, nil
}

// readManifest reads the pack's first entry, its manifest, and checks it
// whole: its digest and every file it lists.
func readManifest(tr *tar.Reader) (*Manifest, map[string]PackFile, error) {
	h, err := tr.Next()
	if err != nil {
		return nil, nil, fmt.Errorf("read pack: %w", err)
	}
	if h.Name != FileManifest || h.Typeflag != tar.TypeReg {
		return nil, nil, fmt.Errorf("the pack's first entry is %s, not its manifest %s: a pack of an older skillgate (export the folder again) or altered", h.Name, FileManifest)
	}
	if h.Size > maxManifestBytes {
		return nil, nil, fmt.Errorf("read manifest: %d bytes, more than %d", h.Size, maxManifestBytes)
	}
	m := &Manifest{}
	if err := json.NewDecoder(io.LimitReader(tr, h.Size)).Decode(m); err != nil {
		return nil, nil, fmt.Errorf("read manifest: %w", err)
	}
	if m.Format != PackFormat {
		return nil, nil, fmt.Errorf("pack format %d, this skillgate reads format %d", m.Format, PackFormat)
	}
	files, _ := json.Marshal(m.Files)
	if digest.FromBytes(files) != m.Digest {
		return nil, nil, fmt.Errorf("the manifest's files do not match its digest %s", m.Digest)
	}
	want := map[string]PackFile{}
	for _, f := range m.Files {
		clean := path.Clean(f.Path)
		if clean != f.Path || path.IsAbs(clean) || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") || packSkipped(clean) || clean == FileManifest {
			return nil, nil, fmt.Errorf("%q is not a path inside a run folder", f.Path)
		}
		if _, dup := want[clean]; dup {
			return nil, nil, fmt.Errorf("%s is in the manifest twice", clean)
		}
		if f.Bytes < 0 || (f.Link != "" && (f.Bytes != 0 || f.Digest != "")) {
			return nil, nil, fmt.Errorf("%s: a size of %d bytes", clean, f.Bytes)
		}
		if f.Link != "" {
			if err := treeLink(clean, f.Link); err != nil {
				return nil, nil, err
			}
		}
		want[clean] = f
	}
	for p := range want {
		for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
			if f, ok := want[dir]; ok {
				kind := "file"
				if f.Link != "" {
					kind = "link"
				}
				return nil, nil, fmt.Errorf("%s lies under the %s %s", p, kind, dir)
			}
		}
	}
	return m, want, nil
}

// roomFor refuses a pack whose files, as its manifest sizes them, do not
// fit in the free space of the folder dir (or the nearest one that exists).
func roomFor(dir string, m *Manifest) error {
	var total int64
	for _, f := range m.Files {
		total += f.Bytes
	}
	for ; ; dir = filepath.Dir(dir) {
		var st syscall.Statfs_t
		err := syscall.Statfs(dir, &st)
		if err == nil {
			if free := int64(st.Bavail) * int64(st.Bsize); total > free {
				return fmt.Errorf("the pack's files are %d bytes, %s has %d bytes free", total, dir, free)
			}
			return nil
		}
		if !errors.Is(err, os.ErrNotExist) || dir == filepath.Dir(dir) {
			return fmt.Errorf("read free space of %s: %w", dir, err)
		}
	}
}

// unpackEntries writes the pack's entries after its manifest into tmp,
// each only as the manifest lists it; the links last, so no file is
// written through one.
func unpackEntries(tr *tar.Reader, tmp string, m *Manifest, want map[string]PackFile) error {
	var links []PackFile
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read pack: %w", err)
		}
		f, listed := want[h.Name]
		if !listed {
			return fmt.Errorf("%s is not in the manifest (pack %s)", h.Name, m.Digest)
		}
		delete(want, h.Name)
		switch {
		case h.Typeflag == tar.TypeSymlink && f.Link != "":
			if h.Linkname != f.Link {
				return fmt.Errorf("%s does not match the manifest (pack %s)", h.Name, m.Digest)
			}
			links = append(links, f)
			continue
		case h.Typeflag != tar.TypeReg || f.Link != "":
			return fmt.Errorf("%s: the pack holds only files and the links its manifest lists, not a %s", h.Name, typeName(h.Typeflag))
		case h.Size != f.Bytes:
			return fmt.Errorf("%s: %d bytes in the pack, %d in the manifest (pack %s)", h.Name, h.Size, f.Bytes, m.Digest)
		}
		if err := unpackFile(tr, tmp, h, f); err != nil {
			return err
		}
	}
	for p := range want {
		return fmt.Errorf("%s is in the manifest, not in the pack (pack %s)", p, m.Digest)
	}
	for _, l := range links {
		dst := filepath.Join(tmp, filepath.FromSlash(l.Path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(l.Link, dst); err != nil {
			return err
		}
	}
	return nil
}

// unpackFile writes one listed file, no more bytes than listed, and checks
// its digest.
func unpackFile(tr *tar.Reader, tmp string, h *tar.Header, f PackFile) error {
	dst := filepath.Join(tmp, filepath.FromSlash(f.Path))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	w, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, os.FileMode(h.Mode)&0o755)
	if err != nil {
		return err
	}
	dg := digest.Canonical.Digester()
	n, err := io.Copy(io.MultiWriter(w, dg.Hash()), io.LimitReader(tr, f.Bytes))
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	if n != f.Bytes || dg.Digest() != f.Digest {
		return fmt.Errorf("%s does not match the manifest", f.Path)
	}
	return nil
}

// typeName names a tar entry's type for messages.
func typeName(t byte) string {
	switch t {
	case tar.TypeLink:
		return "hard link"
	case tar.TypeSymlink:
		return "link"
	case tar.TypeDir:
		return "folder"
	case tar.TypeReg:
		return "file"
	}
	return fmt.Sprintf("entry of type %q", t)
}
