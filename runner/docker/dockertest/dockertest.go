// Package dockertest gives the tests of every runner package the same real
// Docker engine and the same means to clean up after themselves: labels
// unique to a test, a small agent image, containers listed by label, and
// readers of build contexts. It is test support, not part of skillgate.
package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/skillgate/skillgate/runner/docker"
)

// Label is the label key of everything the tests create; its value is random per
// test, and the test removes what carries it.
const Label = "dev.skillgate.test"

// Engine connects to the engine, skipping the test when there is none, unless CI is
// set: there a missing engine is a failure.
func Engine(t *testing.T) *docker.Engine {
	t.Helper()
	e, err := docker.NewEngine(context.Background())
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and there is no Docker engine: %v", err)
		}
		t.Skipf("no Docker engine: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// RandomHex is 12 random hex digits, to make names unique to a test.
func RandomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// Labels returns labels unique to this test and removes, when it ends, every image
// and container that carries them.
func Labels(t *testing.T, e *docker.Engine) (map[string]string, string) {
	t.Helper()
	v := RandomHex(t)
	sel := Label + "=" + v
	t.Cleanup(func() {
		ctx := context.Background()
		if _, err := e.Sweep(ctx, sel); err != nil {
			t.Errorf("sweep test containers: %v", err)
		}
		if _, err := e.RemoveImages(ctx, sel); err != nil {
			t.Errorf("remove test images: %v", err)
		}
	})
	return map[string]string{Label: v}, sel
}

// AgentImage builds testagent (a small agent of many behaviours) and an image from the sandbox that holds it at
// /bin/testagent and a small fixture in /workspace.
func AgentImage(t *testing.T, e *docker.Engine, labels map[string]string) string {
	t.Helper()
	ctx := context.Background()
	bin := filepath.Join(t.TempDir(), "testagent")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "github.com/skillgate/skillgate/runner/docker/testagent")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build testagent: %v\n%s", err, out)
	}
	sandbox, err := e.EnsureSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bc := docker.NewBuildContext("FROM " + sandbox + "\nADD " + docker.LayerTar + " /\n")
	bc.AddHostFile("bin/testagent", bin, 0, 0)
	bc.AddFile("workspace/keep.txt", 0o644, 1000, 1000, []byte("old\n"))
	bc.AddFile("workspace/gone.txt", 0o644, 1000, 1000, []byte("doomed\n"))
	bc.AddDir("workspace/sub", 0o755, 1000, 1000)
	bc.AddFile("workspace/sub/deep.txt", 0o644, 1000, 1000, []byte("deep\n"))
	tag := "skillgate-test/agent:" + labels[Label]
	if _, err := e.BuildImage(ctx, tag, labels, bc); err != nil {
		t.Fatal(err)
	}
	return tag
}

// Run runs spec to its end, failing the test if the engine fails.
func Run(t *testing.T, e *docker.Engine, spec docker.ContainerSpec) *docker.ContainerOutcome {
	t.Helper()
	out, err := e.RunContainer(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exit %d, durations %+v", out.ExitCode, out.Durations)
	return out
}

// LayerDockerfile only unpacks a build context's layer.
const LayerDockerfile = "FROM scratch\nADD " + docker.LayerTar + " /\n"

// ReadContext returns the Dockerfile and the layer's headers and contents, by path.
func ReadContext(t *testing.T, data []byte) (string, map[string]*tar.Header, map[string]string, []string) {
	t.Helper()
	var dockerfile string
	hdrs := map[string]*tar.Header{}
	contents := map[string]string{}
	var order []string
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		switch h.Name {
		case "Dockerfile":
			dockerfile = string(b)
		case docker.LayerTar:
			lr := tar.NewReader(bytes.NewReader(b))
			for {
				lh, err := lr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("read layer: %v", err)
				}
				c, err := io.ReadAll(lr)
				if err != nil {
					t.Fatal(err)
				}
				name := strings.TrimSuffix(lh.Name, "/")
				hdrs[name] = lh
				contents[name] = string(c)
				order = append(order, name)
			}
		default:
			t.Fatalf("unexpected context entry %q", h.Name)
		}
	}
	return dockerfile, hdrs, contents, order
}

// WriteContext writes bc, checking that WriteTo counts what it writes.
func WriteContext(t *testing.T, bc *docker.BuildContext) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := bc.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo reported %d bytes, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

// Containers lists the containers, running or not, that carry every label
// given (a key, or key=value), as "ID STATE CELL". It asks the engine
// itself, not through skillgate, so that what skillgate forgot shows.
func Containers(t *testing.T, labels ...string) []string {
	t.Helper()
	c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f := filters.NewArgs()
	for _, l := range labels {
		f.Add("label", l)
	}
	cs, err := c.ContainerList(context.Background(), container.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ct := range cs {
		out = append(out, strings.TrimPrefix(ct.ID, "sha256:")[:12]+" "+ct.State+" "+ct.Labels[docker.LabelCell])
	}
	return out
}

// Untag removes, when the test ends, the names given to images the test did
// not build (the shared sandbox's, say): only the name goes, the image stays
// under its others.
func Untag(t *testing.T, refs ...string) {
	t.Helper()
	t.Cleanup(func() {
		c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
		if err != nil {
			t.Errorf("untag %v: %v", refs, err)
			return
		}
		defer c.Close()
		for _, ref := range refs {
			if _, err := c.ImageRemove(context.Background(), ref, image.RemoveOptions{}); err != nil {
				t.Errorf("untag %s: %v", ref, err)
			}
		}
	})
}
