package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/runfolder"

	"github.com/opencontainers/go-digest"
)

// A fixture's snapshot that the machine's cache holds is referred to, not
// placed: a run folder holds store/tree-refs/HEX, a hard link to the
// snapshot's lease (HEX.lease beside the snapshot's folder in the cache),
// instead of a link to each of its files. The lease's bytes are the tree's
// digest, so the reference reads the same on any machine, and the root
// digest covers the tree by the plan's digests of its files (Root). The
// reference is what keeps the snapshot: the cache removes a snapshot only
// while no run folder links its lease (a link count of one). Where the
// snapshot is on this machine is machine-local (.tree-cache/HEX, an
// absolute path, never packed), and believed only while the lease found
// there is the very file the reference links (same device and inode).
// Whatever reads the folder without the cache reads the snapshot through
// TreeDir; export and merge copy its files in, each verified against the
// plan. A reference whose snapshot cannot be found is an error naming it,
// never a tree silently missing.

// DirTreeRefs holds a run folder's references to the cache's snapshots.
const DirTreeRefs = runfolder.DirTreeRefs

// DirTreeCache names, per reference, the snapshot's folder on this machine.
const DirTreeCache = runfolder.DirTreeCache

// TreeLease is the lease file of the shared snapshot folder dir.
func TreeLease(dir string) string { return dir + ".lease" }

// LeaseBytes are a lease's bytes: the tree's digest, a line.
func LeaseBytes(tree digest.Digest) []byte { return []byte(tree.String() + "\n") }

// TreeReferrer is a SharedTrees a run folder can refer to rather than
// place its snapshots from.
type TreeReferrer interface {
	// ReferTree verifies the shared store's snapshot of the tree the plan
	// knows as want, file by file as PlaceTree does, making it from the
	// live folder src first when it lacks one or holds one that fails
	// verification, and links its lease at ref (a path that does not
	// exist yet). It returns the snapshot's folder. An error that is
	// ErrNoRefer says the lease cannot be linked there (another file
	// system): the tree is then placed.
	ReferTree(what, src string, want plan.Tree, ref string) (string, error)
}

// ErrNoRefer says a run folder cannot refer to a shared snapshot: its
// lease cannot be linked into the folder.
var ErrNoRefer = errors.New("the run folder cannot link the cache's lease")

// NoRefer says whether err, a link's error, is one that refuses links
// between these two folders for good (another file system, links not
// permitted, too many links).
func NoRefer(err error) bool {
	return errors.Is(err, syscall.EXDEV) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EMLINK)
}

// ReferTree pins the tree want as PinTree does, referring to the Shared
// store's snapshot when it can (TreeReferrer): the folder then holds a
// reference, not the files. It returns the folder holding the snapshot.
func (s *Store) ReferTree(what, src string, want plan.Tree) (string, error) {
	r, ok := s.Shared.(TreeReferrer)
	own := s.ownTreeDir(want.Digest)
	if _, err := os.Lstat(own); err == nil || !ok {
		return s.PinTree(what, src, want)
	}
	if got := want.ContentDigest(); got != want.Digest {
		return "", fmt.Errorf("verify %s: the plan's tree lists files of digest %s, not its digest %s", what, got, want.Digest)
	}
	for _, d := range []string{DirTmp, DirTreeRefs, DirTreeCache} {
		if err := os.MkdirAll(filepath.Join(s.Dir, d), 0o755); err != nil {
			return "", fmt.Errorf("refer to %s: %w", what, err)
		}
	}
	tmp, err := os.MkdirTemp(filepath.Join(s.Dir, DirTmp), "ref-")
	if err != nil {
		return "", fmt.Errorf("refer to %s: %w", what, err)
	}
	defer os.RemoveAll(tmp)
	// Verified again by each process that refers to it, as a placement is.
	dir, err := r.ReferTree(what, src, want, filepath.Join(tmp, "ref"))
	if errors.Is(err, ErrNoRefer) {
		return s.PinTree(what, src, want)
	}
	if err != nil {
		return "", fmt.Errorf("verify %s: %w", what, err)
	}
	hex := want.Digest.Encoded()
	if err := s.PutFile(filepath.Join(s.Dir, DirTreeCache, hex), []byte(dir)); err != nil {
		return "", fmt.Errorf("refer to %s: %w", what, err)
	}
	if err := os.Rename(filepath.Join(tmp, "ref"), filepath.Join(s.Dir, DirTreeRefs, hex)); err != nil {
		return "", fmt.Errorf("refer to %s: %w", what, err)
	}
	s.refs.Store(hex, dir)
	return dir, nil
}

// ownTreeDir is where the folder holds the snapshot of tree itself.
func (s *Store) ownTreeDir(tree digest.Digest) string {
	return filepath.Join(s.Dir, DirTrees, tree.Encoded())
}

// referred is the snapshot folder the store's reference to tree stands
// for, when it has one that resolves (ResolveTreeRef).
func (s *Store) referred(tree digest.Digest) (string, bool) {
	hex := tree.Encoded()
	if v, ok := s.refs.Load(hex); ok {
		return v.(string), true
	}
	dir, err := ResolveTreeRef(s.Dir, tree)
	if err != nil {
		return "", false
	}
	s.refs.Store(hex, dir)
	return dir, true
}

// HasTreeRef says whether the run folder out refers to tree.
func HasTreeRef(out string, tree digest.Digest) bool {
	_, err := os.Lstat(filepath.Join(out, DirTreeRefs, tree.Encoded()))
	return err == nil
}

// ResolveTreeRef is the snapshot folder that the run folder out's
// reference to tree stands for on this machine: where .tree-cache says,
// while the lease there is the file the reference links and the
// reference holds the tree's digest. The error says why not; it is
// fs.ErrNotExist when out has no reference to tree.
func ResolveTreeRef(out string, tree digest.Digest) (string, error) {
	hex := tree.Encoded()
	ref := filepath.Join(out, DirTreeRefs, hex)
	fi, err := os.Lstat(ref)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s: not a regular file", ref)
	}
	b, err := readSmall(ref, 256)
	if err != nil {
		return "", err
	}
	if !bytes.Equal(b, LeaseBytes(tree)) {
		return "", fmt.Errorf("%s: does not hold the digest it is named by: altered or damaged", ref)
	}
	where, err := readSmall(filepath.Join(out, DirTreeCache, hex), 4096)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s refers to tree %s in a machine's cache, and this folder does not record where (copied from another machine? export it where it ran: export copies the tree in)", ref, short(hex))
	}
	if err != nil {
		return "", err
	}
	dir := string(where)
	if !filepath.IsAbs(dir) || strings.ContainsRune(dir, 0) {
		return "", fmt.Errorf("%s: not an absolute path", filepath.Join(out, DirTreeCache, hex))
	}
	li, err := os.Lstat(TreeLease(dir))
	if err == nil && !os.SameFile(fi, li) {
		err = errors.New("its lease there is another file")
	}
	if err == nil {
		var di fs.FileInfo
		if di, err = os.Lstat(dir); err == nil && !di.IsDir() {
			err = errors.New("not a folder")
		}
	}
	if err != nil {
		return "", fmt.Errorf("%s refers to the snapshot of tree %s at %s, which the machine's cache no longer holds (%v)", ref, short(hex), dir, err)
	}
	return dir, nil
}

// readSmall reads file, refusing a link or more than max bytes.
func readSmall(file string, max int64) ([]byte, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", file, max)
	}
	return b, nil
}

// treeRefs lists the hex of every tree the run folder out refers to and
// does not hold itself.
func treeRefs(out string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(out, DirTreeRefs))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var hexes []string
	for _, e := range ents {
		if !isHexKey(e.Name()) {
			return nil, fmt.Errorf("%s/%s: not named by a tree's digest (64 hex digits)", DirTreeRefs, e.Name())
		}
		if _, err := os.Lstat(filepath.Join(out, DirTrees, e.Name())); err == nil {
			continue // held as well: the folder's own copy counts
		}
		hexes = append(hexes, e.Name())
	}
	return hexes, nil
}

// referredEntries are the root entries of the trees the run folder out
// refers to and does not hold: each file of the tree, by the plan's digest,
// at the path it would have placed (store/trees/HEX/PATH); a link by its
// target, read from the snapshot and checked against the plan.
func referredEntries(out string, p *plan.Plan) ([]rootEntry, error) {
	hexes, err := treeRefs(out)
	if err != nil || len(hexes) == 0 {
		return nil, err
	}
	if p == nil {
		if p, err = plan.ReadPlan(filepath.Join(out, FilePlan)); err != nil {
			return nil, err
		}
	}
	var entries []rootEntry
	for _, hex := range hexes {
		tree := digest.NewDigestFromEncoded(digest.SHA256, hex)
		t, ok := planTree(p, tree)
		if !ok {
			return nil, fmt.Errorf("%s/%s: the plan has no tree of that digest", DirTreeRefs, hex)
		}
		dir := ""
		for rel, e := range t.Files {
			at := DirTrees + "/" + hex + "/" + rel
			if e.Mode != "symlink" {
				entries = append(entries, rootEntry{Path: at, Digest: e.Digest})
				continue
			}
			if dir == "" {
				if dir, err = ResolveTreeRef(out, tree); err != nil {
					return nil, err
				}
			}
			target, err := os.Readlink(filepath.Join(dir, filepath.FromSlash(rel)))
			if err != nil {
				return nil, err
			}
			if got := digest.FromString(filepath.ToSlash(target)); got != e.Digest {
				return nil, fmt.Errorf("%s: symlink to %s (digest %s), the plan says %s", filepath.Join(dir, filepath.FromSlash(rel)), target, got, e.Digest)
			}
			entries = append(entries, rootEntry{Path: at, Link: target})
		}
	}
	return entries, nil
}

// planTree is the tree of that digest among the plan's fixtures, skills
// and case folders.
func planTree(p *plan.Plan, tree digest.Digest) (plan.Tree, bool) {
	for _, t := range p.Fixtures {
		if t.Digest == tree {
			return t, true
		}
	}
	for _, sk := range p.Skills {
		if sk.Digest == tree {
			return sk.Tree, true
		}
	}
	for _, t := range p.CaseDirs {
		if t.Digest == tree {
			return t, true
		}
	}
	return plan.Tree{}, false
}

// referredFile is a file of a tree a run folder refers to, as export
// packs it: read from the snapshot (host), checked against the plan's
// entry.
type referredFile struct {
	host string
	want plan.TreeEntry
}

// check fails unless f, the file as packed, is the plan's.
func (r referredFile) check(f PackFile) error {
	if r.want.Mode == "symlink" {
		if got := digest.FromString(filepath.ToSlash(f.Link)); f.Link == "" || got != r.want.Digest {
			return fmt.Errorf("%s: not the plan's symlink (digest %s)", r.host, r.want.Digest)
		}
		return nil
	}
	if f.Link != "" || f.Digest != r.want.Digest {
		return fmt.Errorf("%s: digest %s, the plan says %s", r.host, f.Digest, r.want.Digest)
	}
	return nil
}

// referredFiles lists the files of the trees the run folder out refers to
// and does not hold, by the path each would have placed
// (store/trees/HEX/PATH), once each snapshot's paths, links and kinds are
// checked against the plan; their bytes are the caller's to check.
func referredFiles(out string) (map[string]referredFile, error) {
	hexes, err := treeRefs(out)
	if err != nil || len(hexes) == 0 {
		return nil, err
	}
	p, err := plan.ReadPlan(filepath.Join(out, FilePlan))
	if err != nil {
		return nil, err
	}
	files := map[string]referredFile{}
	for _, hex := range hexes {
		tree := digest.NewDigestFromEncoded(digest.SHA256, hex)
		t, ok := planTree(p, tree)
		if !ok {
			return nil, fmt.Errorf("%s/%s: the plan has no tree of that digest", DirTreeRefs, hex)
		}
		dir, err := ResolveTreeRef(out, tree)
		if err != nil {
			return nil, err
		}
		if _, err := walkPlacing(dir, "", t); err != nil {
			return nil, err
		}
		for rel, e := range t.Files {
			host := filepath.Join(dir, filepath.FromSlash(rel))
			if e.Mode != "symlink" {
				fi, err := os.Lstat(host)
				if err != nil {
					return nil, err
				}
				if !fi.Mode().IsRegular() {
					return nil, fmt.Errorf("%s: not a regular file, the plan says %s", host, entryKind(e.Mode))
				}
				mode := ""
				if fi.Mode()&0o111 != 0 {
					mode = "exec"
				}
				if mode != e.Mode {
					return nil, fmt.Errorf("%s: %s, the plan says %s", host, entryKind(mode), entryKind(e.Mode))
				}
			}
			files[DirTrees+"/"+hex+"/"+rel] = referredFile{host: host, want: e}
		}
	}
	return files, nil
}
