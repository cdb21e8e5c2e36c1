package runner

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/runner/store"

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
// reruns them. With the machine's cache (runner/cache), the trees are
// linked from its verified snapshots instead, each file checked by its
// stat record or hashed; a fixture it holds is placed while the first
// cells run (pinFirst); and the live folders are hashed through the
// cache's stat index of each, and after the rollouts not walked again when
// the watch the compile's walk set on them reported no change
// (cache.HashWatched).

// inputTree is one live folder a run's cells need, and the tree the plan
// knows it as.
type inputTree struct {
	what string // "skill KEY", "fixture PATH", "caseDir PATH" or "environment NAME"
	src  string
	tree plan.Tree
}

// inputs are the skill and fixture trees an invocation's cells run, pinned
// in the store before the first cell and checked again after the last.
type inputs struct {
	plan     *plan.Plan
	suiteDir string
	// from, when set, is a run folder's store whose verified snapshots
	// stand for the suite folder (a replay of an imported run).
	from  *store.Store
	store *store.Store
	trees map[string]*inputTree // by what
	order []string
}

func newInputs(p *plan.Plan, suiteDir string, st *store.Store) *inputs {
	return &inputs{plan: p, suiteDir: suiteDir, store: st, trees: map[string]*inputTree{}}
}

// treesOf names the trees a cell of case pc in arm (as it applies to pc)
// reads: its fixture and overlay, its skills.
func treesOf(pc plan.PlanCase, arm plan.PlanArm) []string {
	var out []string
	for _, rel := range []string{pc.Fixture, pc.Overlay} {
		if rel != "" {
			out = append(out, "fixture "+path.Clean(rel))
		}
	}
	for _, k := range arm.Skills {
		out = append(out, "skill "+k)
	}
	if pc.CaseDir != "" {
		out = append(out, "caseDir "+path.Clean(pc.CaseDir))
	}
	return out
}

// treesOfIn adds to treesOf the Dockerfile folders of the environments a cell of case pc
// runs in and its checks name, along the environments each is built from.
func treesOfIn(p *plan.Plan, pc plan.PlanCase, arm plan.PlanArm) []string {
	out := treesOf(pc, arm)
	for _, name := range caseEnvironments(pc) {
		out = append(out, environmentTrees(p, name)...)
	}
	return out
}

// caseEnvironments names the environments a case's cells and checks run in.
func caseEnvironments(pc plan.PlanCase) []string {
	var out []string
	if pc.Environment != "" {
		out = append(out, pc.Environment)
	}
	for _, a := range pc.Assert {
		if a.Run != nil && a.Environment != "" && !slices.Contains(out, a.Environment) {
			out = append(out, a.Environment)
		}
	}
	return out
}

// environmentTrees names the Dockerfile folders environment name is built from, its own
// first.
func environmentTrees(p *plan.Plan, name string) []string {
	var out []string
	for seen := map[string]bool{}; name != "" && !seen[name]; {
		seen[name] = true
		pe, ok := p.Environments[name]
		if !ok || pe.Dockerfile == nil {
			break
		}
		out = append(out, "environment "+name)
		name = pe.Dockerfile.From
	}
	return out
}

// add records the trees a cell of case pc in arm needs.
func (in *inputs) add(pc plan.PlanCase, arm plan.PlanArm) error {
	for _, what := range treesOfIn(in.plan, pc, arm) {
		if in.trees[what] != nil {
			continue
		}
		if err := in.addTree(pc, arm, what); err != nil {
			return err
		}
	}
	return nil
}

// addTree records one tree, what as treesOf names it.
func (in *inputs) addTree(pc plan.PlanCase, arm plan.PlanArm, what string) error {
	rel, tree, err := in.lookup(pc, arm, what)
	if err != nil {
		return err
	}
	src := filepath.Join(in.suiteDir, filepath.FromSlash(rel))
	if in.from != nil {
		src = in.from.TreeDir(tree.Digest)
	} else if in.suiteDir == "" {
		return fmt.Errorf("pin inputs: %s: no suite folder to read it from", what)
	}
	in.trees[what] = &inputTree{what: what, src: src, tree: tree}
	in.order = append(in.order, what)
	return nil
}

// lookup finds the tree what names in the plan, and its suite-relative folder.
func (in *inputs) lookup(pc plan.PlanCase, arm plan.PlanArm, what string) (rel string, tree plan.Tree, err error) {
	if key, ok := strings.CutPrefix(what, "skill "); ok {
		sk, ok := in.plan.Skills[key]
		if !ok {
			return "", tree, fmt.Errorf("pin inputs: arm %s installs unknown skill %s", arm.Name, key)
		}
		rel, tree = sk.Path, sk.Tree
	} else if dir, ok := strings.CutPrefix(what, "caseDir "); ok {
		t, ok := in.plan.CaseDirs[dir]
		if !ok {
			return "", tree, fmt.Errorf("pin inputs: case %s: the plan has no case folder %s", pc.ID, dir)
		}
		rel, tree = dir, t
	} else if name, ok := strings.CutPrefix(what, "environment "); ok {
		pe := in.plan.Environments[name]
		if pe.Tree == nil || pe.Dockerfile == nil {
			return "", tree, fmt.Errorf("pin inputs: the plan has no Dockerfile folder of environment %s", name)
		}
		rel, tree = pe.Dockerfile.Path, *pe.Tree
	} else {
		fx := strings.TrimPrefix(what, "fixture ")
		t, ok := in.plan.Fixtures[fx]
		if !ok {
			return "", tree, fmt.Errorf("pin inputs: case %s: the plan has no fixture %s", pc.ID, fx)
		}
		rel, tree = fx, t
	}
	return rel, tree, nil
}

// pin snapshots every tree added, verifying each; the first mismatch
// refuses the run, naming the file.
func (in *inputs) pin() error { return in.pinNow(func(*inputTree) bool { return false }) }

// pinFirst pins, as pin does, every tree added but the fixtures the
// machine's cache already holds: those are placed while the first cells
// run (store.PinLater), since a cell reads its fixture from its cell image,
// and a fixture image is built from the snapshot only once it is placed
// and verified (images wait on store.AwaitTree). The run waits for them
// (store.AwaitPins) before it checks the live folders again, so the run
// folder is whole when the run ends; a snapshot refused then fails the run.
func (in *inputs) pinFirst() error {
	holds, _ := in.store.Shared.(interface{ Holds(digest.Digest) bool })
	return in.pinNow(func(t *inputTree) bool {
		return holds != nil && strings.HasPrefix(t.what, "fixture ") && holds.Holds(t.tree.Digest)
	})
}

// pinNow pins every tree added, in order, but those later says to place
// in the background.
func (in *inputs) pinNow(later func(*inputTree) bool) error {
	for _, what := range in.order {
		t := in.trees[what]
		if later(t) {
			in.store.PinLater(t.what, t.src, t.tree)
			continue
		}
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
	hash := plan.HashTree
	if live, ok := in.store.Shared.(interface {
		HashWatched(dir string) (plan.Tree, error)
	}); ok && in.from == nil {
		hash = live.HashWatched // by the machine's stat index of the folder, or its watch since the compile
	}
	for _, what := range in.order {
		t := in.trees[what]
		now, err := hash(t.src)
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
		if rc.status == store.StatusInvalid {
			continue
		}
		var why []string
		for _, what := range treesOfIn(in.plan, rc.pc, rc.arm) {
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

// pinCheckInputs snapshots the case folders and Dockerfile folders that grading the cells
// needs (checks read the case folder and run in environments built from those folders),
// as a run pins them before its first cell; fixtures are pinned by the store.
func pinCheckInputs(p *plan.Plan, suiteDir string, st *store.Store, cells []plan.Cell, cases map[string]plan.PlanCase, arms map[string]plan.PlanArm) error {
	in := newInputs(p, suiteDir, st)
	for _, c := range cells {
		pc := cases[c.Case]
		var whats []string
		if pc.CaseDir != "" {
			whats = append(whats, "caseDir "+path.Clean(pc.CaseDir))
		}
		for _, name := range caseEnvironments(pc) {
			whats = append(whats, environmentTrees(p, name)...)
		}
		for _, what := range whats {
			if in.trees[what] != nil {
				continue
			}
			_, tree, err := in.lookup(pc, arms[c.Arm], what)
			if err != nil {
				return err
			}
			if _, err := os.Stat(st.TreeDir(tree.Digest)); err == nil {
				continue // pinned by the run that rolled it out
			}
			if err := in.addTree(pc, arms[c.Arm], what); err != nil {
				return err
			}
		}
	}
	return in.pin()
}
