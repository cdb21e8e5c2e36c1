package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/cell"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"

	"github.com/opencontainers/go-digest"
)

// These tests run small suites from testdata/run end to end: real cell
// images, real containers, the real store, and the real CLI where the
// behaviour is the process's (signals, exit codes, plan files).

// runSuite is a test suite copied into a fresh repository (the suite's
// paths must stay inside one) and compiled.
type runSuite struct {
	Dir  string
	Plan *plan.Plan
}

// copySuite copies testdata/run/NAME into a fresh repository, compiles it,
// and removes the cell images the test builds for it when the test ends.
func copySuite(t *testing.T, e *docker.Engine, name string) runSuite {
	t.Helper()
	return copyTestdataSuite(t, e, filepath.Join("run", name))
}

// copyTestdataSuite copies the suite at testdata/REL into a fresh
// repository (its paths must stay inside one) and compiles it; with an
// engine, the cell images the test builds for it go when the test ends.
func copyTestdataSuite(t *testing.T, e *docker.Engine, rel string) runSuite {
	t.Helper()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, filepath.Base(rel))
	copyTree(t, filepath.Join("testdata", rel), dir)
	p, err := plan.CompileDir(dir)
	if err != nil {
		t.Fatal(suite.PrintError(err, dir))
	}
	if e != nil {
		t.Cleanup(func() {
			// Cell images are content-addressed and harmless, but a test should
			// not leave them; another run of these tests may still use one.
			if _, err := e.RemoveImages(context.Background(), docker.LabelSuite+"="+p.Suite.Name); err != nil {
				t.Logf("remove cell images of %s: %v", p.Suite.Name, err)
			}
		})
	}
	return runSuite{Dir: dir, Plan: p}
}

// copyTree copies the folder src to dst, files as 0644.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// run runs the suite in-process and fails the test on an error.
func (s runSuite) run(t *testing.T, out string, opts Options) *Summary {
	t.Helper()
	opts.Out, opts.SuiteDir = out, s.Dir
	if opts.Jobs == 0 {
		opts.Jobs = 4
	}
	var log bytes.Buffer
	opts.Log = &log
	sum, err := Run(context.Background(), s.Plan, opts)
	t.Logf("run %s:\n%s", s.Plan.Suite.Name, log.String())
	if err != nil {
		t.Fatalf("run %s: %v", s.Plan.Suite.Name, err)
	}
	return sum
}

// cell returns the plan's cell with the given ID.
func (s runSuite) cell(t *testing.T, id string) plan.Cell {
	t.Helper()
	for _, c := range s.Plan.Cells {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("the plan has no cell %s", id)
	return plan.Cell{}
}

// stored reads every rollout in out's store, by cell ID. Each must be a
// complete rollout stored under its own key.
func stored(t *testing.T, out string) map[string]*store.Rollout {
	t.Helper()
	dir := filepath.Join(out, filepath.FromSlash(store.DirRollouts))
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]*store.Rollout{}
	}
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*store.Rollout{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), store.FileRollout))
		if err != nil {
			t.Errorf("store entry %s: %v", e.Name(), err)
			continue
		}
		r := &store.Rollout{}
		if err := json.Unmarshal(b, r); err != nil {
			t.Errorf("store entry %s: rollout.json is not valid JSON: %v", e.Name(), err)
			continue
		}
		if r.Key.Encoded() != e.Name() {
			t.Errorf("store entry %s holds the rollout of key %s", e.Name(), r.Key)
		}
		if _, dup := got[r.Cell]; dup {
			t.Errorf("cell %s is stored twice", r.Cell)
		}
		got[r.Cell] = r
	}
	return got
}

// checkStoreMatchesPlan checks that the store holds exactly one rollout per
// planned cell, under that cell's rollout key, each with status want.
func checkStoreMatchesPlan(t *testing.T, s runSuite, out, want string) {
	t.Helper()
	got := stored(t, out)
	if len(got) != len(s.Plan.Cells) {
		t.Errorf("store holds %d rollouts, the plan has %d cells", len(got), len(s.Plan.Cells))
	}
	for _, c := range s.Plan.Cells {
		r, ok := got[c.ID]
		switch {
		case !ok:
			t.Errorf("cell %s has no rollout", c.ID)
		case r.Key != c.Rollout:
			t.Errorf("cell %s is stored under key %s, planned %s", c.ID, r.Key, c.Rollout)
		case r.Status != want:
			t.Errorf("cell %s: status %s (%s), want %s", c.ID, r.Status, r.Error, want)
		}
	}
}

// readStored reads a file of the rollout stored for the cell.
func readStored(t *testing.T, out string, c plan.Cell, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(store.DirRollouts), c.Rollout.Encoded(), filepath.FromSlash(name)))
	if err != nil {
		t.Fatalf("cell %s: %v", c.ID, err)
	}
	return string(b)
}

// emptyDir fails unless dir holds nothing (or is absent).
func emptyDir(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("%s holds %s", dir, e.Name())
	}
}

// runContainers lists the containers of skillgate runs into out, running
// or not. Only out's are listed: other runs may share the engine.
func runContainers(t *testing.T, out string) []string {
	t.Helper()
	abs, err := filepath.Abs(out)
	if err != nil {
		t.Fatal(err)
	}
	return dockertest.Containers(t, docker.LabelRun, docker.LabelOut+"="+digest.FromString(abs).Encoded()[:16])
}

// buildCLI builds skillgate from the repository holding this package.
func buildCLI(t *testing.T) string {
	t.Helper()
	mod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(mod)) == "" {
		t.Fatalf("find the module root: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "skillgate")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/skillgate")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(mod)))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build skillgate: %v\n%s", err, b)
	}
	return bin
}

// useCLIPlan replaces the suite's plan with the one the CLI compiles, so
// that the test and the CLI agree on every key even if the tree changed
// between building the test and building the CLI.
func (s *runSuite) useCLIPlan(t *testing.T, bin string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "plan.json")
	if code, _ := cli(t, bin, "plan", s.Dir, "-o", file); code != 0 {
		t.Fatalf("skillgate plan: exit %d", code)
	}
	p, err := plan.ReadPlan(file)
	if err != nil {
		t.Fatal(err)
	}
	s.Plan = p
	return file
}

// cli runs skillgate to its end and returns its exit code and stderr.
func cli(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("skillgate %s: %v", strings.Join(args, " "), err)
	}
	t.Logf("skillgate %s: exit %d\n%s", strings.Join(args, " "), cmd.ProcessState.ExitCode(), stderr.String())
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// waitStored polls out's store until it holds at least n rollouts.
func waitStored(t *testing.T, out string, n int, done <-chan struct{}) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		m, _ := filepath.Glob(filepath.Join(out, filepath.FromSlash(store.DirRollouts), "*", store.FileRollout))
		if len(m) >= n {
			return
		}
		select {
		case <-done:
			t.Fatalf("skillgate exited before %d cells were stored", n)
		case <-deadline:
			t.Fatalf("no %d stored cells after 60 s", n)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// startCLI starts `skillgate run` in the background; the returned channel
// closes when it has exited.
func startCLI(t *testing.T, bin string, stderr *bytes.Buffer, args ...string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	return cmd, done
}

// sections splits a cell's stdout at its "---" lines.
func sections(stdout string) []string {
	return strings.Split(stdout, "---\n")
}

// The none arm's cell holds no skill file anywhere and no skills folder;
// the forced arm's holds the skill where the agent looks for it.
func TestRunNoneArmHasNoSkill(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "fs")
	out := t.TempDir()
	if sum := s.run(t, out, Options{}); sum.Ran != 2 || !sum.Complete() {
		t.Fatalf("summary %+v", sum)
	}

	none := sections(readStored(t, out, s.cell(t, "a/none/1"), store.FileStdout))
	if len(none) != 3 {
		t.Fatalf("none arm stdout: %q", none)
	}
	if strings.TrimSpace(none[0]) != "" {
		t.Errorf("the none arm's cell holds skill files:\n%s", none[0])
	}
	if strings.Contains(none[1], ".agents") {
		t.Errorf("the none arm's workspace holds a skills folder:\n%s", none[1])
	}
	if !strings.Contains(none[1], "README.md") {
		t.Errorf("the none arm's workspace lacks the fixture:\n%s", none[1])
	}
	if strings.Contains(none[2], "SKILLGATE_SKILLS_DIR") {
		t.Errorf("the none arm's environment names a skills folder:\n%s", none[2])
	}

	forced := sections(readStored(t, out, s.cell(t, "a/forced/1"), store.FileStdout))
	if len(forced) != 3 {
		t.Fatalf("forced arm stdout: %q", forced)
	}
	if got := strings.TrimSpace(forced[0]); got != "/workspace/.agents/skills/s/SKILL.md" {
		t.Errorf("the forced arm's skill files: %q, want only /workspace/.agents/skills/s/SKILL.md", got)
	}
	if !strings.Contains(forced[1], ".agents") || !strings.Contains(forced[1], "README.md") {
		t.Errorf("the forced arm's workspace:\n%s", forced[1])
	}
	if !strings.Contains(forced[2], "SKILLGATE_SKILLS_DIR=/workspace/.agents/skills\n") {
		t.Errorf("the forced arm's environment lacks SKILLGATE_SKILLS_DIR:\n%s", forced[2])
	}
}

// A skill's folder in the workspace holds the skill's tree alone: what the
// fixture has at that path is hidden from the arm that installs the skill,
// and its collection takes the hidden files for neither a change nor a
// deletion; the arm without skills sees the fixture's folder as it is.
func TestSkillFolderHidesFixtures(t *testing.T) {
	e := dockertest.Engine(t)
	root := writeRepo(t, map[string]string{
		"s/skill/SKILL.md":                   "---\nname: s\ndescription: The skill.\n---\nBody.\n",
		"s/fx/README.md":                     "# fixture\n",
		"s/fx/.agents/skills/s/SKILL.md":     "---\nname: s\ndescription: The fixture's own.\n---\n",
		"s/fx/.agents/skills/s/stale.md":     "stale\n",
		"s/fx/.agents/skills/other/SKILL.md": "---\nname: other\ndescription: Another.\n---\n",
		"s/fx/.bench-nonce":                  dockertest.RandomHex(t) + "\n",
		"s/suite.cue": `package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/policies"
)

schema.#Suite & {
	name: "runtest-hide"
	skills: s: path: "skill"
	agent: agents.command & {command: ["sh", "-c", "ls -A .agents/skills/s; cat .agents/skills/s/SKILL.md; ls -A .agents/skills"]}
	trials: 1
	arms: {
		forced: {skills: ["s"], activation: "forced"}
		none: {}
	}
	cases: a: {prompt: "Look.", fixture: "fx"}
	policy: policies.advisory
}
`,
	})
	dir := filepath.Join(root, "s")
	p, err := plan.CompileDir(dir)
	if err != nil {
		t.Fatal(suite.PrintError(err, root))
	}
	t.Cleanup(func() { e.RemoveImages(context.Background(), docker.LabelSuite+"="+p.Suite.Name) })
	rs := runSuite{Dir: dir, Plan: p}
	out := t.TempDir()
	if sum := rs.run(t, out, Options{}); sum.Ran != 2 || !sum.Complete() {
		t.Fatalf("summary %+v", sum)
	}
	for id, want := range map[string]string{
		"a/forced/1": "SKILL.md\n---\nname: s\ndescription: The skill.\n---\nBody.\nother\ns\n",
		"a/none/1":   "SKILL.md\nstale.md\n---\nname: s\ndescription: The fixture's own.\n---\nother\ns\n",
	} {
		if got := readStored(t, out, rs.cell(t, id), store.FileStdout); got != want {
			t.Errorf("%s saw %q, want %q", id, got, want)
		}
	}
	for id, ro := range stored(t, out) {
		if len(ro.Changes) != 0 {
			t.Errorf("%s: changes %+v, want none", id, ro.Changes)
		}
	}
	// What a collection that lists the whole workspace (the engine's API, a Pod's
	// tar) compares with: the skill's tree, not the fixture's files below it.
	for _, arm := range p.Arms {
		initial := cell.InitialWorkspace(p, p.Cases[0], arm)
		_, stale := initial[".agents/skills/s/stale.md"]
		if _, other := initial[".agents/skills/other/SKILL.md"]; stale != (arm.Name == "none") || !other {
			t.Errorf("arm %s: the initial workspace holds stale.md %v, other %v", arm.Name, stale, other)
		}
	}
}

// No host variable enters a cell; a cell's changes are its workspace writes
// only, stored with their content.
func TestRunCellEnvAndChanges(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "fs")
	name, value := "SKILLGATE_CANARY_"+strings.ToUpper(dockertest.RandomHex(t)), "canary-"+dockertest.RandomHex(t)
	t.Setenv(name, value)
	out := t.TempDir()
	if sum := s.run(t, out, Options{}); sum.Ran != 2 || !sum.Complete() {
		t.Fatalf("summary %+v", sum)
	}
	for _, id := range []string{"a/none/1", "a/forced/1"} {
		c := s.cell(t, id)
		stdout := readStored(t, out, c, store.FileStdout)
		if !strings.Contains(stdout, "SKILLGATE_PROMPT=") {
			t.Errorf("%s: the agent's env was not printed:\n%s", id, stdout)
		}
		if strings.Contains(stdout, value) || strings.Contains(stdout, name) {
			t.Errorf("%s: the host's %s reached the cell:\n%s", id, name, stdout)
		}
		r := stored(t, out)[id]
		want := []store.Change{{Path: "out.txt", Kind: store.ChangeAdded, Type: "file", Size: 2, Digest: digest.FromString("y\n")}}
		if !reflect.DeepEqual(r.Changes, want) {
			t.Errorf("%s: changes %+v, want %+v", id, r.Changes, want)
		}
		if got := readStored(t, out, c, store.DirFiles+"/"+want[0].Digest.Encoded()); got != "y\n" {
			t.Errorf("%s: stored out.txt holds %q", id, got)
		}
		var files []string
		ws := filepath.Join(out, filepath.FromSlash(store.DirRollouts), c.Rollout.Encoded(), store.DirFiles)
		filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
			if err == nil && p != ws {
				rel, _ := filepath.Rel(ws, p)
				files = append(files, filepath.ToSlash(rel))
			}
			return nil
		})
		if !reflect.DeepEqual(files, []string{want[0].Digest.Encoded()}) {
			t.Errorf("%s: stored files hold %q, want only out.txt's content", id, files)
		}
	}
}

// A rerun of an unchanged plan reuses every stored cell and never reaches
// for the engine.
func TestResumeNeedsNoEngine(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "basic")
	out := t.TempDir()
	n := len(s.Plan.Cells)
	if sum := s.run(t, out, Options{}); sum.Ran != n || !sum.Complete() {
		t.Fatalf("first run: %+v", sum)
	}
	before := map[string]string{}
	for id := range stored(t, out) {
		before[id] = readStored(t, out, s.cell(t, id), store.FileRollout)
	}

	t.Setenv("DOCKER_HOST", "unix:///nonexistent.sock")
	sum := s.run(t, out, Options{})
	if sum.Ran != 0 || sum.Reused != n || sum.Selected != n || sum.Statuses[store.StatusCompleted] != n || !sum.Complete() {
		t.Errorf("rerun: %+v, want %d reused and none ran", sum, n)
	}
	for id, b := range before {
		if got := readStored(t, out, s.cell(t, id), store.FileRollout); got != b {
			t.Errorf("rerun rewrote the rollout of %s", id)
		}
	}

	// The control: with a cell to run, the same run needs the engine, so
	// the rerun above did not just reach one some other way.
	if err := os.RemoveAll(filepath.Join(out, filepath.FromSlash(store.DirRollouts), s.Plan.Cells[0].Rollout.Encoded())); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir}); err == nil || !strings.Contains(err.Error(), "docker engine") {
		t.Errorf("run with a missing cell and no engine: %v, want an engine error", err)
	}
}

// A run killed with SIGKILL midway loses nothing stored and leaves nothing
// a rerun would trust or keep: the rerun runs exactly the rest.
func TestKillMidwayResumes(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "slow")
	bin := buildCLI(t)
	s.useCLIPlan(t, bin)
	out := t.TempDir()
	n := len(s.Plan.Cells)

	var stderr bytes.Buffer
	cmd, done := startCLI(t, bin, &stderr, "run", s.Dir, "--out", out, "--jobs", "2")
	waitStored(t, out, 2, done)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-done
	t.Logf("killed skillgate:\n%s", stderr.String())
	// The engine may still be creating a container the dead process asked
	// for; a rerun started within milliseconds would sweep before it exists.
	time.Sleep(time.Second)
	killed := len(stored(t, out))
	if killed >= n {
		t.Fatalf("all %d cells were stored before the kill", n)
	}
	staged, _ := os.ReadDir(filepath.Join(out, filepath.FromSlash(store.DirTmp)))
	t.Logf("after kill -9: %d stored, %d staged, containers left %q", killed, len(staged), runContainers(t, out))

	sum := s.run(t, out, Options{Jobs: 4})
	if sum.Ran != n-killed || sum.Reused != killed || !sum.Complete() {
		t.Errorf("rerun: %+v, want %d ran and %d reused", sum, n-killed, killed)
	}
	checkStoreMatchesPlan(t, s, out, store.StatusCompleted)
	emptyDir(t, filepath.Join(out, filepath.FromSlash(store.DirTmp)))
	if left := runContainers(t, out); len(left) > 0 {
		t.Errorf("containers left: %q", left)
	}
}

// Ctrl-C stops the run within seconds, exits 2, removes its containers and
// keeps every stored cell; a rerun runs only the rest.
func TestInterruptStopsCleanly(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "slow")
	bin := buildCLI(t)
	s.useCLIPlan(t, bin)
	out := t.TempDir()
	n := len(s.Plan.Cells)

	var stderr bytes.Buffer
	cmd, done := startCLI(t, bin, &stderr, "run", s.Dir, "--out", out, "--jobs", "2")
	waitStored(t, out, 1, done)
	sent := time.Now()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("skillgate still running 20 s after SIGINT:\n%s", stderr.String())
	}
	took := time.Since(sent)
	t.Logf("exit %d %s after SIGINT:\n%s", cmd.ProcessState.ExitCode(), took, stderr.String())
	if took > 5*time.Second {
		t.Errorf("skillgate took %s to stop after SIGINT", took)
	}
	if code := cmd.ProcessState.ExitCode(); code != 2 {
		t.Errorf("exit code %d after SIGINT, want 2", code)
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr does not say the run was interrupted")
	}
	// A container whose creation was under way when skillgate exited
	// shows up a moment later.
	time.Sleep(1500 * time.Millisecond)
	if left := runContainers(t, out); len(left) > 0 {
		t.Errorf("containers left after SIGINT: %q", left)
	}
	emptyDir(t, filepath.Join(out, filepath.FromSlash(store.DirTmp)))
	kept := stored(t, out)
	if len(kept) == 0 || len(kept) >= n {
		t.Fatalf("%d of %d cells stored after SIGINT", len(kept), n)
	}
	st := &store.Store{Dir: out}
	for id, r := range kept {
		if c := s.cell(t, id); r.Key != c.Rollout || r.Status != store.StatusCompleted {
			t.Errorf("cell %s stored as %s under %s, want completed under %s", id, r.Status, r.Key, c.Rollout)
		}
		if got := readStored(t, out, s.cell(t, id), store.FileStdout); got != "done\n" {
			t.Errorf("cell %s stored stdout %q", id, got)
		}
		// Graded before the exit: the report counts it as run.
		if _, ok, err := st.Grade(s.cell(t, id).Grade); err != nil || !ok {
			t.Errorf("cell %s stored but not graded before the exit (%v)", id, err)
		}
	}
	v, err := os.ReadFile(filepath.Join(out, "verdict.json"))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("INCOMPLETE %d cells not run", n-len(kept)); !strings.Contains(string(v), want) {
		t.Errorf("verdict.json after SIGINT lacks %q:\n%s", want, v)
	}

	sum := s.run(t, out, Options{Jobs: 4})
	if sum.Ran != n-len(kept) || sum.Reused != len(kept) || !sum.Complete() {
		t.Errorf("rerun: %+v, want %d ran and %d reused", sum, n-len(kept), len(kept))
	}
	checkStoreMatchesPlan(t, s, out, store.StatusCompleted)
}

// A plan file runs exactly that plan: a changed skill is refused, by name,
// before anything runs.
func TestPlanFileRefusesChangedSuite(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "basic")
	bin := buildCLI(t)
	out := filepath.Join(t.TempDir(), "out")
	plan := s.useCLIPlan(t, bin)
	skill := filepath.Join(s.Dir, "skill", "SKILL.md")
	orig, err := os.ReadFile(skill)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(skill, append(slices.Clip(orig), "\nAlso check the tests.\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	code, msg := cli(t, bin, "run", plan, "--suite", s.Dir, "--out", out)
	if code != 2 {
		t.Errorf("run of a stale plan: exit %d, want 2", code)
	}
	if !strings.Contains(msg, "SKILL.md") {
		t.Errorf("the refusal does not name SKILL.md:\n%s", msg)
	}
	if got := stored(t, out); len(got) > 0 {
		t.Errorf("a refused plan stored %d cells", len(got))
	}

	if err := os.WriteFile(skill, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	// The verdict (0 PASS, 1 FAIL) is the policy's business, not this test's.
	if code, _ := cli(t, bin, "run", plan, "--suite", s.Dir, "--out", out); code != 0 && code != 1 {
		t.Errorf("run of the matching plan: exit %d, want a verdict (0 or 1)", code)
	}
	checkStoreMatchesPlan(t, s, out, store.StatusCompleted)
}

// An agent's failure and timeout are outcomes; an engine that cannot run
// the cell makes it invalid, and the next run retries it.
func TestRunStatuses(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "status")
	out := t.TempDir()
	start := time.Now()
	sum := s.run(t, out, Options{Jobs: len(s.Plan.Cells)})
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the run took %s with a 2 s timeout", took)
	}
	want := map[string]int{store.StatusCompleted: 2, store.StatusFailed: 2, store.StatusTimeout: 2}
	if sum.Ran != 6 || !reflect.DeepEqual(sum.Statuses, want) || !sum.Complete() {
		t.Errorf("summary %+v, want 6 ran with statuses %v, complete", sum, want)
	}
	for id, r := range stored(t, out) {
		switch r.Case {
		case "ok":
			if r.Status != store.StatusCompleted || r.ExitCode != 0 || r.Answer != "ok\n" {
				t.Errorf("%s: %s exit %d answer %q", id, r.Status, r.ExitCode, r.Answer)
			}
		case "fail":
			if r.Status != store.StatusFailed || r.ExitCode != 3 || r.Error != "" || r.Answer != "failing\n" {
				t.Errorf("%s: %s exit %d error %q answer %q, want failed with exit 3", id, r.Status, r.ExitCode, r.Error, r.Answer)
			}
		case "slow":
			if r.Status != store.StatusTimeout || r.Error != "" {
				t.Errorf("%s: %s (%s), want timeout", id, r.Status, r.Error)
			}
			if r.Durations.Agent < 1.9 || r.Durations.Total > 6 {
				t.Errorf("%s: agent ran %.2fs of %.2fs, want the 2 s limit", id, r.Durations.Agent, r.Durations.Total)
			}
		}
	}

	t.Run("missing image", func(t *testing.T) {
		s := copySuite(t, e, "noimage")
		out := t.TempDir()
		for i := 1; i <= 2; i++ {
			sum := s.run(t, out, Options{})
			if sum.Ran != 2 || sum.Reused != 0 || sum.Statuses[store.StatusInvalid] != 2 || sum.Complete() {
				t.Errorf("run %d: %+v, want both cells run again and invalid, incomplete", i, sum)
			}
			got := stored(t, out)
			if len(got) != 2 {
				t.Errorf("run %d stored %d cells", i, len(got))
			}
			for id, r := range got {
				if r.Status != store.StatusInvalid || !strings.Contains(r.Error, "skillgate/none-such:1") || !strings.Contains(r.Error, "not in the Docker engine") {
					t.Errorf("run %d: %s: %s %q, want invalid naming the missing image", i, id, r.Status, r.Error)
				}
			}
		}
	})
}

// Filters select cells by case, arm and split; a value the plan lacks is an
// error that names it, never an empty run.
func TestSelectFilters(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "basic")
	ids := func(cs []plan.Cell) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	for _, tc := range []struct {
		cases, arms []string
		split       string
		want        []string
	}{
		{nil, nil, "", ids(s.Plan.Cells)},
		{[]string{"a"}, []string{"none"}, "", []string{"a/none/1", "a/none/2"}},
		{nil, []string{"forced"}, "validation", []string{"b/forced/1", "b/forced/2"}},
		{[]string{"a", "b"}, nil, "train", []string{"a/none/1", "a/none/2", "a/forced/1", "a/forced/2"}},
		{[]string{"b"}, nil, "train", nil},
	} {
		got, err := Select(s.Plan, tc.cases, tc.arms, tc.split)
		if err != nil || !slices.Equal(ids(got), tc.want) {
			t.Errorf("Select(%q, %q, %q) = %q, %v; want %q", tc.cases, tc.arms, tc.split, ids(got), err, tc.want)
		}
	}
	for _, tc := range []struct {
		cases, arms []string
		split, kind string
		bad         string
	}{
		{[]string{"a", "nope-case"}, nil, "", "case", "nope-case"},
		{nil, []string{"nope-arm"}, "", "arm", "nope-arm"},
		{nil, nil, "test-frozen", "split", "test-frozen"},
	} {
		_, err := Select(s.Plan, tc.cases, tc.arms, tc.split)
		if err == nil || !strings.Contains(err.Error(), tc.kind) || !strings.Contains(err.Error(), `"`+tc.bad+`"`) {
			t.Errorf("Select(%q, %q, %q): %v, want an error naming %s %q", tc.cases, tc.arms, tc.split, err, tc.kind, tc.bad)
		}
		out := filepath.Join(t.TempDir(), "out")
		if _, err := Run(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Cases: tc.cases, Arms: tc.arms, Split: tc.split}); err == nil || !strings.Contains(err.Error(), tc.bad) {
			t.Errorf("Run with %s %q: %v, want an error naming it", tc.kind, tc.bad, err)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("Run with %s %q made its run folder", tc.kind, tc.bad)
		}
	}

	bin := buildCLI(t)
	s.useCLIPlan(t, bin)
	out := t.TempDir()
	if code, msg := cli(t, bin, "run", s.Dir, "--out", out, "--arm", "nope-arm"); code != 2 || !strings.Contains(msg, "nope-arm") {
		t.Errorf("run --arm nope-arm: exit %d, want 2 and a message naming it", code)
	}
	// A filtered run is complete for its cells but, for the gate, INCOMPLETE.
	if code, msg := cli(t, bin, "run", s.Dir, "--out", out, "--case", "a", "--arm", "none"); code > 2 || strings.Contains(msg, "invalid") {
		t.Errorf("run --case a --arm none: exit %d", code)
	}
	got := slices.Sorted(maps.Keys(stored(t, out)))
	if want := []string{"a/none/1", "a/none/2"}; !slices.Equal(got, want) {
		t.Errorf("run --case a --arm none stored %q, want %q", got, want)
	}
	if sum := s.run(t, out, Options{}); sum.Ran != len(s.Plan.Cells)-2 || sum.Reused != 2 || !sum.Complete() {
		t.Errorf("full run after the filtered one: %+v", sum)
	}
}
