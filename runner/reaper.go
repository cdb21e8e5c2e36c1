package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// reaperVariable, set in a process's environment, makes that process a
// reaper (see startReaper) of the containers carrying its value, a label.
const reaperVariable = "SKILLGATE_REAP_LABEL"

// A reaper is this same binary started again with reaperVariable set: it
// does its work before anything else and exits.
func init() {
	if label := os.Getenv(reaperVariable); label != "" {
		os.Exit(reap(label))
	}
}

// reap waits for its owner to end, however it ends (its end of the pipe on
// the reaper's standard input closes, by exit or by kill -9), then removes
// every container carrying label. It sweeps a few times over some seconds:
// a container the owner asked for just before it died may come a moment
// later.
func reap(label string) int {
	signal.Ignore(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	io.Copy(io.Discard, os.Stdin)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e, err := localEngine(ctx)
	if err != nil {
		return 1
	}
	defer e.Close()
	for i := range 3 {
		if i > 0 {
			time.Sleep(2 * time.Second)
		}
		e.Sweep(ctx, label)
	}
	return 0
}

// startReaper starts a reaper of the containers carrying label: a process
// of its own group (Ctrl-C and a kill of this process's group leave it),
// which removes them once this process ends, even by kill -9, when nothing
// else would until the next run into the same folder. stop ends it; it
// then sweeps what is left, which is nothing after a clean end.
func startReaper(label string) (stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("start container reaper: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), reaperVariable+"="+label)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	w, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start container reaper: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start container reaper: %w", err)
	}
	go cmd.Wait()
	return func() { w.Close() }, nil
}
