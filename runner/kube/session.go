package kube

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/skillgate/skillgate/runner/backend"
	"github.com/skillgate/skillgate/runner/internal/bounded"
)

// Session is a check session as a Pod: a shell waiting on a standard input
// that never comes, in which each Exec is its own process, whose exit code
// the API reports.
type Session struct {
	c       *Cluster
	name    string
	folders []folder
	dead    bool
}

// StartSession starts a session's Pod from spec's image (a cell image's
// content is streamed into it first). Its root is read-only: its commands
// write to the workspace, the home, /tmp and the folders given, which is
// where CopyIn may unpack.
func (c *Cluster) StartSession(ctx context.Context, spec backend.SessionSpec, folders ...string) (*Session, error) {
	base, baseID, layers := c.resolve(spec.Image)
	image, want, err := c.podImage(ctx, base, baseID)
	if err != nil {
		return nil, fmt.Errorf("start session: %w", err)
	}
	fs := writableFolders(spec.Env)
	for _, f := range folders {
		if p := path.Clean(f); path.IsAbs(p) && placeOf(p, fs) == placeOutside {
			fs = append(fs, folder{path: p})
		}
	}
	env := make([]corev1.EnvVar, 0, len(spec.Env))
	for _, kv := range spec.Env {
		k, v, _ := strings.Cut(kv, "=")
		env = append(env, corev1.EnvVar{Name: k, Value: v})
	}
	shape := podShape{image: image, user: spec.User, folders: fs, memory: spec.Memory, cpus: spec.NanoCPUs,
		labels: spec.Labels, prefix: "skillgate-check-"}
	g, err := c.hostFolders(spec.Binds, fs)
	if err != nil {
		return nil, fmt.Errorf("start session: %w", err)
	}
	shape.folders = append(shape.folders, g.folders...)
	trees, err := copiedTrees(spec.Trees, shape.folders)
	if err != nil {
		return nil, fmt.Errorf("start session: %w", err)
	}
	g.trees = append(g.trees, trees...)
	pod, err := shape.pod([]corev1.Container{{Name: sessionContainer, Command: []string{"/bin/sh"}, Stdin: true,
		WorkingDir: spec.WorkingDir, Env: env, VolumeMounts: g.mounts}}, map[string]bool{sessionContainer: true}, g.vols)
	if err != nil {
		return nil, fmt.Errorf("start session: %w", err)
	}
	if err := c.checkPids(ctx, spec.PidsLimit); err != nil {
		return nil, fmt.Errorf("start session: %w", err)
	}
	name, err := c.createPod(ctx, pod)
	if err != nil {
		return nil, err
	}
	s := &Session{c: c, name: name, folders: fs}
	if err := c.seed(ctx, name, want, layers, g.trees, nil, shape.folders); err != nil {
		s.Close()
		return nil, err
	}
	if st, err := c.waitRunning(ctx, name, sessionContainer, false); err != nil {
		s.Close()
		return nil, err
	} else if st.Terminated != nil {
		s.Close()
		return nil, fmt.Errorf("start session %s: its shell ended: exit %d", name, st.Terminated.ExitCode)
	}
	return s, nil
}

// CopyIn unpacks a tar stream at the session's root, its modes as the
// headers give them, owned by the session's user; every entry must lie in one
// of its folders.
func (s *Session) CopyIn(ctx context.Context, tarStream io.Reader) error {
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(s.placed(tarStream, pw))
	}()
	stderr := bounded.NewBuffer(4 << 10)
	code, err := s.c.exec(ctx, s.name, sessionContainer, []string{"tar", "-x", "-o", "-f", "-", "-C", "/"}, streamOpts{stdin: pr, stderr: stderr})
	pr.Close()
	if err != nil {
		return fmt.Errorf("copy into session %s: %w", s.name, err)
	}
	if code != 0 {
		return fmt.Errorf("copy into session %s: tar exit %d: %s", s.name, code, strings.TrimSpace(string(stderr.Bytes())))
	}
	return nil
}

// placed copies a tar stream, leaving out the entries of the folders
// themselves and those above them.
func (s *Session) placed(in io.Reader, w io.Writer) error {
	tr, tw := tar.NewReader(in), tar.NewWriter(w)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return tw.Close()
		}
		if err != nil {
			return err
		}
		name := "/" + strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		switch placeOf(name, s.folders) {
		case placeAbove:
			continue
		case placeOutside:
			return fmt.Errorf("place %s in the session: not below one of its folders (%s)", name, folderList(s.folders))
		}
		h.Name = strings.TrimPrefix(name, "/")
		if h.Typeflag == tar.TypeDir {
			h.Name += "/"
		}
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
}

// Exec runs one command to its end. An error means the cluster failed; a
// non-zero exit or a timeout is an outcome. After a timeout the session is
// dead: start another.
func (s *Session) Exec(ctx context.Context, spec backend.ExecSpec) (*backend.ExecOutcome, error) {
	if s.dead {
		return nil, errors.New("exec in session: the session was killed")
	}
	if spec.User != "" {
		return nil, fmt.Errorf("exec in session %s: a Pod's command runs as its container's user, not %s", s.name, spec.User)
	}
	cmd := spec.Cmd
	if len(spec.Env) > 0 {
		cmd = append(append([]string{"env"}, spec.Env...), spec.Cmd...)
	}
	ectx, cancel := ctx, context.CancelFunc(func() {})
	if spec.Timeout > 0 {
		ectx, cancel = context.WithTimeout(ctx, spec.Timeout)
	}
	defer cancel()
	out := bounded.NewBuffer(max(spec.OutputCap, 1))
	code, err := s.c.exec(ectx, s.name, sessionContainer, cmd, streamOpts{stdout: out, stderr: out})
	res := &backend.ExecOutcome{ExitCode: code}
	switch {
	case ctx.Err() != nil:
		s.kill()
		return nil, fmt.Errorf("exec in session %s: %w", s.name, ctx.Err())
	case ectx.Err() != nil:
		s.kill()
		res.TimedOut, res.ExitCode = true, -1
	case err != nil:
		return nil, err
	}
	res.Output, res.Bytes = out.Bytes(), out.Total()
	return res, nil
}

// kill ends the session's Pod and everything running in it.
func (s *Session) kill() {
	s.dead = true
	s.Close()
}

// Close deletes the session's Pod.
func (s *Session) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := s.c.deletePod(ctx, s.name); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
