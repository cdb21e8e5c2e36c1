package kube_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/kube"
	"github.com/skillgate/skillgate/runner/kube/kubetest"
)

// cellImage is a cell image of the sandbox, as the runner asks for one: a
// fixture file, owned by the agent, on top of the sandbox image, which is
// loaded into the cluster.
func cellImage(t *testing.T, c *kube.Cluster, labels map[string]string) string {
	t.Helper()
	ctx := context.Background()
	sandbox, err := c.EnsureSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kubetest.Load(t, sandbox)
	bc := docker.NewBuildContext("FROM " + sandbox + "\nADD " + docker.LayerTar + " /\n")
	bc.AddDir("workspace", 0o755, 1000, 1000)
	bc.AddFile("workspace/keep.txt", 0o644, 1000, 1000, []byte("old\n"))
	bc.AddFile("workspace/gone.txt", 0o644, 1000, 1000, []byte("doomed\n"))
	tag := docker.CellImageRepo + ":test-" + labels[dockertest.Label]
	if _, err := c.BuildImage(ctx, tag, labels, bc); err != nil {
		t.Fatal(err)
	}
	return tag
}

// testLabels are labels unique to the test; the test's Pods go with it.
func testLabels(t *testing.T, c *kube.Cluster) map[string]string {
	t.Helper()
	v := dockertest.RandomHex(t)
	t.Cleanup(func() {
		if _, err := c.Sweep(context.Background(), dockertest.Label+"="+v); err != nil {
			t.Errorf("sweep: %v", err)
		}
	})
	return map[string]string{dockertest.Label: v, docker.LabelCell: "case/arm/1"}
}

// collected is what a collection visited: paths and the content of files.
type collected map[string]string

func (col collected) visit(e docker.WorkspaceEntry) error {
	switch {
	case e.Type == docker.TypeFile:
		rc, err := e.Open()
		if err != nil {
			return err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			return err
		}
		col[e.Path] = string(b)
	default:
		col[e.Path] = e.Type
	}
	return nil
}

func spec(image string, labels map[string]string, script string, col collected) docker.ContainerSpec {
	return docker.ContainerSpec{
		Image: image, Cmd: []string{"sh", "-c", script}, User: "1000:1000", WorkingDir: docker.Workspace,
		Env: []string{"FOO=bar baz"}, Labels: labels,
		Memory: 256 << 20, NanoCPUs: 1e9, PidsLimit: 512, Timeout: time.Minute, OutputCap: 1 << 20,
		CollectPrefix: docker.Workspace, Collect: col.visit,
		CollectLimits: docker.CollectLimits{Entries: 1000, Timeout: time.Minute},
		Files:         []docker.SpecFile{{Path: "/skillgate-input/prompt.txt", Mode: 0o444, Data: []byte("the prompt\n")}},
	}
}

// A cell's Pod has what a container has: its content, its environment, its
// prompt file it cannot change, the hardening, no network, no token; its
// output and its changed workspace come back.
func TestRunPodHardenedAndCollected(t *testing.T) {
	c := kubetest.Cluster(t)
	labels := testLabels(t, c)
	image := cellImage(t, c, labels)
	col := collected{}
	script := `set -u
echo "uid=$(id -u) gid=$(id -g) foo=$FOO pwd=$(pwd)"
cat keep.txt /skillgate-input/prompt.txt
grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status
touch /rootfile 2>/dev/null && echo root-writable || echo root-read-only
{ echo x >> /skillgate-input/prompt.txt; } 2>/dev/null && echo input-writable || echo input-read-only
ls /var/run/secrets/kubernetes.io 2>/dev/null && echo token || echo no-token
awk 'NR>2 {sub(":","",$1); print "if=" $1}' /proc/net/dev
echo | nc -w 2 127.0.0.1 6443 2>/dev/null && echo apiserver-reached || echo apiserver-refused
echo new > new.txt; echo changed > keep.txt; rm gone.txt; mkdir -p d; echo deep > d/e.txt
touch "$HOME/.h" /tmp/.t && echo home-tmp-writable
echo to-stderr >&2
exit 3`
	out, err := c.RunContainer(context.Background(), spec(image, labels, script, col))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stdout:\n%s\nstderr: %s\ndurations %+v, collection %+v", out.Stdout, out.Stderr, out.Durations, out.Collection)
	got := string(out.Stdout)
	for _, want := range []string{
		"uid=1000 gid=1000 foo=bar baz pwd=/workspace\n", "old\nthe prompt\n",
		"CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000",
		"NoNewPrivs:\t1", "Seccomp:\t2",
		"root-read-only", "input-read-only", "no-token", "apiserver-refused", "home-tmp-writable",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if ifs := strings.Count(got, "if="); ifs != 1 || !strings.Contains(got, "if=lo\n") {
		t.Errorf("interfaces: want lo alone, stdout %q", got)
	}
	if out.ExitCode != 3 || out.TimedOut || out.OOMKilled || string(out.Stderr) != "to-stderr\n" {
		t.Errorf("outcome: exit %d, timed out %v, oom %v, stderr %q", out.ExitCode, out.TimedOut, out.OOMKilled, out.Stderr)
	}
	want := collected{"keep.txt": "changed\n", "new.txt": "new\n", "d": docker.TypeDir, "d/e.txt": "deep\n"}
	for p, w := range want {
		if col[p] != w {
			t.Errorf("collected %s = %q, want %q", p, col[p], w)
		}
	}
	if _, ok := col["gone.txt"]; ok || out.Collection.Method != "api" || out.Collection.Cut != "" {
		t.Errorf("collection %+v, entries %v", out.Collection, col)
	}
	if pods, err := c.Pods(context.Background(), dockertest.Label+"="+labels[dockertest.Label]); err != nil || len(pods) != 0 {
		t.Errorf("pods left after the cell: %q (%v)", pods, err)
	}
}

// A cell past its timeout is killed, and what it wrote before is still
// collected; its standard input is the one given.
func TestRunPodTimeoutAndStdin(t *testing.T) {
	c := kubetest.Cluster(t)
	labels := testLabels(t, c)
	image := cellImage(t, c, labels)
	col := collected{}
	s := spec(image, labels, `cat > in.txt; echo started; sleep 300 & sleep 300; echo never`, col)
	s.Stdin = []byte("from stdin\n")
	s.Timeout = 3 * time.Second
	t0 := time.Now()
	out, err := c.RunContainer(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exit %d in %s, durations %+v", out.ExitCode, time.Since(t0), out.Durations)
	if !out.TimedOut || string(out.Stdout) != "started\n" {
		t.Errorf("timed out %v, stdout %q", out.TimedOut, out.Stdout)
	}
	if col["in.txt"] != "from stdin\n" {
		t.Errorf("collected %v", col)
	}
}

// A session is a Pod of the cell image in which commands run one by one,
// with files copied in and an environment of their own; a command past its
// timeout ends the session.
func TestSessionPod(t *testing.T) {
	c := kubetest.Cluster(t)
	labels := testLabels(t, c)
	image := cellImage(t, c, labels)
	ctx := context.Background()
	s, err := c.StartSession(ctx, docker.SessionSpec{Image: image, User: "1000:1000", WorkingDir: docker.Workspace, Labels: labels,
		Memory: 128 << 20, NanoCPUs: 1e9, PidsLimit: 256}, "/skillgate-check")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	bc := docker.NewBuildContext("")
	bc.AddDir("skillgate-check", 0o555, 0, 0)
	bc.AddFile("skillgate-check/answer.txt", 0o444, 0, 0, []byte("the answer\n"))
	bc.AddDir("workspace", 0o755, 1000, 1000)
	bc.AddFile("workspace/keep.txt", 0o644, 1000, 1000, []byte("replaced\n"))
	layer, err := bc.Layer()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CopyIn(ctx, bytes.NewReader(layer)); err != nil {
		t.Fatal(err)
	}
	res, err := s.Exec(ctx, docker.ExecSpec{Cmd: []string{"sh", "-c", `cat "$OUTPUT" keep.txt gone.txt; exit 4`}, Env: []string{"OUTPUT=/skillgate-check/answer.txt"}, OutputCap: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 4 || string(res.Output) != "the answer\nreplaced\ndoomed\n" {
		t.Errorf("exec: exit %d, output %q", res.ExitCode, res.Output)
	}
	res, err = s.Exec(ctx, docker.ExecSpec{Cmd: []string{"sleep", "60"}, Timeout: time.Second, OutputCap: 1 << 10})
	if err != nil || !res.TimedOut {
		t.Fatalf("exec past its timeout: %+v, %v", res, err)
	}
	if _, err := s.Exec(ctx, docker.ExecSpec{Cmd: []string{"true"}}); err == nil {
		t.Error("exec in a killed session: no error")
	}
}

// A Pod whose image is not in the cluster says so, and is not left behind.
func TestRunPodImageMissing(t *testing.T) {
	c := kubetest.Cluster(t)
	labels := testLabels(t, c)
	_, err := c.RunContainer(context.Background(), spec("skillgate-test/absent:"+labels[dockertest.Label], labels, "true", collected{}))
	var missing *kube.ImageMissingError
	if err == nil || !errors.As(err, &missing) {
		t.Fatalf("err = %v, want an ImageMissingError", err)
	}
	if pods, err := c.Pods(context.Background(), dockertest.Label+"="+labels[dockertest.Label]); err != nil || len(pods) != 0 {
		t.Errorf("pods left: %q (%v)", pods, err)
	}
}

// A cell whose agent image the cluster holds under its name, but another
// build of it than the local engine's (loaded before a rebuild), is refused:
// the rollout would name an image the cell did not run.
func TestRunPodStaleImage(t *testing.T) {
	c := kubetest.Cluster(t)
	e := dockertest.Engine(t)
	labels := testLabels(t, c)
	dlabels, _ := dockertest.Labels(t, e)
	ctx := context.Background()
	sandbox, err := c.EnsureSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	agentRef := "skillgate-test/stale:" + dlabels[dockertest.Label]
	build := func(content string) {
		bc := docker.NewBuildContext("FROM " + sandbox + "\nADD " + docker.LayerTar + " /\nLABEL x=y\n")
		bc.AddFile("etc/build.txt", 0o644, 0, 0, []byte(content))
		if _, err := e.BuildImage(ctx, agentRef, dlabels, bc); err != nil {
			t.Fatal(err)
		}
	}
	build("first\n")
	kubetest.Load(t, agentRef)
	build("second\n") // the cluster keeps the first
	bc := docker.NewBuildContext("FROM " + agentRef + "\nADD " + docker.LayerTar + " /\n")
	bc.AddDir("workspace", 0o755, 1000, 1000)
	cell := docker.CellImageRepo + ":stale-" + labels[dockertest.Label]
	if _, err := c.BuildImage(ctx, cell, labels, bc); err != nil {
		t.Fatal(err)
	}
	_, err = c.RunContainer(ctx, spec(cell, labels, "cat /etc/build.txt", collected{}))
	if err == nil || !strings.Contains(err.Error(), "load it again") {
		t.Fatalf("err = %v, want the stale image refused", err)
	}
}

// An image built on a cell image (what a case's setup left) streams both
// layers, in order; one that needs a build step on it is refused, saying so.
func TestRunPodLayeredCellImage(t *testing.T) {
	c := kubetest.Cluster(t)
	labels := testLabels(t, c)
	base := cellImage(t, c, labels)
	ctx := context.Background()
	bc := docker.NewBuildContext("FROM " + base + "\nADD " + docker.LayerTar + " /\n")
	bc.AddFile("workspace/keep.txt", 0o644, 1000, 1000, []byte("set up\n"))
	bc.AddFile("workspace/setup.txt", 0o644, 1000, 1000, []byte("by the setup\n"))
	layered := docker.CellImageRepo + ":layered-" + labels[dockertest.Label]
	if _, err := c.BuildImage(ctx, layered, labels, bc); err != nil {
		t.Fatal(err)
	}
	out, err := c.RunContainer(ctx, spec(layered, labels, "cat keep.txt setup.txt gone.txt", collected{}))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out.Stdout); got != "set up\nby the setup\ndoomed\n" {
		t.Errorf("stdout %q", got)
	}
	step := docker.NewBuildContext("FROM " + base + "\nADD " + docker.LayerTar + " /\nRUN rm -f /workspace/gone.txt\n")
	step.AddFile("workspace/x", 0o644, 1000, 1000, nil)
	if _, err := c.BuildImage(ctx, layered+"-step", labels, step); err == nil || !strings.Contains(err.Error(), "runs no build step") {
		t.Errorf("a build step on a cell image: %v", err)
	}
}

// A case's folder, which setups and checks are given from skillgate's
// machine, reaches a session's Pod by its content: the same files, links and
// modes, read-only, and no hostPath in the Pod, so it runs on any node. A
// folder that would be writable cannot be streamed and is refused.
func TestSessionGetsCaseFolder(t *testing.T) {
	c := kubetest.Cluster(t)
	labels := testLabels(t, c)
	image := cellImage(t, c, labels)
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "data.txt"), []byte("case data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\necho ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/data.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	spec := docker.SessionSpec{Image: image, User: "1000:1000", WorkingDir: docker.Workspace, Labels: labels,
		Memory: 128 << 20, NanoCPUs: 1e9, PidsLimit: 256, Binds: []string{dir + ":/skillgate-case:ro"}}
	vols := podVolumes(t, labels)
	s, err := c.StartSession(ctx, spec, "/skillgate-check")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Exec(ctx, docker.ExecSpec{Cmd: []string{"sh", "-c",
		`cat /skillgate-case/sub/data.txt /skillgate-case/link; /skillgate-case/run.sh; touch /skillgate-case/x 2>/dev/null && echo wrote || echo read-only`}, OutputCap: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if want := "case data\ncase data\nran\nread-only\n"; string(res.Output) != want || res.ExitCode != 0 {
		t.Errorf("exec: exit %d, output %q, want %q", res.ExitCode, res.Output, want)
	}
	for _, v := range vols() {
		if v.HostPath != nil {
			t.Errorf("the session's pod mounts %s from the node", v.HostPath.Path)
		}
	}

	spec.Binds = []string{dir + ":/skillgate-case"}
	if _, err := c.StartSession(ctx, spec); err == nil || !strings.Contains(err.Error(), "only a read-only folder can be streamed") {
		t.Errorf("a writable folder: %v, want it refused", err)
	}
}

// A cell's trees (its skills) reach its Pod inside the workspace by their
// content, files read-only by mode, beside the workspace's own files; the
// folder on skillgate's machine is untouched, and a tree outside the Pod's
// folders is refused before any Pod is made.
func TestRunPodGetsTrees(t *testing.T) {
	c := kubetest.Cluster(t)
	labels := testLabels(t, c)
	image := cellImage(t, c, labels)
	host := t.TempDir()
	if err := os.MkdirAll(filepath.Join(host, "references"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "SKILL.md"), []byte("---\nname: s\n---\nbody\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "references", "r.md"), []byte("ref\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	col := collected{}
	s := spec(image, labels, `cat .claude/skills/s/SKILL.md .claude/skills/s/references/r.md keep.txt; stat -c %a .claude/skills/s/SKILL.md`, col)
	s.Trees = []docker.Tree{{Host: host, Path: docker.Workspace + "/.claude/skills/s"}}
	out, err := c.RunContainer(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if want := "---\nname: s\n---\nbody\nref\nold\n444\n"; out.ExitCode != 0 || string(out.Stdout) != want {
		t.Errorf("exit %d, stdout %q, want %q (stderr %s)", out.ExitCode, out.Stdout, want, out.Stderr)
	}
	if b, err := os.ReadFile(filepath.Join(host, "SKILL.md")); err != nil || string(b) != "---\nname: s\n---\nbody\n" {
		t.Errorf("the host's tree: %q %v", b, err)
	}

	s.Trees = []docker.Tree{{Host: host, Path: "/opt/skills/s"}}
	if _, err := c.RunContainer(context.Background(), s); err == nil || !strings.Contains(err.Error(), "not inside one of its folders") {
		t.Errorf("a tree outside the pod's folders: %v", err)
	}
}
