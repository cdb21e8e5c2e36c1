package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/internal/bounded"

	"github.com/opencontainers/go-digest"
)

// PinTree snapshots the tree the plan knows as want from the live folder
// src into the store, verifying every file, and returns the snapshot's
// folder. what names the tree in errors ("skill changelog", "fixture
// fixtures/repo"). A tree already in the store is not copied again; with a
// Shared store, the snapshot is linked from the machine's (SharedTrees).
func (s *Store) PinTree(what, src string, want plan.Tree) (string, error) {
	dst := s.TreeDir(want.Digest)
	if _, err := os.Stat(dst); err == nil {
		return dst, nil
	}
	if got := want.ContentDigest(); got != want.Digest {
		return "", fmt.Errorf("verify %s: the plan's tree lists files of digest %s, not its digest %s", what, got, want.Digest)
	}
	if err := os.MkdirAll(filepath.Join(s.Dir, DirTmp), 0o755); err != nil {
		return "", fmt.Errorf("snapshot %s: %w", what, err)
	}
	tmp, err := os.MkdirTemp(filepath.Join(s.Dir, DirTmp), "tree-")
	if err != nil {
		return "", fmt.Errorf("snapshot %s: %w", what, err)
	}
	defer os.RemoveAll(tmp) // gone once renamed into place
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("snapshot %s: %w", what, err)
	}
	var known map[string]KnownFile
	if s.Shared != nil {
		known, err = s.Shared.PlaceTree(what, src, want, tmp)
	} else {
		err = copyVerified(src, tmp, want)
	}
	if err != nil {
		return "", fmt.Errorf("verify %s: %w", what, err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", fmt.Errorf("snapshot %s: %w", what, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		if _, serr := os.Stat(dst); serr == nil {
			return dst, nil // stored meanwhile
		}
		return "", fmt.Errorf("snapshot %s: %w", what, err)
	}
	s.recordTree(want.Digest, known)
	return dst, nil
}

// hashWorkers is how many files are hashed at once: hashing is bound by
// the CPU, and a fixture's files are independent.
func hashWorkers() int { return min(runtime.GOMAXPROCS(0), 4) }

// forEachFile calls fn on each index, hashWorkers at once, and returns the
// error of the lowest index that failed, so the file an error names does
// not depend on scheduling.
func forEachFile(n int, fn func(i int) error) error {
	errs := make([]error, n)
	index := make([]int, n)
	for i := range index {
		index[i] = i
	}
	bounded.ForEach(context.Background(), hashWorkers(), index, func(i int) { errs[i] = fn(i) })
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// liveEntry is one file of a live folder as walked.
type liveEntry struct {
	rel  string
	host string
	info fs.FileInfo
}

// walkLive lists the files (not folders) under dir, sorted by path.
func walkLive(dir string) ([]liveEntry, error) {
	var out []liveEntry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, liveEntry{filepath.ToSlash(rel), p, info})
		return nil
	})
	return out, err
}

// liveMode is the tree mode of a live file: "", "exec" or "symlink".
func liveMode(info fs.FileInfo) (string, error) {
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		return "symlink", nil
	case info.Mode().IsRegular():
		if info.Mode()&0o111 != 0 {
			return "exec", nil
		}
		return "", nil
	default:
		return "", errors.New("not a regular file, folder or symlink")
	}
}

// copyVerified copies the files of src into dst, hashing each while it is
// copied, and fails naming the first file (by path) that differs from
// want. Snapshot files are read-only: nothing writes through them.
func copyVerified(src, dst string, want plan.Tree) error {
	files, err := walkLive(src)
	if err != nil {
		return err
	}
	name := func(f liveEntry) string { return f.rel }
	regular, err := matchTree(files, want, name, "folder", func(f liveEntry, target string) error {
		out := filepath.Join(dst, filepath.FromSlash(f.rel))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		if target != "" {
			return os.Symlink(target, out)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return forEachFile(len(regular), func(i int) error {
		f := regular[i]
		e := want.Files[f.rel]
		got, err := copyHashed(f.host, filepath.Join(dst, filepath.FromSlash(f.rel)), e.Mode == "exec")
		if err != nil {
			return err
		}
		if got != e.Digest {
			return fmt.Errorf("%s: digest %s, the plan says %s", f.rel, got, e.Digest)
		}
		return nil
	})
}

// matchTree checks the files of a live folder against want, in path order,
// without reading a regular file: each in the plan with its kind, each
// symlink's target the plan's, none of the plan's missing (from the folder
// it names in that error). It calls each with every file, and a symlink's
// target, once the file is checked, and returns the regular files, whose
// bytes are the caller's to hash. An error names the file by name.
func matchTree(files []liveEntry, want plan.Tree, name func(liveEntry) string, folder string, each func(f liveEntry, target string) error) ([]liveEntry, error) {
	seen := make(map[string]bool, len(files))
	var regular []liveEntry
	for _, f := range files {
		e, ok := want.Files[f.rel]
		if !ok {
			return nil, fmt.Errorf("%s: not in the plan", name(f))
		}
		seen[f.rel] = true
		mode, err := liveMode(f.info)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name(f), err)
		}
		if mode != e.Mode {
			return nil, fmt.Errorf("%s: %s, the plan says %s", name(f), entryKind(mode), entryKind(e.Mode))
		}
		target := ""
		if mode == "symlink" {
			if target, err = os.Readlink(f.host); err != nil {
				return nil, err
			}
			target = filepath.ToSlash(target)
			if got := digest.FromString(target); got != e.Digest {
				return nil, fmt.Errorf("%s: symlink to %s (digest %s), the plan says %s", name(f), target, got, e.Digest)
			}
		} else {
			regular = append(regular, f)
		}
		if err := each(f, target); err != nil {
			return nil, err
		}
	}
	var missing []string
	for p := range want.Files {
		if !seen[p] {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("%s: in the plan, missing from the %s", name(liveEntry{rel: missing[0]}), folder)
	}
	return regular, nil
}

func entryKind(mode string) string {
	switch mode {
	case "exec":
		return "an executable file"
	case "symlink":
		return "a symlink"
	default:
		return "a regular file"
	}
}

// copyHashed copies the file src to dst, read-only, and returns the digest
// of the bytes it copied.
func copyHashed(src, dst string, exec bool) (digest.Digest, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	mode := os.FileMode(0o444)
	if exec {
		mode = 0o555
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, mode)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(out, h), in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	return digest.NewDigest(digest.SHA256, h), nil
}

// PinFixtures makes sure the store holds the fixture snapshot of every
// given cell's case: rollouts stored before skillgate kept snapshots, or
// stored by hand, are graded from a snapshot verified now. Every fixture
// is looked up before the first is copied, so a plan that lacks one
// copies nothing.
func (s *Store) PinFixtures(p *plan.Plan, suiteDir string, cells []plan.Cell) error {
	cases := p.CasesByID()
	type pin struct {
		what, src string
		tree      plan.Tree
	}
	var pins []pin
	checked := map[digest.Digest]bool{}
	seen := map[string]bool{}
	for _, c := range cells {
		pc := cases[c.Case]
		// The fixture, then the overlay copied over it.
		for _, layer := range []struct {
			rel string
			dg  digest.Digest
		}{{pc.Fixture, pc.FixtureDigest}, {pc.Overlay, pc.OverlayDigest}} {
			if layer.rel == "" || checked[layer.dg] {
				continue
			}
			checked[layer.dg] = true
			if _, err := os.Stat(s.TreeDir(layer.dg)); err == nil {
				continue
			}
			fx := path.Clean(layer.rel)
			what := "fixture " + fx
			if seen[what] {
				continue
			}
			t, ok := p.Fixtures[fx]
			if !ok {
				return fmt.Errorf("pin inputs: case %s: the plan has no fixture %s", pc.ID, fx)
			}
			if suiteDir == "" {
				return fmt.Errorf("pin inputs: %s: no suite folder to read it from", what)
			}
			seen[what] = true
			pins = append(pins, pin{what, filepath.Join(suiteDir, filepath.FromSlash(fx)), t})
		}
	}
	for _, pn := range pins {
		if _, err := s.PinTree(pn.what, pn.src, pn.tree); err != nil {
			return err
		}
	}
	return nil
}

// VerifyTree checks that the folder dir (a snapshot the store pinned) holds
// exactly the tree the plan knows as want, hashing every file in place: the
// same paths, kinds, symlink targets and bytes, nothing more, no symlink that
// leaves the tree. An error names the file on this machine. A snapshot given
// to a cell as it is (bound read-only, not copied into an image) is verified
// so, since nothing then hashes it on its way in.
func VerifyTree(dir string, want plan.Tree) error {
	files, err := walkLive(dir)
	if err != nil {
		return fmt.Errorf("verify %s: %w", dir, err)
	}
	name := func(f liveEntry) string { return filepath.Join(dir, filepath.FromSlash(f.rel)) }
	regular, err := matchTree(files, want, name, "snapshot", func(f liveEntry, target string) error {
		if rel := path.Join(path.Dir(f.rel), target); target != "" && (path.IsAbs(target) || rel == ".." || strings.HasPrefix(rel, "../")) {
			return fmt.Errorf("%s: symlink to %s leaves the tree", name(f), target)
		}
		return nil
	})
	if err == nil {
		err = forEachFile(len(regular), func(i int) error {
			f := regular[i]
			got, err := pipeline.FileDigest(f.host)
			if err != nil {
				return fmt.Errorf("%s: %w", name(f), err)
			}
			if e := want.Files[f.rel]; got != e.Digest {
				return fmt.Errorf("%s: digest %s, the plan says %s", name(f), got, e.Digest)
			}
			return nil
		})
	}
	if err != nil {
		return fmt.Errorf("verify %w", err)
	}
	return nil
}
