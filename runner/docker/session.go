package docker

import (
	"github.com/skillgate/skillgate/runner/internal/bounded"

	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
)

// Session is a running SessionSpec. Each Exec is its own process, whose exit code the
// engine reports: nothing a command prints can pass for another command's result.
type Session struct {
	e    *Engine
	id   string
	dead bool
}

// StartSession starts a session. Its main process is a shell waiting on a standard input
// that never comes, so any image with sh serves.
func (e *Engine) StartSession(ctx context.Context, spec SessionSpec) (*Session, error) {
	cs := ContainerSpec{Image: spec.Image, Cmd: []string{"sh"}, Env: spec.Env, User: spec.User, WorkingDir: spec.WorkingDir,
		Binds: spec.Binds, Trees: spec.Trees, Labels: spec.Labels, Memory: spec.Memory, NanoCPUs: spec.NanoCPUs, PidsLimit: spec.PidsLimit}
	id, err := e.createContainer(ctx, cs, true)
	if err != nil {
		return nil, err
	}
	s := &Session{e: e, id: id}
	if err := e.c.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		s.Close()
		return nil, fmt.Errorf("start session %s: %w", shortID(id), err)
	}
	return s, nil
}

// CopyIn unpacks a tar stream at the container's root, its owners and modes as the headers
// give them; an entry replaces what is at its path, a folder included.
func (s *Session) CopyIn(ctx context.Context, tarStream io.Reader) error {
	err := s.e.c.CopyToContainer(ctx, s.id, "/", tarStream, container.CopyToContainerOptions{AllowOverwriteDirWithFile: true})
	if err != nil {
		return fmt.Errorf("copy into session %s: %w", shortID(s.id), err)
	}
	return nil
}

// Exec runs one command to its end. An error means the engine failed; a non-zero exit or
// a timeout is an outcome. After a timeout the session is dead: start another.
func (s *Session) Exec(ctx context.Context, spec ExecSpec) (*ExecOutcome, error) {
	if s.dead {
		return nil, errors.New("exec in session: the session was killed")
	}
	created, err := s.e.c.ContainerExecCreate(ctx, s.id, container.ExecOptions{
		User: spec.User, Cmd: spec.Cmd, Env: spec.Env, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return nil, fmt.Errorf("exec in session %s: %w", shortID(s.id), err)
	}
	att, err := s.e.c.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, fmt.Errorf("exec in session %s: %w", shortID(s.id), err)
	}
	defer att.Close()
	out := bounded.NewBuffer(max(spec.OutputCap, 1))
	copied := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(out, out, att.Reader)
		copied <- err
	}()
	var timeout <-chan time.Time
	if spec.Timeout > 0 {
		t := time.NewTimer(spec.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	// The command has ended when the engine says so, even if a process it started in the
	// background still holds its output open.
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	res := &ExecOutcome{}
	for done := false; !done; {
		select {
		case <-copied:
			done = true
		case <-poll.C:
			in, err := s.e.c.ContainerExecInspect(ctx, created.ID)
			if err == nil && !in.Running && in.Pid != 0 {
				select {
				case <-copied:
				case <-time.After(time.Second):
					att.Close()
					<-copied
				}
				done = true
			}
		case <-timeout:
			s.kill()
			res.TimedOut = true
			att.Close()
			<-copied
			done = true
		case <-ctx.Done():
			s.kill()
			att.Close()
			<-copied
			return nil, fmt.Errorf("exec in session %s: %w", shortID(s.id), ctx.Err())
		}
	}
	res.Output, res.Bytes = out.Bytes(), out.Total()
	if res.TimedOut {
		res.ExitCode = -1
		return res, nil
	}
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	for {
		in, err := s.e.c.ContainerExecInspect(ictx, created.ID)
		if err != nil {
			return nil, fmt.Errorf("exec in session %s: %w", shortID(s.id), err)
		}
		if !in.Running {
			res.ExitCode = in.ExitCode
			return res, nil
		}
		select {
		case <-ictx.Done():
			return nil, fmt.Errorf("exec in session %s: the command did not end", shortID(s.id))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// kill stops the session's container and everything running in it.
func (s *Session) kill() {
	s.dead = true
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := s.e.c.ContainerKill(ctx, s.id, "KILL"); err != nil && !strings.Contains(err.Error(), "is not running") {
		return
	}
}

// Close removes the session's container.
func (s *Session) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	err := s.e.c.ContainerRemove(ctx, s.id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !client.IsErrNotFound(err) {
		return fmt.Errorf("remove session %s: %w", shortID(s.id), err)
	}
	return nil
}
