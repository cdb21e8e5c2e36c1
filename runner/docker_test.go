package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/redact"

	"github.com/skillgate/skillgate/pipeline/plan"

	"github.com/opencontainers/go-digest"
)

// dockerTestLabel is the label key of everything the tests create; its value is random
// per test, and the test removes what carries it.
const dockerTestLabel = "dev.skillgate.test"

// testEngine connects to the engine, skipping the test when there is none, unless CI is
// set: there a missing engine is a failure.
func testEngine(t *testing.T) *Engine {
	t.Helper()
	e, err := NewEngine(context.Background())
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and there is no Docker engine: %v", err)
		}
		t.Skipf("no Docker engine: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// testLabels returns labels unique to this test and removes, when it ends, every image
// and container that carries them.
func testLabels(t *testing.T, e *Engine) (map[string]string, string) {
	t.Helper()
	v := randomHex(t)
	sel := dockerTestLabel + "=" + v
	t.Cleanup(func() {
		ctx := context.Background()
		if _, err := e.Sweep(ctx, sel); err != nil {
			t.Errorf("sweep test containers: %v", err)
		}
		if _, err := e.RemoveImages(ctx, sel); err != nil {
			t.Errorf("remove test images: %v", err)
		}
	})
	return map[string]string{dockerTestLabel: v}, sel
}

// testAgentImage builds testagent and an image from the sandbox that holds it at
// /bin/testagent and a small fixture in /workspace.
func testAgentImage(t *testing.T, e *Engine, labels map[string]string) string {
	t.Helper()
	ctx := context.Background()
	bin := filepath.Join(t.TempDir(), "testagent")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./testagent")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build testagent: %v\n%s", err, out)
	}
	sandbox, err := e.EnsureSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bc := NewBuildContext("FROM " + sandbox + "\nADD " + LayerTar + " /\n")
	bc.AddHostFile("bin/testagent", bin, 0, 0)
	bc.AddFile("workspace/keep.txt", 0o644, 1000, 1000, []byte("old\n"))
	bc.AddFile("workspace/gone.txt", 0o644, 1000, 1000, []byte("doomed\n"))
	bc.AddDir("workspace/sub", 0o755, 1000, 1000)
	bc.AddFile("workspace/sub/deep.txt", 0o644, 1000, 1000, []byte("deep\n"))
	tag := "skillgate-test/agent:" + labels[dockerTestLabel]
	if _, err := e.BuildImage(ctx, tag, labels, bc); err != nil {
		t.Fatal(err)
	}
	return tag
}

// testFixture is the initial workspace of testAgentImage.
func testFixture() map[string]plan.TreeEntry {
	files := map[string]plan.TreeEntry{}
	for p, body := range map[string]string{"keep.txt": "old\n", "gone.txt": "doomed\n", "sub/deep.txt": "deep\n"} {
		files[p] = plan.TreeEntry{Digest: digest.FromString(body), Size: int64(len(body))}
	}
	return files
}

// collectRun runs spec and collects its workspace against testAgentImage's fixture,
// through the upper layer or, with api, through the engine's API.
func collectRun(t *testing.T, e *Engine, spec ContainerSpec, api bool) ([]Change, string, Collection) {
	t.Helper()
	blobs := t.TempDir()
	col := newWorkspaceCollector(testFixture(), blobs, &redact.Redactor{}, workspaceLimits{})
	spec.CollectPrefix, spec.Collect, spec.CollectAPI = "/workspace", col.visit, api
	out := runOK(t, e, spec)
	if out.ExitCode != 0 {
		t.Fatalf("exit %d; stderr %q", out.ExitCode, out.Stderr)
	}
	if want := map[bool]string{false: "upper", true: "api"}[api]; out.Collection.Method != want {
		t.Errorf("collected by %q, want %q", out.Collection.Method, want)
	}
	return col.changes(out.Collection.Method == "api" && out.Collection.Cut == ""), blobs, out.Collection
}

func runOK(t *testing.T, e *Engine, spec ContainerSpec) *ContainerOutcome {
	t.Helper()
	out, err := e.RunContainer(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exit %d, durations %+v", out.ExitCode, out.Durations)
	return out
}

func TestContainer(t *testing.T) {
	e := testEngine(t)
	labels, sel := testLabels(t, e)
	img := testAgentImage(t, e, labels)
	base := ContainerSpec{
		Image:      img,
		User:       "1000:1000",
		WorkingDir: "/workspace",
		Labels:     labels,
		Memory:     256 << 20,
		NanoCPUs:   1e9,
		PidsLimit:  64,
		Timeout:    20 * time.Second,
		OutputCap:  1 << 20,
	}

	t.Run("Network", func(t *testing.T) {
		// Something listens on the host's loopback; the container must not reach it.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		var accepted atomic.Bool
		go func() {
			if c, err := ln.Accept(); err == nil {
				accepted.Store(true)
				c.Close()
			}
		}()
		port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
		spec := base
		spec.Cmd = []string{"/bin/testagent", "net", port}
		out := runOK(t, e, spec)
		so := string(out.Stdout)
		t.Logf("stdout:\n%s", so)
		for _, want := range []string{
			"connect 1.1.1.1:80\n",
			"failed 1.1.1.1:80: dial tcp 1.1.1.1:80: connect: network is unreachable",
			"connect 127.0.0.1:" + port + "\n",
			"failed 127.0.0.1:" + port + ": dial tcp 127.0.0.1:" + port + ": connect: connection refused",
		} {
			if !strings.Contains(so, want) {
				t.Errorf("stdout lacks %q", want)
			}
		}
		if out.ExitCode != 0 || accepted.Load() {
			t.Errorf("exit %d, host listener reached: %v", out.ExitCode, accepted.Load())
		}
	})

	t.Run("ForkBomb", func(t *testing.T) {
		spec := base
		spec.Cmd = []string{"/bin/testagent", "forkbomb"}
		out := runOK(t, e, spec)
		var started int
		so := string(out.Stdout)
		i := strings.Index(so, "fork failed after ")
		if i < 0 {
			t.Fatalf("no fork failure in stdout %q, stderr %q", so, out.Stderr)
		}
		fmt.Sscanf(so[i:], "fork failed after %d processes", &started)
		t.Logf("first failure: %s", strings.SplitN(so[i:], "\n", 2)[0])
		if out.TimedOut || started >= 64 {
			t.Errorf("timed out %v, %d processes started under a limit of 64", out.TimedOut, started)
		}
	})

	t.Run("OOM", func(t *testing.T) {
		spec := base
		spec.Memory = 64 << 20
		spec.Cmd = []string{"/bin/testagent", "oom"}
		out := runOK(t, e, spec)
		if !out.OOMKilled || out.TimedOut || out.ExitCode == 0 {
			t.Errorf("OOMKilled %v, timed out %v, exit %d; stdout tail %q", out.OOMKilled, out.TimedOut, out.ExitCode, tail(out.Stdout))
		}
	})

	t.Run("Timeout", func(t *testing.T) {
		spec := base
		spec.Timeout = 2 * time.Second
		spec.Cmd = []string{"/bin/testagent", "sleep", "30"}
		start := time.Now()
		out := runOK(t, e, spec)
		elapsed := time.Since(start)
		t.Logf("returned after %v", elapsed)
		if !out.TimedOut || elapsed > 6*time.Second {
			t.Errorf("timed out %v after %v", out.TimedOut, elapsed)
		}
	})

	t.Run("OutputCap", func(t *testing.T) {
		spec := base
		spec.Cmd = []string{"/bin/testagent", "flood", "100"}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var peak atomic.Uint64
		done := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			var m runtime.MemStats
			for {
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peak.Load() {
					peak.Store(m.HeapInuse)
				}
				select {
				case <-done:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
		out := runOK(t, e, spec)
		close(done)
		<-sampled
		runtime.ReadMemStats(&after)
		allocated := after.TotalAlloc - before.TotalAlloc
		growth := int64(peak.Load()) - int64(before.HeapInuse)
		t.Logf("agent %v; allocated %d MiB, peak heap growth %d MiB", out.Durations.Agent, allocated>>20, growth>>20)
		if len(out.Stdout) != 1<<20 || out.StdoutBytes != 100<<20 || !out.Truncated {
			t.Errorf("kept %d bytes of %d, truncated %v", len(out.Stdout), out.StdoutBytes, out.Truncated)
		}
		if allocated > 40<<20 || growth > 40<<20 {
			t.Errorf("100 MiB of output allocated %d bytes, grew the heap by %d", allocated, growth)
		}
	})

	t.Run("Write", func(t *testing.T) {
		for _, api := range []bool{false, true} {
			spec := base
			spec.Cmd = []string{"/bin/testagent", "write"}
			changes, blobs, col := collectRun(t, e, spec, api)
			want := []Change{{Path: "out.txt", Kind: ChangeAdded, Type: "file", Size: 21, Digest: digest.FromString("written by testagent\n")}}
			if !reflect.DeepEqual(changes, want) {
				t.Errorf("api %v: changes %+v, want %+v (collection %+v)", api, changes, want, col)
			}
			got, err := os.ReadFile(filepath.Join(blobs, want[0].Digest.Encoded()))
			if err != nil || string(got) != "written by testagent\n" {
				t.Errorf("api %v: stored out.txt = %q, %v", api, got, err)
			}
		}
	})

	t.Run("Environment", func(t *testing.T) {
		canary := randomHex(t)
		t.Setenv("SKILLGATE_CANARY", canary)
		spec := base
		spec.Env = []string{"SKILLGATE_PROMPT=fix the bug"}
		spec.Cmd = []string{"/bin/testagent", "env"}
		out := runOK(t, e, spec)
		so := string(out.Stdout)
		if strings.Contains(so, canary) || !strings.Contains(so, "SKILLGATE_PROMPT=fix the bug\n") {
			t.Errorf("environment in the container:\n%s", so)
		}
		spec.Cmd = []string{"/bin/testagent", "echo"}
		if out := runOK(t, e, spec); string(out.Stdout) != "fix the bug\n" {
			t.Errorf("echo printed %q", out.Stdout)
		}
	})

	t.Run("Identity", func(t *testing.T) {
		spec := base
		spec.Cmd = []string{"sh", "-c", "id -u; id -g; grep -E '^(CapEff|CapBnd|NoNewPrivs):' /proc/self/status"}
		out := runOK(t, e, spec)
		want := "1000\n1000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nNoNewPrivs:\t1\n"
		if string(out.Stdout) != want {
			t.Errorf("stdout %q, want %q; stderr %q", out.Stdout, want, out.Stderr)
		}
	})

	t.Run("FixtureChanges", func(t *testing.T) {
		for _, api := range []bool{false, true} {
			spec := base
			spec.Cmd = []string{"sh", "-c", "printf new > keep.txt && rm gone.txt && mkdir -p newdir/a && echo x > newdir/a/b.txt && ln -s keep.txt link && touch sub/deep.txt"}
			changes, blobs, col := collectRun(t, e, spec, api)
			want := []Change{
				{Path: "gone.txt", Kind: ChangeDeleted, Type: "file"},
				{Path: "keep.txt", Kind: ChangeModified, Type: "file", Size: 3, Digest: digest.FromString("new")},
				{Path: "link", Kind: ChangeAdded, Type: "symlink", Target: "keep.txt"},
				{Path: "newdir/a/b.txt", Kind: ChangeAdded, Type: "file", Size: 2, Digest: digest.FromString("x\n")},
			}
			if !reflect.DeepEqual(changes, want) {
				t.Errorf("api %v: changes %+v,\nwant %+v (collection %+v)", api, changes, want, col)
			}
			var files []string
			filepath.WalkDir(blobs, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					b, _ := os.ReadFile(p)
					files = append(files, string(b))
				}
				return nil
			})
			sort.Strings(files)
			// sub/deep.txt was only touched: its bytes are the fixture's, not stored.
			if wantFiles := []string{"new", "x\n"}; !reflect.DeepEqual(files, wantFiles) {
				t.Errorf("api %v: stored %q, want %q", api, files, wantFiles)
			}
		}
	})

	t.Run("Shapes", func(t *testing.T) {
		// A folder removed, a file turned into a folder: the same final state either way.
		for _, api := range []bool{false, true} {
			spec := base
			spec.Cmd = []string{"sh", "-c", "rm -rf sub && rm keep.txt && mkdir keep.txt && echo y >keep.txt/in"}
			changes, _, col := collectRun(t, e, spec, api)
			want := []Change{
				{Path: "keep.txt", Kind: ChangeModified, Type: "dir"},
				{Path: "keep.txt/in", Kind: ChangeAdded, Type: "file", Size: 2, Digest: digest.FromString("y\n")},
				{Path: "sub", Kind: ChangeDeleted, Type: "dir"},
				{Path: "sub/deep.txt", Kind: ChangeDeleted, Type: "file"},
			}
			if !reflect.DeepEqual(changes, want) {
				t.Errorf("api %v: changes %+v,\nwant %+v (collection %+v)", api, changes, want, col)
			}
		}
	})

	t.Run("Cancel", func(t *testing.T) {
		spec := base
		spec.Cmd = []string{"/bin/testagent", "sleep", "30"}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		start := time.Now()
		_, err := e.RunContainer(ctx, spec)
		if err == nil || time.Since(start) > 5*time.Second {
			t.Errorf("cancelled run: err %v after %v", err, time.Since(start))
		}
	})

	// Every container of the subtests is gone without a sweep.
	n, err := e.Sweep(context.Background(), sel)
	if err != nil || n != 0 {
		t.Errorf("containers left behind: %d, %v", n, err)
	}
}

func tail(b []byte) string {
	if len(b) > 200 {
		b = b[len(b)-200:]
	}
	return string(b)
}

func TestContainerSweep(t *testing.T) {
	e := testEngine(t)
	labels, sel := testLabels(t, e)
	ctx := context.Background()
	sandbox, err := e.EnsureSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A container that a dead run left behind.
	if _, err := e.createContainer(ctx, ContainerSpec{Image: sandbox, Cmd: []string{"true"}, Labels: labels}, false); err != nil {
		t.Fatal(err)
	}
	if n, err := e.Sweep(ctx, sel); n != 1 || err != nil {
		t.Errorf("first sweep removed %d, %v", n, err)
	}
	if n, err := e.Sweep(ctx, sel); n != 0 || err != nil {
		t.Errorf("second sweep removed %d, %v", n, err)
	}
}

func TestSandboxImage(t *testing.T) {
	e := testEngine(t)
	labels, _ := testLabels(t, e)
	ctx := context.Background()
	start := time.Now()
	ref, err := e.EnsureSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := time.Since(start)
	id, ok, err := e.ImageExists(ctx, ref)
	if err != nil || !ok {
		t.Fatalf("%s after EnsureSandbox: exists %v, %v", ref, ok, err)
	}
	start = time.Now()
	ref2, err := e.EnsureSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second := time.Since(start)
	id2, _, err := e.ImageExists(ctx, ref2)
	if err != nil || ref2 != ref || id2 != id {
		t.Errorf("second EnsureSandbox gave %s (%s), first %s (%s); %v", ref2, id2, ref, id, err)
	}
	t.Logf("EnsureSandbox: %v, then %v", first, second)
	if second > time.Second {
		t.Errorf("second EnsureSandbox took %v: it rebuilt", second)
	}
	if !strings.HasPrefix(ref, SandboxImage+":") || len(ref) != len(SandboxImage)+13 {
		t.Errorf("ref %q is not %s:<12 hex>", ref, SandboxImage)
	}
	if _, ok, _ := e.ImageExists(ctx, SandboxImage+":latest"); !ok {
		t.Errorf("%s:latest is missing", SandboxImage)
	}

	out, err := e.RunContainer(ctx, ContainerSpec{
		Image:     ref,
		Cmd:       []string{"sh", "-c", `id -un; echo $HOME; cd; pwd; ls -ld /tmp /workspace /home/agent | awk '{print $1, $3, $NF}'; touch /workspace/w $HOME/h /tmp/t && echo writable; touch /etc/x 2>/dev/null || echo etc read-only`},
		Labels:    labels,
		PidsLimit: 64,
		Timeout:   10 * time.Second,
		OutputCap: 1 << 16,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "agent\n/home/agent\n/home/agent\ndrwxr-xr-x agent /home/agent\ndrwxrwxrwt root /tmp\ndrwxr-xr-x agent /workspace\nwritable\netc read-only\n"
	if string(out.Stdout) != want {
		t.Errorf("sandbox layout:\n%s\nwant:\n%s\nstderr: %s", out.Stdout, want, out.Stderr)
	}
}

func TestDockerBuildError(t *testing.T) {
	e := testEngine(t)
	labels, _ := testLabels(t, e)
	ctx := context.Background()
	sandbox, err := e.EnsureSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bc := NewBuildContext("FROM " + sandbox + "\nUSER 0\nRUN echo boom-output && false\n")
	_, err = e.BuildImage(ctx, "skillgate-test/broken:"+labels[dockerTestLabel], labels, bc)
	if err == nil || !strings.Contains(err.Error(), "non-zero code") || !strings.Contains(err.Error(), "boom-output") {
		t.Errorf("failed build: err = %v", err)
	}
	if _, ok, _ := e.ImageExists(ctx, "skillgate-test/broken:"+labels[dockerTestLabel]); ok {
		t.Error("a failed build left its tag")
	}
}
