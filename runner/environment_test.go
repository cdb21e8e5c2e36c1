package runner

import (
	"context"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/runner/images"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// These tests run cells in environments: skillgate's Debian userland (built with
// debootstrap from the host's mirror the first time, then found by its inputs), a suite's
// Dockerfile folder built on it, with setups and case folders, from suites in
// testdata/env.

// checksOf are a stored result's checks by name.
func checksOf(t *testing.T, out string, s runSuite) map[string]map[string]grade.CheckResult {
	t.Helper()
	results, err := store.Results(s.Plan, &store.Store{Dir: out})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]map[string]grade.CheckResult{}
	for _, r := range results {
		by[r.Cell] = map[string]grade.CheckResult{}
		for _, ch := range r.Checks {
			by[r.Cell][ch.Name] = ch
		}
	}
	return by
}

// wantChecks fails unless cell's checks passed as want says.
func wantChecks(t *testing.T, by map[string]map[string]grade.CheckResult, cell string, want map[string]bool) {
	t.Helper()
	for name, ok := range want {
		ch, found := by[cell][name]
		if !found {
			t.Errorf("%s: no check %q in %+v", cell, name, by[cell])
			continue
		}
		if ch.Passed != ok {
			t.Errorf("%s: check %q passed %v (%s), want %v", cell, name, ch.Passed, ch.Detail, ok)
		}
	}
}

// TestEnvironmentDebianPackage: an environment with jq, a package the default images
// lack. The agent in it uses jq and so does a run: check, in bash with the environment's
// variables; in the default image the same check fails (jq is not there), and passes when
// it names the environment.
func TestEnvironmentDebianPackage(t *testing.T) {
	e := dockertest.Engine(t)
	s := copyTestdataSuite(t, e, "env/jq")
	out := t.TempDir()
	sum, _ := evaluate(t, s.Plan, s.Dir, out)
	if !sum.Complete() || sum.Statuses[store.StatusCompleted] != len(s.Plan.Cells) {
		t.Fatalf("summary %+v", sum)
	}
	by := checksOf(t, out, s)
	wantChecks(t, by, "with/none/1", map[string]bool{`answer contains "jq-1."`: true, "jq reads the result": true, "bash and the environment's variables": true})
	wantChecks(t, by, "without/none/1", map[string]bool{`answer contains "no jq here"`: true, "jq reads the fixture": false, "jq in its environment": true})
	if d := by["without/none/1"]["jq reads the fixture"].Detail; d == "" {
		t.Errorf("the failed check says nothing")
	} else {
		t.Logf("without the environment: %s", d)
	}
	ro := stored(t, out)["with/none/1"]
	if ro.Inputs.Environment == nil || ro.Inputs.Environment.Name != "tools" || ro.Inputs.Environment.Image == "" {
		t.Errorf("rollout inputs %+v", ro.Inputs.Environment)
	}
	if len(ro.Changes) != 1 || ro.Changes[0].Path != "config.json" {
		t.Errorf("changes %+v", ro.Changes)
	}
}

// TestEnvironmentGstackShaped: a gstack-shaped suite on the real Claude Code CLI (the
// scripted model) in skillgate's Debian userland. Each case's setup runs its seed.sh from
// the case folder, making a git repository; what it made is the baseline, so the agent's
// changes are only its own, and git diff in the checks shows them: the case whose agent
// fixes app.txt passes every check, the one whose agent edits README.md fails those that
// read the diff, and a seed.sh that fails makes its cell invalid with what it printed.
func TestEnvironmentGstackShaped(t *testing.T) {
	e := dockertest.Engine(t)
	s := copyTestdataSuite(t, e, "env/gstack")
	out := t.TempDir()
	sum, _ := evaluate(t, s.Plan, s.Dir, out)
	if sum.Statuses[store.StatusCompleted] != 2 || sum.Statuses[store.StatusInvalid] != 1 {
		t.Fatalf("summary %+v", sum)
	}
	by := checksOf(t, out, s)
	wantChecks(t, by, "fix/none/1", map[string]bool{
		`answer contains "git version"`: true, `answer contains "no case folder"`: true, "writes only [app.txt .gstack-home/**]": true,
		"app.txt fixed": true, "only app.txt differs": true, "state excluded from git": true, "state under GSTACK_HOME": true, "case folder read-only": true,
	})
	wantChecks(t, by, "wrong/none/1", map[string]bool{
		"app.txt fixed": false, "only app.txt differs": false, "state excluded from git": true, "state under GSTACK_HOME": false, "case folder read-only": true,
	})
	ros := stored(t, out)
	fix := ros["fix/none/1"]
	if fix.Setup == nil || fix.Setup.ExitCode != 0 || !strings.Contains(fix.Setup.Output, "seeded (full) as uid 1000") {
		t.Fatalf("setup record %+v", fix.Setup)
	}
	var setupPaths, agentPaths []string
	for _, ch := range fix.Setup.Changes {
		setupPaths = append(setupPaths, ch.Path)
	}
	for _, ch := range fix.Changes {
		agentPaths = append(agentPaths, ch.Path)
	}
	if !slices.Contains(setupPaths, ".git/HEAD") || !slices.Contains(setupPaths, "app.txt") {
		t.Errorf("the setup's changes %v lack the repository it made", setupPaths)
	}
	if want := []string{".gstack-home/state.json", "app.txt"}; !slices.Equal(agentPaths, want) {
		t.Errorf("the agent's changes %v, want %v: the setup's are the baseline", agentPaths, want)
	}
	broken := ros["broken/none/1"]
	if broken.Status != store.StatusInvalid || !strings.Contains(broken.Error, "setup failed: exit 3") || !strings.Contains(broken.Error, "cannot seed: no template here") {
		t.Errorf("broken setup: status %s, error %q", broken.Status, broken.Error)
	}
}

// TestEnvironmentDockerfileTool: a chrisbanes-shaped case whose check needs a tool only its
// environment has, an image built from the suite's Dockerfile folder on the Debian
// userland. In that environment the check passes with the environment's variables; a cell
// in the agent's own image passes it by naming the environment, and fails it without.
func TestEnvironmentDockerfileTool(t *testing.T) {
	e := dockertest.Engine(t)
	s := copyTestdataSuite(t, e, "env/tool")
	out := t.TempDir()
	sum, _ := evaluate(t, s.Plan, s.Dir, out)
	if !sum.Complete() || sum.Statuses[store.StatusCompleted] != len(s.Plan.Cells) {
		t.Fatalf("summary %+v", sum)
	}
	by := checksOf(t, out, s)
	wantChecks(t, by, "inside/none/1", map[string]bool{"ktcheck accepts the edit": true, "the cell's own jq": true})
	wantChecks(t, by, "outside/none/1", map[string]bool{"ktcheck in its environment": true, "ktcheck in the cell's image": false})
	if d := by["outside/none/1"]["ktcheck in the cell's image"].Detail; !strings.Contains(d, "exit 1: ktcheck: not here") {
		t.Errorf("without its environment: %q, want the tool not found", d)
	}
	ros := stored(t, out)
	if env := ros["inside/none/1"].Inputs.Environment; env == nil || env.Name != "kotlin" || !strings.HasPrefix(env.Image, "sha256:") {
		t.Errorf("inside: environment inputs %+v", env)
	}
	if env := ros["outside/none/1"].Inputs.Environment; env != nil {
		t.Errorf("outside: environment inputs %+v, want none", env)
	}
}

// TestEnvironmentPinnedImage: an environment can name an image the engine has by reference
// and digest (here the Debian root with jq, by its ID). A cell in it uses its tools; a
// digest the local image does not have, and a Dockerfile FROM an image the engine lacks,
// make their cells invalid saying so: nothing is pulled.
func TestEnvironmentPinnedImage(t *testing.T) {
	e := dockertest.Engine(t)
	jq := copyTestdataSuite(t, e, "env/jq")
	ref, id, err := images.New(dockerBackend{e}, jq.Plan, nil, io.Discard).EnvironmentImage(context.Background(), "tools")
	if err != nil {
		t.Fatal(err)
	}
	root := writeRepo(t, map[string]string{
		"s/df/Dockerfile": "FROM skillgate/absent-base:1\n",
		"s/suite.cue": `package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/policies"
)

schema.#Suite & {
	name: "envtest-pinned"
	agent: agents.command & {command: ["sh", "-c", "jq --version"]}
	trials: 1
	limits: timeout: "60s"
	environments: {
		pinned: image: {ref: "` + ref + `", digest: "` + id + `"}
		wrong: image: {ref: "` + ref + `", digest: "sha256:` + strings.Repeat("0", 64) + `"}
		nobase: dockerfile: path: "df"
	}
	arms: none: {}
	cases: {
		ok: {prompt: "Run jq.", environment: "pinned", assert: [{answer: contains: "jq-1."}, {name: "jq in the check", run: "jq -n 1"}]}
		wrong: {prompt: "Run jq.", environment: "wrong"}
		nobase: {prompt: "Run jq.", environment: "nobase"}
	}
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
	out := t.TempDir()
	sum, _ := evaluate(t, p, dir, out)
	if sum.Statuses[store.StatusCompleted] != 1 || sum.Statuses[store.StatusInvalid] != 2 {
		t.Fatalf("summary %+v", sum)
	}
	wantChecks(t, checksOf(t, out, runSuite{Dir: dir, Plan: p}), "ok/none/1", map[string]bool{`answer contains "jq-1."`: true, "jq in the check": true})
	ros := stored(t, out)
	if env := ros["ok/none/1"].Inputs.Environment; env == nil || env.Image != id {
		t.Errorf("ok: environment inputs %+v, want image %s", env, id)
	}
	for cell, want := range map[string]string{
		"wrong/none/1":  "not the pinned sha256:" + strings.Repeat("0", 64),
		"nobase/none/1": "FROM skillgate/absent-base:1, which is not in the Docker engine",
	} {
		if ro := ros[cell]; ro == nil || ro.Status != store.StatusInvalid || !strings.Contains(ro.Error, want) {
			t.Errorf("%s: %+v, want invalid with %q", cell, ro, want)
		}
	}
}
