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
	"path/filepath"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"
)

// FileManifest is the pack's manifest, its first entry: every file the
// pack holds by digest and size, and the pack's digest over them. First,
// so an unpack knows every entry and its size before it writes a byte.
const FileManifest = "skillgate-pack.json"

// PackFormat versions the pack's manifest (1: the manifest last).
const PackFormat = 2

// maxManifestBytes bounds the manifest an unpack reads.
const maxManifestBytes = 64 << 20

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
// the process using it, what is being written, and the stat records of the
// trees placed from this machine's cache.
func packSkipped(rel string) bool {
	return rel == FileLock || rel == DirTmp || strings.HasPrefix(rel, DirTmp+"/") ||
		rel == DirKnown || strings.HasPrefix(rel, DirKnown+"/")
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
	if err := CheckLinks(out); err != nil {
		return nil, fmt.Errorf("export %s: %w", out, err)
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
	m := &Manifest{Format: PackFormat, Files: []PackFile{}}
	for _, rel := range rels {
		f, err := packFile(nil, out, rel)
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
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: FileManifest, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return nil, fmt.Errorf("export %s: %w", out, err)
	}
	if _, err := tw.Write(b); err != nil {
		return nil, fmt.Errorf("export %s: %w", out, err)
	}
	for _, want := range m.Files {
		f, err := packFile(tw, out, want.Path)
		if err != nil {
			return nil, fmt.Errorf("export %s: %w", out, err)
		}
		if f != want {
			return nil, fmt.Errorf("export %s: %s changed while it was packed", out, want.Path)
		}
	}
	if err := errors.Join(tw.Close(), zw.Close()); err != nil {
		return nil, fmt.Errorf("export %s: %w", out, err)
	}
	return m, nil
}

// packFile writes one file into the tar with a fixed time and owner, and
// digests it as written; with no tar, it digests it alone.
func packFile(tw *tar.Writer, out, rel string) (PackFile, error) {
	if target, err := os.Readlink(filepath.Join(out, filepath.FromSlash(rel))); err == nil {
		if tw == nil {
			return PackFile{Path: rel, Link: target}, nil
		}
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
	dg := digest.Canonical.Digester()
	var to io.Writer = dg.Hash()
	if tw != nil {
		if err := tw.WriteHeader(&tar.Header{Name: rel, Mode: mode, Size: fi.Size(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return PackFile{}, err
		}
		to = io.MultiWriter(tw, dg.Hash())
	}
	n, err := io.Copy(to, f)
	if err != nil {
		return PackFile{}, err
	}
	return PackFile{Path: rel, Digest: dg.Digest(), Bytes: n}, nil
}
