package runner

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

	"github.com/skillgate/skillgate/pipeline/plan"

	"github.com/opencontainers/go-digest"
)

// A cell runs exactly the bytes its plan digested. Before a run's first
// cell, every skill and fixture tree the selected cells need is copied into
// the run folder's store (store/trees/HEX, HEX the tree digest), each file
// hashed while it is copied and checked against the plan's tree: same
// paths, digests, modes and symlink targets, no file more or less. Cell
// images are built from these snapshots (hashing again while tarring), and
// grading and judging read the fixture from them. After the rollouts, the
// live folders are hashed again: a file that changed while the cells ran
// makes every cell of that invocation rolled out from the changed tree
// invalid, naming the file, so the verdict is INCOMPLETE and the next run
// reruns them.

// PinTree snapshots the tree the plan knows as want from the live folder
// src into the store, verifying every file, and returns the snapshot's
// folder. what names the tree in errors ("skill changelog", "fixture
// fixtures/repo"). A tree already in the store is not copied again.
func (s *Store) PinTree(what, src string, want plan.Tree) (string, error) {
	dst := s.TreeDir(want.Digest)
	if _, err := os.Stat(dst); err == nil {
		return dst, nil
	}
	if got := want.ContentDigest(); got != want.Digest {
		return "", fmt.Errorf("verify %s: the plan's tree lists files of digest %s, not its digest %s", what, got, want.Digest)
	}
	if err := os.MkdirAll(filepath.Join(s.Dir, storeTmp), 0o755); err != nil {
		return "", fmt.Errorf("snapshot %s: %w", what, err)
	}
	tmp, err := os.MkdirTemp(filepath.Join(s.Dir, storeTmp), "tree-")
	if err != nil {
		return "", fmt.Errorf("snapshot %s: %w", what, err)
	}
	defer os.RemoveAll(tmp) // gone once renamed into place
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("snapshot %s: %w", what, err)
	}
	if err := copyVerified(src, tmp, want); err != nil {
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
	return dst, nil
}

// hashWorkers is how many files are hashed at once: hashing is bound by
// the CPU, and a fixture's files are independent.
func hashWorkers() int { return min(runtime.GOMAXPROCS(0), 4) }

// forEachFile calls fn on each index, hashWorkers at once, and returns the
// error of the lowest index that failed, so the file an error names does
// not depend on scheduling.
func forEachFile(n int, fn func(i int) error) error {
	errs, idx := make([]error, n), make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	forEach(context.Background(), hashWorkers(), idx, func(i int) { errs[i] = fn(i) })
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
	seen := map[string]bool{}
	var regular []liveEntry
	for _, f := range files {
		e, ok := want.Files[f.rel]
		if !ok {
			return fmt.Errorf("%s: not in the plan", f.rel)
		}
		seen[f.rel] = true
		mode, err := liveMode(f.info)
		if err != nil {
			return fmt.Errorf("%s: %w", f.rel, err)
		}
		if mode != e.Mode {
			return fmt.Errorf("%s: %s, the plan says %s", f.rel, entryKind(mode), entryKind(e.Mode))
		}
		out := filepath.Join(dst, filepath.FromSlash(f.rel))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		if mode != "symlink" {
			regular = append(regular, f)
			continue
		}
		target, err := os.Readlink(f.host)
		if err != nil {
			return err
		}
		if got := digest.FromString(filepath.ToSlash(target)); got != e.Digest {
			return fmt.Errorf("%s: symlink to %s (digest %s), the plan says %s", f.rel, target, got, e.Digest)
		}
		if err := os.Symlink(target, out); err != nil {
			return err
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
		return fmt.Errorf("%s: in the plan, missing from the folder", missing[0])
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

// inputTree is one live folder a run's cells need, and the tree the plan
// knows it as.
type inputTree struct {
	what string // "skill KEY" or "fixture PATH"
	src  string
	tree plan.Tree
}

// inputs are the skill and fixture trees an invocation's cells run, pinned
// in the store before the first cell and checked again after the last.
type inputs struct {
	plan     *plan.Plan
	suiteDir string
	store    *Store
	trees    map[string]*inputTree // by what
	order    []string
}

func newInputs(p *plan.Plan, suiteDir string, store *Store) *inputs {
	return &inputs{plan: p, suiteDir: suiteDir, store: store, trees: map[string]*inputTree{}}
}

// treesOf names the trees a cell of case pc in arm reads.
func treesOf(pc plan.PlanCase, arm plan.PlanArm) []string {
	var out []string
	if pc.Fixture != "" {
		out = append(out, "fixture "+path.Clean(pc.Fixture))
	}
	for _, k := range arm.Skills {
		out = append(out, "skill "+k)
	}
	return out
}

// add records the trees a cell of case pc in arm needs.
func (in *inputs) add(pc plan.PlanCase, arm plan.PlanArm) error {
	for _, what := range treesOf(pc, arm) {
		if in.trees[what] != nil {
			continue
		}
		var rel string
		var tree plan.Tree
		if key, ok := strings.CutPrefix(what, "skill "); ok {
			sk, ok := in.plan.Skills[key]
			if !ok {
				return fmt.Errorf("pin inputs: arm %s installs unknown skill %s", arm.Name, key)
			}
			rel, tree = sk.Path, sk.Tree
		} else {
			fx := strings.TrimPrefix(what, "fixture ")
			t, ok := in.plan.Fixtures[fx]
			if !ok {
				return fmt.Errorf("pin inputs: case %s: the plan has no fixture %s", pc.ID, fx)
			}
			rel, tree = fx, t
		}
		if in.suiteDir == "" {
			return fmt.Errorf("pin inputs: %s: no suite folder to read it from", what)
		}
		in.trees[what] = &inputTree{what: what, src: filepath.Join(in.suiteDir, filepath.FromSlash(rel)), tree: tree}
		in.order = append(in.order, what)
	}
	return nil
}

// pin snapshots every tree added, verifying each; the first mismatch
// refuses the run, naming the file.
func (in *inputs) pin() error {
	for _, what := range in.order {
		t := in.trees[what]
		if _, err := in.store.PinTree(t.what, t.src, t.tree); err != nil {
			return err
		}
	}
	return nil
}

// recheck hashes the live folders again and returns, by tree, what changed
// since the plan was made: "skill s: SKILL.md modified".
func (in *inputs) recheck() map[string][]string {
	changed := map[string][]string{}
	for _, what := range in.order {
		t := in.trees[what]
		now, err := plan.HashTree(t.src)
		if err != nil {
			changed[what] = []string{fmt.Sprintf("%s: %v", what, err)}
			continue
		}
		for _, ch := range plan.DiffTrees(t.tree, now) {
			changed[what] = append(changed[what], fmt.Sprintf("%s: %s %s", what, ch.Path, ch.Change))
		}
	}
	return changed
}

// pinFixtures makes sure the store holds the fixture snapshot of every
// given cell's case: rollouts stored before skillgate kept snapshots, or
// stored by hand, are graded from a snapshot verified now.
func pinFixtures(p *plan.Plan, suiteDir string, store *Store, cells []plan.Cell) error {
	cases := map[string]plan.PlanCase{}
	for _, pc := range p.Cases {
		cases[pc.ID] = pc
	}
	in := newInputs(p, suiteDir, store)
	checked := map[digest.Digest]bool{}
	for _, c := range cells {
		pc := cases[c.Case]
		if pc.Fixture == "" || checked[pc.FixtureDigest] {
			continue
		}
		checked[pc.FixtureDigest] = true
		if _, err := os.Stat(store.TreeDir(pc.FixtureDigest)); err == nil {
			continue
		}
		if err := in.add(pc, plan.PlanArm{}); err != nil {
			return err
		}
	}
	return in.pin()
}

// ranCell is a cell rolled out by this invocation, with the status its
// rollout was stored with.
type ranCell struct {
	cell   plan.Cell
	pc     plan.PlanCase
	arm    plan.PlanArm
	status string
}

// invalidateChanged hashes the live trees again, after the rollouts, and
// re-stores as invalid the rollout of every cell run from a tree that
// changed meanwhile, naming the files: the cell ran the pinned bytes, but
// the suite no longer says what it ran. It returns, by the status they
// had, how many rollouts it made invalid.
func (in *inputs) invalidateChanged(ran []ranCell, log io.Writer) (map[string]int, error) {
	changed := in.recheck()
	if len(changed) == 0 {
		return nil, nil
	}
	for _, what := range in.order {
		for _, c := range changed[what] {
			fmt.Fprintf(log, "changed during the run: %s\n", c)
		}
	}
	moved := map[string]int{}
	for _, rc := range ran {
		if rc.status == StatusInvalid {
			continue
		}
		var why []string
		for _, what := range treesOf(rc.pc, rc.arm) {
			why = append(why, changed[what]...)
		}
		if len(why) == 0 {
			continue
		}
		reason := "verify inputs after the rollouts: " + strings.Join(why, "; ") + " while the run was running; restore the files or compile the suite again, then run again"
		if err := in.store.Invalidate(rc.cell.Rollout, reason, why); err != nil {
			return moved, err
		}
		moved[rc.status]++
	}
	return moved, nil
}
