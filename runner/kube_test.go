package runner

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/cell"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/kube"
	"github.com/skillgate/skillgate/runner/kube/kubetest"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// These tests run cells as Pods of the real cluster .ci/kube-up starts.

// gradesOf is every cell's grade in out, as a line a person can diff: its
// status, whether it passed, and each check's outcome.
func gradesOf(t *testing.T, p *plan.Plan, out string) map[string]string {
	t.Helper()
	rs, err := store.Results(p, &store.Store{Dir: out})
	if err != nil {
		t.Fatal(err)
	}
	g := map[string]string{}
	for _, r := range rs {
		checks := make([]string, 0, len(r.Checks))
		for _, ch := range r.Checks {
			checks = append(checks, fmt.Sprintf("%s:%s=%v", ch.Kind, ch.Name, ch.Passed))
		}
		slices.Sort(checks)
		g[r.Cell] = fmt.Sprintf("%s passed=%v score=%.3f %s", r.Status, r.Passed, r.Score, strings.Join(checks, " "))
	}
	return g
}

// The demo suite, the README's first command, gives the same grades and
// the same verdict on Kubernetes as on Docker: every cell's status, checks
// (its run: checks in check Pods) and pass, cell by cell.
func TestKubernetesDemoMatchesDocker(t *testing.T) {
	dockertest.Engine(t)
	cfg := &kube.Config{Kubeconfig: kubetest.Kubeconfig(t)}
	p, err := plan.CompileDir("../suites/demo")
	if err != nil {
		t.Fatal(suite.PrintError(err, ".."))
	}
	suiteDir, _ := filepath.Abs("../suites/demo")
	evaluate := func(name string, k *kube.Config) (string, *Summary, string) {
		out := t.TempDir()
		var log bytes.Buffer
		t0 := time.Now()
		sum, r, err := Evaluate(context.Background(), p, Options{Out: out, SuiteDir: suiteDir, Jobs: 8, Log: &log, Kubernetes: k})
		if err != nil || r == nil {
			t.Fatalf("evaluate on %s: %v\n%s", name, err, log.String())
		}
		t.Logf("%s: %d cells in %s, verdict %s %v", name, sum.Ran, time.Since(t0).Round(time.Millisecond), r.Verdict.Verdict, r.Verdict.Reasons)
		return out, sum, fmt.Sprintf("%s %v", r.Verdict.Verdict, r.Verdict.Reasons)
	}
	dockerOut, dsum, dverdict := evaluate("docker", nil)
	// The agent image the Docker run built (or found) goes into the cluster.
	kubetest.Load(t, p.Agent.Image)
	kubeOut, ksum, kverdict := evaluate("kubernetes", cfg)
	if !ksum.Complete() || ksum.Statuses[store.StatusCompleted] != len(p.Cells) {
		t.Errorf("kubernetes summary %+v", ksum)
	}
	if dverdict != kverdict || !dsum.Complete() {
		t.Errorf("verdict on docker %s, on kubernetes %s", dverdict, kverdict)
	}
	dg, kg := gradesOf(t, p, dockerOut), gradesOf(t, p, kubeOut)
	runChecks := 0
	for _, c := range p.Cells {
		if dg[c.ID] != kg[c.ID] {
			t.Errorf("%s:\n docker     %s\n kubernetes %s", c.ID, dg[c.ID], kg[c.ID])
		}
		runChecks += strings.Count(kg[c.ID], grade.CheckRun+":")
	}
	if runChecks == 0 {
		t.Error("no run: check was compared: the check Pods went untested")
	}
	if len(kg) != len(p.Cells) {
		t.Errorf("%d grades on kubernetes, want %d", len(kg), len(p.Cells))
	}
	t.Logf("%d cells, %d run: check outcomes compared", len(p.Cells), runChecks)
	// Each cell came from a Pod, not from a container.
	rs, _ := store.Results(p, &store.Store{Dir: kubeOut})
	for _, r := range rs[:1] {
		ro, ok, err := (&store.Store{Dir: kubeOut}).Rollout(r.Rollout)
		if err != nil || !ok || !strings.HasPrefix(ro.Inputs.CellImage, "sha256:") {
			t.Errorf("%s: rollout %+v, %v", r.Cell, ro, err)
		}
	}
}

// A run killed with SIGKILL midway leaves Pods running; the rerun into the
// same folder deletes them, runs the rest, and leaves no Pod of its own.
func TestKubernetesKillMidwayLeavesNoPod(t *testing.T) {
	e := dockertest.Engine(t)
	kc := kubetest.Kubeconfig(t)
	c := kubetest.Cluster(t)
	sandbox, err := e.EnsureSandbox(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	kubetest.Load(t, sandbox)
	s := copySuite(t, e, "slow")
	bin := buildCLI(t)
	s.useCLIPlan(t, bin)
	out := t.TempDir()
	n := len(s.Plan.Cells)
	sel := docker.LabelOut + "=" + cell.OutLabel(out)

	var stderr bytes.Buffer
	cmd, done := startCLI(t, bin, &stderr, "run", s.Dir, "--out", out, "--jobs", "3", "--backend", "kubernetes", "--kubeconfig", kc)
	waitStored(t, out, 2, done)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-done
	t.Logf("killed skillgate:\n%s", stderr.String())
	left, err := c.Pods(context.Background(), sel)
	if err != nil {
		t.Fatal(err)
	}
	killed := len(stored(t, out))
	t.Logf("after kill -9: %d stored, pods left %q", killed, left)
	if len(left) == 0 || killed >= n {
		t.Fatalf("the kill left no pod to sweep (%d of %d cells stored): the test shows nothing", killed, n)
	}

	sum := s.run(t, out, Options{Jobs: 4, Kubernetes: &kube.Config{Kubeconfig: kc}})
	if sum.Ran != n-killed || sum.Reused != killed || !sum.Complete() {
		t.Errorf("rerun: %+v, want %d ran and %d reused", sum, n-killed, killed)
	}
	checkStoreMatchesPlan(t, s, out, store.StatusCompleted)
	if left, err := c.Pods(context.Background(), sel); err != nil || len(left) > 0 {
		t.Errorf("pods left after the rerun: %q (%v)", left, err)
	}
}

// With a registry, a run's Pods, its cells' and its run: checks', start from
// the agent image that PushImages put there, named by its digest: the node
// asks the registry for that manifest, a name only the registry has (its
// port is the test's own), and every cell and check runs.
func TestKubernetesRunPullsPushedImages(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials: an open registry
	e := dockertest.Engine(t)
	kc := kubetest.Kubeconfig(t)
	kubetest.Cluster(t)
	s := copySuite(t, e, "checks")
	reg := dockertest.NewRegistry(t)
	registry := reg.Host + "/sg"
	out := t.TempDir()
	ctx := context.Background()

	var log bytes.Buffer
	pushed, err := PushImages(ctx, s.Plan, Options{Out: out, SuiteDir: s.Dir, Log: &log}, registry)
	if err != nil {
		t.Fatalf("push: %v\n%s", err, log.String())
	}
	sandbox, err := e.EnsureSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pushed) != 1 || pushed[0].Local != sandbox || !strings.HasPrefix(pushed[0].Ref, registry+"/sandbox@sha256:") {
		t.Fatalf("pushed %+v; want the agent image %s alone", pushed, sandbox)
	}
	// The tag of the push is on the shared sandbox image: this test's to remove.
	dockertest.Untag(t, registry+"/sandbox:"+strings.TrimPrefix(pushed[0].ID, "sha256:"))
	digest := pushed[0].Ref[strings.Index(pushed[0].Ref, "@")+1:]
	before := len(reg.Requests("/v2/"))

	sum, r, err := Evaluate(ctx, s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 4, Log: &log,
		Kubernetes: &kube.Config{Kubeconfig: kc, Registry: registry}})
	if err != nil || r == nil {
		t.Fatalf("evaluate: %v\n%s", err, log.String())
	}
	if !sum.Complete() || sum.Statuses[store.StatusCompleted] != len(s.Plan.Cells) {
		t.Errorf("summary %+v\n%s", sum, log.String())
	}
	g := gradesOf(t, s.Plan, out)
	for _, c := range s.Plan.Cells {
		if n := strings.Count(g[c.ID], grade.CheckRun+":"); n != 3 || !strings.Contains(g[c.ID], grade.CheckRun+":one=true") {
			t.Errorf("%s: %s", c.ID, g[c.ID])
		}
	}
	// The node resolves the name at the registry; the manifest's bytes may
	// be in its content store already, from an earlier pull of the same
	// digest (TestRunPodPullsPushedImage pulls an image no node has).
	pulls := reg.Requests("/v2/")[before:]
	if !slices.Contains(pulls, "GET /v2/sg/sandbox/manifests/"+digest) && !slices.Contains(pulls, "HEAD /v2/sg/sandbox/manifests/"+digest) {
		t.Errorf("the registry saw no request for the pushed manifest %s: %q", digest, pulls)
	}
	t.Logf("the node asked the registry %q", pulls)
}
