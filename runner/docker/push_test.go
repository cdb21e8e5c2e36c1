package docker_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"
)

// pushable is a small image unique to the test: the sandbox with a file
// of its own, so no registry or node can hold its layer already.
func pushable(t *testing.T, e *docker.Engine, labels map[string]string, content string) string {
	t.Helper()
	ctx := context.Background()
	sandbox, err := e.EnsureSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bc := docker.NewBuildContext("FROM " + sandbox + "\nADD " + docker.LayerTar + " /\n")
	bc.AddFile("workspace/pushed.txt", 0o644, 1000, 1000, []byte(content+" "+labels[dockertest.Label]+"\n"))
	tag := "skillgate-test/pushed:" + labels[dockertest.Label]
	if _, err := e.BuildImage(ctx, tag, labels, bc); err != nil {
		t.Fatal(err)
	}
	return tag
}

// A pushed image is named by its manifest's digest, which the registry
// serves and the engine records for this build alone: PushedRef finds it,
// and finds nothing for a registry it was not pushed to or once the tag
// names another build.
func TestPushImage(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials: an open registry
	e := dockertest.Engine(t)
	labels, _ := dockertest.Labels(t, e)
	local := pushable(t, e, labels, "pushed")
	reg := dockertest.NewRegistry(t)
	ctx := context.Background()

	if _, ok, err := e.PushedRef(ctx, local, reg.Host+"/sg"); err != nil || ok {
		t.Fatalf("PushedRef before the push = %v, %v; want not pushed", ok, err)
	}
	var log bytes.Buffer
	p, err := e.PushImage(ctx, local, reg.Host+"/sg", &log)
	if err != nil {
		t.Fatalf("push: %v\n%s", err, log.String())
	}
	repo := reg.Host + "/sg/pushed"
	if !strings.HasPrefix(p.Ref, repo+"@sha256:") || p.Local != local || !strings.HasPrefix(p.ID, "sha256:") {
		t.Fatalf("pushed %+v; want %s@sha256:…", p, repo)
	}
	if !strings.Contains(log.String(), "push "+local+": ") || !strings.Contains(log.String(), "Pushed") {
		t.Errorf("progress does not tell of the layers pushed:\n%s", log.String())
	}
	digest := p.Ref[strings.Index(p.Ref, "@")+1:]
	if got := reg.Requests("/v2/sg/pushed/manifests/"); !slices.Contains(got, "PUT /v2/sg/pushed/manifests/"+strings.TrimPrefix(p.ID, "sha256:")) {
		t.Errorf("the registry saw no manifest put under the image ID's tag: %q", got)
	}

	// The registry serves that manifest by its digest.
	resp, err := httpGet("http://" + reg.Host + "/v2/sg/pushed/manifests/" + digest)
	if err != nil || resp != 200 {
		t.Fatalf("GET the manifest by digest: %d, %v", resp, err)
	}

	found, ok, err := e.PushedRef(ctx, local, reg.Host+"/sg/")
	if err != nil || !ok || found != p {
		t.Fatalf("PushedRef = %+v, %v, %v; want %+v", found, ok, err, p)
	}
	if _, ok, _ := e.PushedRef(ctx, local, reg.Host+"/other"); ok {
		t.Error("PushedRef found a push to a repository nothing was pushed to")
	}
	// The same content built again is the same image, still pushed; other
	// content under the tag is a build that was never pushed.
	if again := pushable(t, e, labels, "pushed"); again != local {
		t.Fatal(again)
	}
	if _, ok, err := e.PushedRef(ctx, local, reg.Host+"/sg"); err != nil || !ok {
		t.Fatalf("PushedRef after the same build = %v, %v; want pushed", ok, err)
	}
	again := pushable(t, e, labels, "changed")
	if again != local {
		t.Fatal(again)
	}
	if found, ok, err := e.PushedRef(ctx, local, reg.Host+"/sg"); err != nil || ok {
		t.Fatalf("PushedRef after a rebuild = %+v, %v, %v; want not pushed", found, ok, err)
	}
}

// A registry reference that cannot name a repository, an unreachable
// registry and credentials kept by a helper are refused, saying why.
func TestPushImageRefused(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("DOCKER_CONFIG", cfg)
	e := dockertest.Engine(t)
	labels, _ := dockertest.Labels(t, e)
	local := pushable(t, e, labels, "pushed")
	ctx := context.Background()
	for _, bad := range []string{"", "Registry.Example.com/UPPER", "127.0.0.1:5000/sg:tag", "127.0.0.1:5000/sg@sha256:" + strings.Repeat("0", 64), "no-host-path"} {
		if _, err := e.PushImage(ctx, local, bad, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "parse registry") {
			t.Errorf("push to %q: %v; want a parse error", bad, err)
		}
		if err := docker.CheckRegistry(bad); err == nil {
			t.Errorf("CheckRegistry(%q) passed", bad)
		}
	}
	// Nothing listens on port 1.
	if _, err := e.PushImage(ctx, local, "127.0.0.1:1/sg", &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "push image "+local+" to 127.0.0.1:1/sg/pushed") {
		t.Errorf("push to an unreachable registry: %v", err)
	}
	mustDo(t, os.WriteFile(filepath.Join(cfg, "config.json"), []byte(`{"auths": {"127.0.0.1:1": {}}, "credsStore": "pass"}`), 0o600))
	if _, err := e.PushImage(ctx, local, "127.0.0.1:1/sg", &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "docker-credential-pass, which skillgate does not run") {
		t.Errorf("push with a credential store: %v", err)
	}
}

// httpGet is the status of a GET of url.
func httpGet(url string) (int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// A registry that needs a login gets the credentials of the Docker config's
// auths entry for its host, and none without one.
func TestPushImageWithLogin(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("DOCKER_CONFIG", cfg)
	e := dockertest.Engine(t)
	labels, _ := dockertest.Labels(t, e)
	local := pushable(t, e, labels, "login")
	reg := dockertest.NewLoginRegistry(t, "team", "s3cret")
	ctx := context.Background()
	if _, err := e.PushImage(ctx, local, reg.Host+"/sg", &bytes.Buffer{}); err == nil {
		t.Fatal("pushed with no credentials to a registry that needs them")
	} else {
		t.Logf("without credentials: %v", err)
	}
	auth := base64.StdEncoding.EncodeToString([]byte("team:s3cret"))
	mustDo(t, os.WriteFile(filepath.Join(cfg, "config.json"), []byte(`{"auths": {"other.example.com": {"auth": "eDp5"}, "http://`+reg.Host+`": {"auth": "`+auth+`"}}}`), 0o600))
	var log bytes.Buffer
	p, err := e.PushImage(ctx, local, reg.Host+"/sg", &log)
	if err != nil {
		t.Fatalf("push with the config's credentials: %v\n%s", err, log.String())
	}
	if !strings.HasPrefix(p.Ref, reg.Host+"/sg/pushed@sha256:") {
		t.Fatalf("pushed %+v", p)
	}
}
