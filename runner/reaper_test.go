package runner

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/cell"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"
)

// ownerVariable makes TestReaperAfterKill's own binary the process that
// owns a grading session's check container (with its reaper unless set to
// "bare"); the test kills it with -9.
const ownerVariable = "SKILLGATE_TEST_CONTAINER_OWNER"

// TestReaperAfterKill: a process holding a check container, labelled as a
// grading session's, is killed with -9; its reaper removes the container
// within seconds, with no other command. The same process without a reaper
// leaves its container running, which is what a kill -9 during grading did.
func TestReaperAfterKill(t *testing.T) {
	if spec := os.Getenv(ownerVariable); spec != "" {
		ownContainer(t, spec)
		return
	}
	e := dockertest.Engine(t)
	labels, sel := dockertest.Labels(t, e)
	image, err := e.EnsureSandbox(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, reaped := range []bool{true, false} {
		runID := cell.NewRunID()
		mode := "reaped"
		if !reaped {
			mode = "bare"
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestReaperAfterKill$", "-test.timeout=10m")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %s %s", ownerVariable, mode, image, labels[dockertest.Label], runID))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ready := make(chan bool)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if sc.Text() == "ready" {
					ready <- true
				}
			}
			close(ready)
		}()
		select {
		case ok := <-ready:
			if !ok {
				t.Fatalf("%s: the owner ended before its container ran", mode)
			}
		case <-time.After(3 * time.Minute):
			t.Fatalf("%s: the owner's container never ran", mode)
		}
		run := docker.LabelRun + "=" + runID
		if got := dockertest.Containers(t, sel, run); len(got) != 1 {
			t.Fatalf("%s: before the kill, containers %q", mode, got)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		killed := time.Now()
		var left []string
		for time.Since(killed) < 30*time.Second {
			if left = dockertest.Containers(t, sel, run); len(left) == 0 {
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		switch {
		case reaped && len(left) != 0:
			t.Errorf("30 s after kill -9, the check container is still there: %q", left)
		case reaped:
			t.Logf("the reaper removed the check container %.1f s after kill -9", time.Since(killed).Seconds())
		case len(left) == 0:
			t.Errorf("without a reaper, the container went anyway: the test shows nothing")
		}
	}
}

// ownContainer is the owner's side: start the reaper unless bare, run a
// long check container labelled as a grading session's, say ready, wait
// to be killed.
func ownContainer(t *testing.T, spec string) {
	f := strings.Fields(spec)
	mode, image, testLabel, runID := f[0], f[1], f[2], f[3]
	if mode == "reaped" {
		if _, err := startReaper(docker.LabelRun + "=" + runID); err != nil {
			t.Fatal(err)
		}
	}
	e, err := docker.NewEngine(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	go e.RunContainer(context.Background(), docker.ContainerSpec{
		Image: image, Cmd: []string{"sleep", "600"}, User: "1000:1000", OutputCap: 1 << 10, Timeout: 10 * time.Minute,
		Labels: map[string]string{dockertest.Label: testLabel, docker.LabelRun: runID, docker.LabelKind: "check"},
	})
	for range 600 {
		if got := dockertest.Containers(t, docker.LabelRun+"="+runID); len(got) == 1 && strings.Contains(got[0], " running") {
			fmt.Println("ready")
			select {}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("the container never ran")
}
