package store

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"
)

// FileManifest is the pack's manifest, its last entry: every file the pack
// holds by digest, and the pack's digest over them.
const FileManifest = "skillgate-pack.json"

// PackFormat versions the pack's manifest.
const PackFormat = 1

// Manifest lists a pack's files and digests them as one: the same run
// folder gives the same digest on any machine, whatever the tar's own
// bytes (times, owners) are.
type Manifest struct {
	Format int `json:"format"`
	// Digest is the digest of Files as canonical JSON.
	Digest digest.Digest `json:"digest"`
	// Plan is the digest of the run's plan.json.
	Plan  digest.Digest `json:"plan,omitempty"`
	Files []PackFile    `json:"files"`
}

// PackFile is one file of a pack.
type PackFile struct {
	Path   string        `json:"path"`
	Digest digest.Digest `json:"digest,omitempty"`
	Bytes  int64         `json:"bytes"`
	// Link is a symbolic link's target (a tree snapshot keeps its links).
	Link string `json:"link,omitempty"`
}

// packSkipped are the run folder's parts a pack leaves out: the lock of
// the process using it and what is being written.
func packSkipped(rel string) bool {
	return rel == ".lock" || rel == DirTmp || strings.HasPrefix(rel, DirTmp+"/")
}

// Export packs the run folder out into w as a gzip-compressed tar: the
// plan, the store (rollouts, trees, grades, judgements, recorded
// exchanges), the reports, and last the manifest. Unpacked anywhere, the
// folder reads as it did here: `report`, `gate`, `regrade` and
// `run --replay` need nothing else. It returns the manifest.
func Export(out string, w io.Writer) (*Manifest, error) {
	if _, err := os.Stat(filepath.Join(out, FilePlan)); err != nil {
		return nil, fmt.Errorf("export %s: not a run folder: %w", out, err)
	}
	var rels []string
	err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(out, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if packSkipped(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() || d.Type()&fs.ModeSymlink != 0 {
			rels = append(rels, rel)
		} else if !d.IsDir() {
			return fmt.Errorf("%s is neither a file, a link nor a folder", rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", out, err)
	}
	slices.Sort(rels)
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	m := &Manifest{Format: PackFormat, Files: []PackFile{}}
	for _, rel := range rels {
		f, err := packFile(tw, out, rel)
		if err != nil {
			return nil, fmt.Errorf("export %s: %w", out, err)
		}
		if rel == FilePlan {
			m.Plan = f.Digest
		}
		m.Files = append(m.Files, f)
	}
	files, _ := json.Marshal(m.Files)
	m.Digest = digest.FromBytes(files)
	b, _ := json.MarshalIndent(m, "", "  ")
	b = append(b, '\n')
	if err := tw.WriteHeader(&tar.Header{Name: FileManifest, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err == nil {
		_, err = tw.Write(b)
	}
	if err := errors.Join(tw.Close(), zw.Close()); err != nil {
		return nil, fmt.Errorf("export %s: %w", out, err)
	}
	return m, nil
}

// packFile writes one file into the tar with a fixed time and owner, and
// digests it as written.
func packFile(tw *tar.Writer, out, rel string) (PackFile, error) {
	if target, err := os.Readlink(filepath.Join(out, filepath.FromSlash(rel))); err == nil {
		return PackFile{Path: rel, Link: target}, tw.WriteHeader(&tar.Header{Name: rel, Mode: 0o777, Typeflag: tar.TypeSymlink, Linkname: target, Format: tar.FormatPAX})
	}
	f, err := os.Open(filepath.Join(out, filepath.FromSlash(rel)))
	if err != nil {
		return PackFile{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return PackFile{}, err
	}
	mode := int64(0o644)
	if fi.Mode()&0o111 != 0 {
		mode = 0o755
	}
	if err := tw.WriteHeader(&tar.Header{Name: rel, Mode: mode, Size: fi.Size(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return PackFile{}, err
	}
	dg := digest.Canonical.Digester()
	n, err := io.Copy(io.MultiWriter(tw, dg.Hash()), f)
	if err != nil {
		return PackFile{}, err
	}
	return PackFile{Path: rel, Digest: dg.Digest(), Bytes: n}, nil
}

// Unpack unpacks a pack written by Export into the new run folder out,
// checking every file against the manifest and the manifest's digest, so
// a pack altered on its way is refused; out must not exist yet.
func Unpack(r io.Reader, out string) (*Manifest, error) {
	if _, err := os.Stat(out); err == nil {
		return nil, fmt.Errorf("unpack into %s: it exists; name a new run folder", out)
	}
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("unpack pack: read pack: %w", err)
	}
	tmp := out + ".unpacking"
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("unpack pack: %w", err)
	}
	defer os.RemoveAll(tmp)
	got := map[string]PackFile{}
	var links []PackFile // made last, so no file is written through one
	var m *Manifest
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("unpack pack: read pack: %w", err)
		}
		if h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeSymlink {
			return nil, fmt.Errorf("unpack pack: %s: the pack holds only files and links", h.Name)
		}
		if h.Name == FileManifest {
			m = &Manifest{}
			if err := json.NewDecoder(tr).Decode(m); err != nil {
				return nil, fmt.Errorf("unpack pack: read manifest: %w", err)
			}
			continue
		}
		clean := path.Clean(h.Name)
		if clean != h.Name || path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || packSkipped(clean) {
			return nil, fmt.Errorf("unpack pack: %q is not a path inside a run folder", h.Name)
		}
		if _, dup := got[clean]; dup {
			return nil, fmt.Errorf("unpack pack: %s is in the pack twice", clean)
		}
		if h.Typeflag == tar.TypeSymlink {
			got[clean] = PackFile{Path: clean, Link: h.Linkname}
			links = append(links, got[clean])
			continue
		}
		dst := filepath.Join(tmp, filepath.FromSlash(clean))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, fmt.Errorf("unpack pack: %w", err)
		}
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, os.FileMode(h.Mode)&0o755)
		if err != nil {
			return nil, fmt.Errorf("unpack pack: %w", err)
		}
		dg := digest.Canonical.Digester()
		n, err := io.Copy(io.MultiWriter(f, dg.Hash()), tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("unpack pack: %s: %w", clean, err)
		}
		got[clean] = PackFile{Path: clean, Digest: dg.Digest(), Bytes: n}
	}
	for p := range got {
		for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
			if got[dir].Link != "" {
				return nil, fmt.Errorf("unpack pack: %s lies under the link %s", p, dir)
			}
		}
	}
	if m == nil {
		return nil, fmt.Errorf("unpack pack: the pack has no %s", FileManifest)
	}
	if m.Format != PackFormat {
		return nil, fmt.Errorf("unpack pack: pack format %d, this skillgate reads format %d", m.Format, PackFormat)
	}
	files, _ := json.Marshal(m.Files)
	if digest.FromBytes(files) != m.Digest {
		return nil, fmt.Errorf("unpack pack: the manifest's files do not match its digest %s", m.Digest)
	}
	for _, f := range m.Files {
		if g, ok := got[f.Path]; !ok || g != f {
			return nil, fmt.Errorf("unpack pack: %s does not match the manifest (pack %s)", f.Path, m.Digest)
		}
		delete(got, f.Path)
	}
	for p := range got {
		return nil, fmt.Errorf("unpack pack: %s is not in the manifest (pack %s)", p, m.Digest)
	}
	for _, l := range links {
		dst := filepath.Join(tmp, filepath.FromSlash(l.Path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, fmt.Errorf("unpack pack: %w", err)
		}
		if err := os.Symlink(l.Link, dst); err != nil {
			return nil, fmt.Errorf("unpack pack: %w", err)
		}
	}
	if err := os.Rename(tmp, out); err != nil {
		return nil, fmt.Errorf("unpack pack: %w", err)
	}
	return m, nil
}
