package docker

import (
	"github.com/skillgate/skillgate/runner/internal/bounded"

	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
)

// treeBinds are the read-only binds of trees.
func treeBinds(trees []Tree) []string {
	out := make([]string, 0, len(trees))
	for _, t := range trees {
		out = append(out, t.Host+":"+path.Clean(t.Path)+":ro")
	}
	return out
}

// createContainer creates the hardened container for spec and returns its ID.
// With keepStdin, the container's standard input stays open and unread, for a session.
func (e *Engine) createContainer(ctx context.Context, spec ContainerSpec, keepStdin bool) (string, error) {
	env := spec.Env
	if env == nil {
		env = []string{}
	}
	init := true
	hc := &container.HostConfig{
		NetworkMode: "none",
		CapDrop:     []string{"ALL"},
		SecurityOpt: []string{"no-new-privileges"},
		IpcMode:     "private",
		Init:        &init,
		Binds:       slices.Concat(spec.Binds, treeBinds(spec.Trees)),
		// Output is streamed to skillgate; a log file would only cost disk and time.
		LogConfig: container.LogConfig{Type: "none"},
		Resources: container.Resources{
			Memory:   spec.Memory,
			NanoCPUs: spec.NanoCPUs,
		},
	}
	if spec.Memory > 0 {
		hc.Resources.MemorySwap = spec.Memory
	}
	if spec.PidsLimit > 0 {
		pids := spec.PidsLimit
		hc.Resources.PidsLimit = &pids
	}
	cfg := &container.Config{
		Image:           spec.Image,
		Cmd:             spec.Cmd,
		Env:             env,
		User:            spec.User,
		WorkingDir:      spec.WorkingDir,
		Labels:          spec.Labels,
		AttachStdout:    true,
		AttachStderr:    true,
		NetworkDisabled: true,
	}
	switch {
	case keepStdin:
		cfg.OpenStdin, cfg.AttachStdout, cfg.AttachStderr = true, false, false
	case spec.Stdin != nil:
		cfg.AttachStdin, cfg.OpenStdin, cfg.StdinOnce = true, true, true
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("create container: %w", err)
	}
	// Not cancelled midway: the engine would create the container anyway
	// and skillgate would never learn its ID to remove it.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	created, err := e.c.ContainerCreate(cctx, cfg, hc, nil, nil, "")
	if err != nil {
		if client.IsErrNotFound(err) {
			return "", fmt.Errorf("create container: %w: %s: %w", ErrImageMissing, spec.Image, err)
		}
		return "", fmt.Errorf("create container: %w", err)
	}
	return created.ID, nil
}

// RunContainer runs spec to its end and removes the container, also when ctx is cancelled.
// An error means the engine failed, not the agent: a non-zero exit, a timeout or an OOM
// kill is an outcome.
func (e *Engine) RunContainer(ctx context.Context, spec ContainerSpec) (out *ContainerOutcome, err error) {
	if spec.Image == "" {
		return nil, errors.New("run container: no image")
	}
	if spec.OutputCap <= 0 {
		return nil, errors.New("run container: OutputCap must be positive")
	}
	out = &ContainerOutcome{}
	t0 := time.Now()
	if spec.Gateway != "" {
		spec.Binds = slices.Concat(spec.Binds, []string{spec.Gateway + ":ro"})
	}
	files := spec.Files
	if host, dir, ok, err := bindFiles(files); err != nil {
		return nil, err
	} else if ok {
		defer func() {
			os.Chmod(host, 0o755) // so that a non-root skillgate can remove the files
			os.RemoveAll(host)
		}()
		spec.Binds = slices.Concat(spec.Binds, []string{host + ":" + dir + ":ro"})
		files = nil
	}
	id, err := e.createContainer(ctx, spec, false)
	if err != nil {
		return nil, err
	}
	defer func() {
		// A fresh context: the container goes even when ctx was cancelled.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		rerr := e.c.ContainerRemove(rctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if rerr != nil && !client.IsErrNotFound(rerr) && err == nil {
			out, err = nil, fmt.Errorf("remove container %s: %w", shortID(id), rerr)
		}
	}()

	if len(files) > 0 {
		if err := e.copyFiles(ctx, id, files); err != nil {
			return nil, err
		}
	}
	att, err := e.c.ContainerAttach(ctx, id, container.AttachOptions{Stream: true, Stdin: spec.Stdin != nil, Stdout: true, Stderr: true})
	if err != nil {
		return nil, fmt.Errorf("attach container %s: %w", shortID(id), err)
	}
	defer att.Close()
	stdout := bounded.NewBuffer(spec.OutputCap)
	stderr := bounded.NewBuffer(spec.OutputCap)
	copied := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(stdout, stderr, att.Reader)
		copied <- err
	}()
	// Registered before the start, so that a container that exits at once is not missed.
	waitCh, waitErr := e.c.ContainerWait(ctx, id, container.WaitConditionNextExit)
	t1 := time.Now()
	out.Durations.Create = t1.Sub(t0)

	if err := e.c.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return nil, fmt.Errorf("start container %s: %w", shortID(id), err)
	}
	if spec.Stdin != nil {
		// The agent reads its input while it runs; a full pipe must not hold the wait.
		go func() {
			att.Conn.Write(spec.Stdin)
			att.CloseWrite()
		}()
	}
	t2 := time.Now()
	out.Durations.Start = t2.Sub(t1)

	var timeout <-chan time.Time
	if spec.Timeout > 0 {
		timer := time.NewTimer(spec.Timeout - time.Since(t2))
		defer timer.Stop()
		timeout = timer.C
	}
	exit, err := e.wait(ctx, id, waitCh, waitErr, timeout, &out.TimedOut)
	if err != nil {
		return nil, err
	}
	t3 := time.Now()
	out.Durations.Agent = t3.Sub(t2)

	// The stream ends when the container does; a process that escaped the container's
	// end cannot hold skillgate here.
	select {
	case err := <-copied:
		if err != nil {
			return nil, fmt.Errorf("read container %s output: %w", shortID(id), err)
		}
	case <-time.After(5 * time.Second):
		att.Close()
		<-copied
	}
	out.Stdout, out.StdoutBytes = stdout.Bytes(), stdout.Total()
	out.Stderr, out.StderrBytes = stderr.Bytes(), stderr.Total()
	out.Truncated = stdout.Cut() || stderr.Cut()

	info, err := e.c.ContainerInspect(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("inspect container %s: %w", shortID(id), err)
	}
	out.ExitCode = int(exit)
	if info.State != nil {
		out.OOMKilled = info.State.OOMKilled
	}
	if spec.CollectPrefix != "" && spec.Collect != nil {
		if out.Collection, err = e.collect(ctx, id, info.GraphDriver.Name, info.GraphDriver.Data["UpperDir"], spec); err != nil {
			return nil, err
		}
	}
	out.Durations.Collect = time.Since(t3)
	return out, nil
}

// wait waits for the container's exit; on timeout it kills the container, sets timedOut
// and waits for the exit the kill causes.
func (e *Engine) wait(ctx context.Context, id string, waitCh <-chan container.WaitResponse, waitErr <-chan error, timeout <-chan time.Time, timedOut *bool) (int64, error) {
	for {
		select {
		case r := <-waitCh:
			if r.Error != nil && r.Error.Message != "" {
				return 0, fmt.Errorf("wait container %s: %s", shortID(id), r.Error.Message)
			}
			return r.StatusCode, nil
		case err := <-waitErr:
			return 0, fmt.Errorf("wait container %s: %w", shortID(id), err)
		case <-timeout:
			timeout = nil
			*timedOut = true
			kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			err := e.c.ContainerKill(kctx, id, "KILL")
			cancel()
			// Not running any more means it exited in the meantime: the wait says how.
			if err != nil && !strings.Contains(err.Error(), "is not running") {
				return 0, fmt.Errorf("kill container %s: %w", shortID(id), err)
			}
		}
	}
}

// bindFiles writes files that all sit directly in one folder of the container (a cell's
// /skillgate-input) into a fresh host folder, to be bind-mounted there read-only: one
// more mount at create, where copying them in is another API call that has the engine
// mount the container's file system and unpack a tar. The container's user can read
// them and never change them either way. It reports false, writing nothing, for files
// in more than one folder or in the container's root.
func bindFiles(files []SpecFile) (host, dir string, ok bool, err error) {
	if len(files) == 0 {
		return "", "", false, nil
	}
	dir = path.Dir(path.Clean(files[0].Path))
	for _, f := range files {
		if path.Dir(path.Clean(f.Path)) != dir || dir == "/" || !path.IsAbs(dir) {
			return "", "", false, nil
		}
	}
	host, err = os.MkdirTemp("", "skillgate-input-")
	if err != nil {
		return "", "", false, fmt.Errorf("write container input files: %w", err)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(host, path.Base(f.Path)), f.Data, os.FileMode(f.Mode&0o444)); err != nil {
			os.RemoveAll(host)
			return "", "", false, fmt.Errorf("write container input files: %w", err)
		}
	}
	if err := os.Chmod(host, 0o555); err != nil {
		os.RemoveAll(host)
		return "", "", false, fmt.Errorf("write container input files: %w", err)
	}
	return host, dir, true, nil
}

// copyFiles writes files into a created container, root-owned, with their folders
// root-owned and world-readable.
func (e *Engine) copyFiles(ctx context.Context, id string, files []SpecFile) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, f := range files {
		var parents []string
		for d := path.Dir(path.Clean(f.Path)); d != "/" && !dirs[d]; d = path.Dir(d) {
			parents = append(parents, d)
			dirs[d] = true
		}
		for i := len(parents) - 1; i >= 0; i-- {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(parents[i], "/") + "/", Mode: 0o555, ModTime: layerEpoch}); err != nil {
				return fmt.Errorf("copy files into container %s: %w", shortID(id), err)
			}
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(path.Clean(f.Path), "/"), Mode: f.Mode, Size: int64(len(f.Data)), ModTime: layerEpoch}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("copy files into container %s: %w", shortID(id), err)
		}
		if _, err := tw.Write(f.Data); err != nil {
			return fmt.Errorf("copy files into container %s: %w", shortID(id), err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("copy files into container %s: %w", shortID(id), err)
	}
	if err := e.c.CopyToContainer(ctx, id, "/", &buf, container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("copy files into container %s: %w", shortID(id), err)
	}
	return nil
}

// RunBare runs spec's hardened container with the lifecycle alone: create, start, wait,
// remove, through the same API calls and configuration as RunContainer, and nothing of a
// cell's (no files written in, no output attached, no collection, no inspection). It is
// the floor a cell's cost is measured against; it returns the exit code.
func (e *Engine) RunBare(ctx context.Context, spec ContainerSpec) (int, error) {
	id, err := e.createContainer(ctx, spec, false)
	if err != nil {
		return 0, err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		e.c.ContainerRemove(rctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	}()
	waitCh, waitErr := e.c.ContainerWait(ctx, id, container.WaitConditionNextExit)
	if err := e.c.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return 0, fmt.Errorf("start container %s: %w", shortID(id), err)
	}
	var timedOut bool
	exit, err := e.wait(ctx, id, waitCh, waitErr, nil, &timedOut)
	return int(exit), err
}
