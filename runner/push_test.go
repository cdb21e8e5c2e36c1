package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/store"
)

// PushImages pushes the agent's image in every environment the selected
// cells and their run: checks use, once each: here the environment built
// from a Dockerfile folder (pinned in the run folder's store first, as a
// run pins it) and the agent's own image, which a cell with no
// environment runs in; a selection without the environment's case pushes
// the agent's image alone.
func TestPushImagesOfEnvironments(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials: an open registry
	e := dockertest.Engine(t)
	ctx := context.Background()
	sandbox, err := e.EnsureSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	marker := dockertest.RandomHex(t)
	root := writeRepo(t, map[string]string{
		"s/df/Dockerfile": "FROM " + sandbox + "\nCOPY marker /marker\n",
		"s/df/marker":     marker + "\n",
		"s/fx/README.md":  "# fixture\n",
		"s/suite.cue": `package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/policies"
)

schema.#Suite & {
	name: "pushtest-env"
	agent: agents.command & {command: ["true"]}
	trials: 1
	environments: tool: dockerfile: path: "df"
	arms: none: {}
	cases: {
		inside: {prompt: "Do.", fixture: "fx", environment: "tool"}
		plain: {prompt: "Do.", fixture: "fx", assert: [{name: "in the tool's environment", environment: "tool", run: "cat /marker"}]}
		bare: {prompt: "Do.", fixture: "fx"}
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
	reg := dockertest.NewRegistry(t)
	registry := reg.Host + "/sg"
	out := t.TempDir()

	var log bytes.Buffer
	pushed, err := PushImages(ctx, p, Options{Out: out, SuiteDir: dir, Log: &log}, registry)
	if err != nil {
		t.Fatalf("push: %v\n%s", err, log.String())
	}
	for _, pi := range pushed {
		dockertest.Untag(t, strings.Split(pi.Ref, "@")[0]+":"+strings.TrimPrefix(pi.ID, "sha256:"))
	}
	t.Logf("pushed %+v\n%s", pushed, log.String())
	if len(pushed) != 2 || pushed[0].Local == sandbox || pushed[1].Local != sandbox {
		t.Fatalf("pushed %+v; want the environment's image, then the agent's %s", pushed, sandbox)
	}
	if !strings.HasPrefix(pushed[0].Ref, registry+"/env@sha256:") || !strings.HasPrefix(pushed[1].Ref, registry+"/sandbox@sha256:") {
		t.Errorf("pushed to %s and %s", pushed[0].Ref, pushed[1].Ref)
	}
	// The environment's image is the Dockerfile's: it holds the marker.
	oc := dockertest.Run(t, e, docker.ContainerSpec{Image: pushed[0].Local, Cmd: []string{"cat", "/marker"}, User: "1000:1000", OutputCap: 1 << 10})
	if string(oc.Stdout) != marker+"\n" {
		t.Errorf("the environment's image holds %q, want the marker", oc.Stdout)
	}
	if _, err := os.Stat((&store.Store{Dir: out}).TreeDir(p.Environments["tool"].Tree.Digest)); err != nil {
		t.Errorf("the Dockerfile folder was not pinned in the run folder: %v", err)
	}
	for _, pi := range pushed {
		repo := strings.TrimPrefix(strings.Split(pi.Ref, "@")[0], reg.Host)
		if got := reg.Requests("/v2" + repo + "/manifests/"); !slices.Contains(got, "PUT /v2"+repo+"/manifests/"+strings.TrimPrefix(pi.ID, "sha256:")) {
			t.Errorf("the registry saw no manifest of %s: %q", pi.Local, got)
		}
	}

	only, err := PushImages(ctx, p, Options{Out: out, SuiteDir: dir, Cases: []string{"bare"}, Log: &log}, registry)
	if err != nil || len(only) != 1 || only[0] != pushed[1] {
		t.Errorf("push of case bare alone: %+v, %v; want %+v", only, err, pushed[1])
	}
}
