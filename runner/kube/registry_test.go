package kube_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/kube"
	"github.com/skillgate/skillgate/runner/kube/kubetest"
)

// With a registry, a cell's Pod starts from the image skillgate image push
// put there, named by its digest, which the node pulls: the local image is
// one the cluster never had (it is unique to the test, and never loaded),
// the registry saw the node fetch that manifest by its digest, and the cell
// reads the file only that image holds. Before the push, the cell is
// refused, naming the command.
func TestRunPodPullsPushedImage(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials: an open registry
	e := dockertest.Engine(t)
	dlabels, _ := dockertest.Labels(t, e)
	reg := dockertest.NewRegistry(t)
	registry := reg.Host + "/sg"
	c := kubetest.ClusterWith(t, kube.Config{Registry: registry})
	labels := testLabels(t, c)
	ctx := context.Background()

	// The agent image: the sandbox with a file of this test's own.
	sandbox, err := e.EnsureSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bc := docker.NewBuildContext("FROM " + sandbox + "\nADD " + docker.LayerTar + " /\n")
	bc.AddFile("etc/pushed.txt", 0o644, 0, 0, []byte("pulled "+dlabels[dockertest.Label]+"\n"))
	agentImage := "skillgate-test/pushed:" + dlabels[dockertest.Label]
	if _, err := e.BuildImage(ctx, agentImage, dlabels, bc); err != nil {
		t.Fatal(err)
	}
	// The cell image on it, whose content streams into the Pod.
	cell := docker.NewBuildContext("FROM " + agentImage + "\nADD " + docker.LayerTar + " /\n")
	cell.AddDir("workspace", 0o755, 1000, 1000)
	cell.AddFile("workspace/keep.txt", 0o644, 1000, 1000, []byte("old\n"))
	cellTag := docker.CellImageRepo + ":test-" + labels[dockertest.Label]
	if _, err := c.BuildImage(ctx, cellTag, labels, cell); err != nil {
		t.Fatal(err)
	}

	script := "cat /etc/pushed.txt keep.txt"
	_, err = c.RunContainer(ctx, spec(cellTag, labels, script, collected{}))
	if err == nil || !strings.Contains(err.Error(), "skillgate image push "+registry) {
		t.Fatalf("a cell before the push: %v; want the advice to push", err)
	}
	if n := len(reg.Requests("/v2/")); n != 0 {
		t.Fatalf("the registry was asked %d times before the push", n)
	}

	var log bytes.Buffer
	pushed, err := e.PushImage(ctx, agentImage, registry, &log)
	if err != nil {
		t.Fatalf("push: %v\n%s", err, log.String())
	}
	before := len(reg.Requests("/v2/"))
	out, err := c.RunContainer(ctx, spec(cellTag, labels, script, collected{}))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out.Stdout), "pulled "+dlabels[dockertest.Label]+"\nold\n"; got != want || out.ExitCode != 0 {
		t.Fatalf("the cell read %q (exit %d, stderr %q); want %q", got, out.ExitCode, out.Stderr, want)
	}
	digest := pushed.Ref[strings.Index(pushed.Ref, "@")+1:]
	pulls := reg.Requests("/v2/")[before:]
	if !slices.Contains(pulls, "GET /v2/sg/pushed/manifests/"+digest) {
		t.Errorf("the registry saw no pull of the manifest %s: %q", digest, pulls)
	}
	t.Logf("pushed %s; the node asked the registry %q", pushed.Ref, pulls)
}
