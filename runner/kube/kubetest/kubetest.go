// Package kubetest gives the tests of the Kubernetes backend the real
// cluster that .ci/kube-up starts, and puts the images they use into it. It
// is test support, not part of skillgate.
package kubetest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/skillgate/skillgate/runner/backend"
	"github.com/skillgate/skillgate/runner/docker"

	"github.com/skillgate/skillgate/runner/kube"
)

// DefaultKubeconfig is where .ci/kube-up writes the local cluster's admin
// kubeconfig.
const DefaultKubeconfig = "/tmp/skillgate-kube/admin.kubeconfig"

// Kubeconfig is the cluster's kubeconfig: $KUBECONFIG, else the local
// cluster's when it is up. Without one the test is skipped, unless CI is set:
// there it fails.
func Kubeconfig(t testing.TB) string {
	t.Helper()
	if k := os.Getenv("KUBECONFIG"); k != "" {
		return k
	}
	if _, err := os.Stat(DefaultKubeconfig); err == nil {
		return DefaultKubeconfig
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set and there is no cluster: start one with .ci/kube-up (or set KUBECONFIG)")
	}
	t.Skip("no Kubernetes cluster: start one with .ci/kube-up (or set KUBECONFIG)")
	return ""
}

// Cluster connects to the test cluster, or skips or fails as Kubeconfig does.
func Cluster(t testing.TB) *kube.Cluster {
	t.Helper()
	return ClusterWith(t, kube.Config{})
}

// ClusterWith connects to the test cluster with cfg, its kubeconfig the
// test cluster's, or skips or fails as Kubeconfig does.
func ClusterWith(t testing.TB, cfg kube.Config) *kube.Cluster {
	t.Helper()
	cfg.Kubeconfig = Kubeconfig(t)
	c, err := kube.Connect(context.Background(), cfg, LocalEngine)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and the cluster does not answer: %v", err)
		}
		t.Skipf("the cluster does not answer: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var (
	loadMu sync.Mutex
	loaded = map[string]bool{}
)

// Load copies images from the local Docker engine into the local cluster's
// node with .ci/kube-load, once per test process.
func Load(t testing.TB, images ...string) {
	t.Helper()
	loadMu.Lock()
	defer loadMu.Unlock()
	var todo []string
	for _, im := range images {
		if !loaded[im] {
			todo = append(todo, im)
		}
	}
	if len(todo) == 0 {
		return
	}
	out, err := exec.Command(filepath.Join(repoRoot(t), ".ci", "kube-load"), todo...).CombinedOutput()
	if err != nil {
		t.Fatalf("kube-load %s: %v\n%s", strings.Join(todo, " "), err, out)
	}
	for _, im := range todo {
		loaded[im] = true
	}
}

// repoRoot is the module's root folder.
func repoRoot(t testing.TB) string {
	t.Helper()
	mod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(mod)) == "" {
		t.Fatalf("find the module root: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(mod)))
}

// LocalEngine connects to the local Docker engine, which builds and names
// the images of the test cluster's Pods.
func LocalEngine(ctx context.Context) (backend.LocalEngine, error) {
	e, err := docker.NewEngine(ctx)
	if err != nil {
		return nil, err // not a nil *docker.Engine in a non-nil LocalEngine
	}
	return e, nil
}
