package docker_test

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"
)

func TestContainer(t *testing.T) {
	e := dockertest.Engine(t)
	labels, sel := dockertest.Labels(t, e)
	img := dockertest.AgentImage(t, e, labels)
	base := docker.ContainerSpec{
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
		out := dockertest.Run(t, e, spec)
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
		out := dockertest.Run(t, e, spec)
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
		out := dockertest.Run(t, e, spec)
		if !out.OOMKilled || out.TimedOut || out.ExitCode == 0 {
			t.Errorf("OOMKilled %v, timed out %v, exit %d; stdout tail %q", out.OOMKilled, out.TimedOut, out.ExitCode, tail(out.Stdout))
		}
	})

	t.Run("Timeout", func(t *testing.T) {
		spec := base
		spec.Timeout = 2 * time.Second
		spec.Cmd = []string{"/bin/testagent", "sleep", "30"}
		start := time.Now()
		out := dockertest.Run(t, e, spec)
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
		out := dockertest.Run(t, e, spec)
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

	t.Run("Environment", func(t *testing.T) {
		canary := dockertest.RandomHex(t)
		t.Setenv("SKILLGATE_CANARY", canary)
		spec := base
		spec.Env = []string{"SKILLGATE_PROMPT=fix the bug"}
		spec.Cmd = []string{"/bin/testagent", "env"}
		out := dockertest.Run(t, e, spec)
		so := string(out.Stdout)
		if strings.Contains(so, canary) || !strings.Contains(so, "SKILLGATE_PROMPT=fix the bug\n") {
			t.Errorf("environment in the container:\n%s", so)
		}
		spec.Cmd = []string{"/bin/testagent", "echo"}
		if out := dockertest.Run(t, e, spec); string(out.Stdout) != "fix the bug\n" {
			t.Errorf("echo printed %q", out.Stdout)
		}
	})

	t.Run("Identity", func(t *testing.T) {
		spec := base
		spec.Cmd = []string{"sh", "-c", "id -u; id -g; grep -E '^(CapEff|CapBnd|NoNewPrivs):' /proc/self/status"}
		out := dockertest.Run(t, e, spec)
		want := "1000\n1000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nNoNewPrivs:\t1\n"
		if string(out.Stdout) != want {
			t.Errorf("stdout %q, want %q; stderr %q", out.Stdout, want, out.Stderr)
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
	e := dockertest.Engine(t)
	labels, sel := dockertest.Labels(t, e)
	ctx := context.Background()
	sandbox, err := e.EnsureSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A container that a dead run left behind.
	if _, err := docker.CreateContainer(e, ctx, docker.ContainerSpec{Image: sandbox, Cmd: []string{"true"}, Labels: labels}, false); err != nil {
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
	e := dockertest.Engine(t)
	labels, _ := dockertest.Labels(t, e)
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
	if !strings.HasPrefix(ref, docker.SandboxImage+":") || len(ref) != len(docker.SandboxImage)+13 {
		t.Errorf("ref %q is not %s:<12 hex>", ref, docker.SandboxImage)
	}
	if _, ok, _ := e.ImageExists(ctx, docker.SandboxImage+":latest"); !ok {
		t.Errorf("%s:latest is missing", docker.SandboxImage)
	}

	out, err := e.RunContainer(ctx, docker.ContainerSpec{
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
	e := dockertest.Engine(t)
	labels, _ := dockertest.Labels(t, e)
	ctx := context.Background()
	sandbox, err := e.EnsureSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bc := docker.NewBuildContext("FROM " + sandbox + "\nUSER 0\nRUN echo boom-output && false\n")
	_, err = e.BuildImage(ctx, "skillgate-test/broken:"+labels[dockertest.Label], labels, bc)
	if err == nil || !strings.Contains(err.Error(), "non-zero code") || !strings.Contains(err.Error(), "boom-output") {
		t.Errorf("failed build: err = %v", err)
	}
	if _, ok, _ := e.ImageExists(ctx, "skillgate-test/broken:"+labels[dockertest.Label]); ok {
		t.Error("a failed build left its tag")
	}
}
