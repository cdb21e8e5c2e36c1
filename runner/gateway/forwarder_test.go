package gateway

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestEmbeddedForwarderIsCurrent rebuilds the forwarder from its source the
// way `go generate` does and requires the embedded binary to match it, so
// cells never run a forwarder older than its source.
func TestEmbeddedForwarderIsCurrent(t *testing.T) {
	if v := strings.TrimSpace(forwarderGoVersion); v != runtime.Version() {
		t.Skipf("the embedded forwarder was built with %s, this is %s: rebuilds are byte-identical only with the same Go", v, runtime.Version())
	}
	bin := filepath.Join(t.TempDir(), "forwarder")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w -buildid=", "-o", bin, "./forwarder")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build forwarder: %v\n%s", err, out)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, forwarderBinary) {
		t.Fatal("runner/gateway/assets/forwarder is stale: run `go generate ./runner/gateway`")
	}
}
