package runner

// This is the only file that imports the Docker SDK, so that the move from
// github.com/docker/docker to github.com/moby/moby/client stays local.

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
)

// Engine is skillgate's handle on a Docker engine. It is safe for concurrent use.
type Engine struct {
	c *client.Client
}

// cleanupTimeout bounds the work done on a fresh context after the caller's context is
// cancelled (removing a container after Ctrl-C).
const cleanupTimeout = 30 * time.Second

// NewEngine connects to the engine named by the DOCKER_* environment (the local socket by
// default) and checks that it answers.
func NewEngine(ctx context.Context) (*Engine, error) {
	c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("connect docker engine: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ping, err := c.Ping(pctx)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("connect docker engine: %w (start an engine with .ci/docker-up)", err)
	}
	c.NegotiateAPIVersionPing(ping)
	return &Engine{c: c}, nil
}

// Close releases the engine's connections.
func (e *Engine) Close() error {
	return e.c.Close()
}

// ImageExists reports whether ref (a tag or an ID) names an image, and its ID.
func (e *Engine) ImageExists(ctx context.Context, ref string) (id string, ok bool, err error) {
	img, err := e.c.ImageInspect(ctx, ref)
	if err != nil {
		if client.IsErrNotFound(err) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	return img.ID, true, nil
}

// ImageLabels returns an image's ID and labels; ok is false when the engine lacks it.
func (e *Engine) ImageLabels(ctx context.Context, ref string) (id string, labels map[string]string, ok bool, err error) {
	img, err := e.c.ImageInspect(ctx, ref)
	if err != nil {
		if client.IsErrNotFound(err) {
			return "", nil, false, nil
		}
		return "", nil, false, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	labels = map[string]string{}
	if img.Config != nil && img.Config.Labels != nil {
		labels = img.Config.Labels
	}
	return img.ID, labels, true, nil
}

// buildMessage is one message of the engine's JSON build stream.
type buildMessage struct {
	Stream      string `json:"stream"`
	Error       string `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
	Aux json.RawMessage `json:"aux"`
}

// BuildImage builds bc with networking off, tags the image tag, labels it, and returns its
// ID. It builds unconditionally: the caller asks ImageExists first.
func (e *Engine) BuildImage(ctx context.Context, tag string, labels map[string]string, bc *BuildContext) (id string, err error) {
	if err := bc.check(); err != nil {
		return "", fmt.Errorf("build image %s: %w", tag, err)
	}
	pr, pw := io.Pipe()
	defer pr.Close()
	writeErr := make(chan error, 1)
	go func() {
		_, err := bc.WriteTo(pw)
		pw.CloseWithError(err)
		writeErr <- err
	}()
	resp, err := e.c.ImageBuild(ctx, pr, build.ImageBuildOptions{
		Tags:        []string{tag},
		Labels:      labels,
		NetworkMode: "none",
		Remove:      true,
		ForceRemove: true,
		Dockerfile:  "Dockerfile",
		Version:     build.BuilderV1,
	})
	if err != nil {
		pr.CloseWithError(err)
		if werr := <-writeErr; werr != nil {
			return "", fmt.Errorf("build image %s: %w", tag, werr)
		}
		return "", fmt.Errorf("build image %s: %w", tag, err)
	}
	defer resp.Body.Close()

	var tail []string  // the last lines of build output, to explain a failure
	var steps []string // images the steps made, to remove when the build fails
	fromStep := false
	dec := json.NewDecoder(resp.Body)
	for {
		var m buildMessage
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return "", fmt.Errorf("build image %s: read build output: %w", tag, err)
		}
		if m.Stream != "" {
			for _, l := range strings.Split(strings.TrimRight(m.Stream, "\n"), "\n") {
				if strings.TrimSpace(l) == "" {
					continue
				}
				tail = append(tail, l)
				if strings.HasPrefix(l, "Step ") {
					fromStep = strings.Contains(strings.ToUpper(l), " : FROM ")
				} else if sid, ok := strings.CutPrefix(l, " ---> "); ok && isHex(sid) {
					// The FROM step names its base image, which is not ours to remove.
					if !fromStep {
						steps = append(steps, sid)
					}
				}
			}
			if len(tail) > 10 {
				tail = tail[len(tail)-10:]
			}
		}
		msg := m.Error
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			msg = m.ErrorDetail.Message
		}
		if msg != "" {
			if werr := <-writeErr; werr != nil {
				return "", fmt.Errorf("build image %s: %w", tag, werr)
			}
			e.removeDangling(steps)
			if len(tail) > 0 {
				msg += "\n" + strings.Join(tail, "\n")
			}
			return "", fmt.Errorf("build image %s: %s", tag, msg)
		}
		if len(m.Aux) > 0 {
			var aux struct{ ID string }
			if json.Unmarshal(m.Aux, &aux) == nil && aux.ID != "" {
				id = aux.ID
			}
		}
	}
	if werr := <-writeErr; werr != nil {
		return "", fmt.Errorf("build image %s: %w", tag, werr)
	}
	if id == "" {
		got, ok, err := e.ImageExists(ctx, tag)
		if err != nil {
			return "", fmt.Errorf("build image %s: %w", tag, err)
		}
		if !ok {
			return "", fmt.Errorf("build image %s: the engine reported no image", tag)
		}
		id = got
	}
	return id, nil
}

// removeDangling removes the images that the steps of a failed build left: untagged, and
// without the build's labels, which the classic builder adds only as its last step. It
// never forces: an image that another image or a container uses stays.
func (e *Engine) removeDangling(ids []string) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	for i := len(ids) - 1; i >= 0; i-- {
		img, err := e.c.ImageInspect(ctx, ids[i])
		if err != nil || len(img.RepoTags) > 0 {
			continue
		}
		e.c.ImageRemove(ctx, img.ID, image.RemoveOptions{PruneChildren: true})
	}
}

func isHex(s string) bool {
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return len(s) >= 12
}

// tag gives the image source the name target as well.
func (e *Engine) tag(ctx context.Context, source, target string) error {
	if err := e.c.ImageTag(ctx, source, target); err != nil {
		return fmt.Errorf("tag image %s: %w", target, err)
	}
	return nil
}

// RemoveImages removes, with force, every image carrying label (a key, or key=value), and
// returns how many it removed. Images built from other ones inherit their labels, so
// children are removed first.
func (e *Engine) RemoveImages(ctx context.Context, label string) (int, error) {
	imgs, err := e.c.ImageList(ctx, image.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label))})
	if err != nil {
		return 0, fmt.Errorf("list images: %w", err)
	}
	sort.Slice(imgs, func(i, j int) bool { return imgs[i].Created > imgs[j].Created })
	n := 0
	var failed []error
	// A parent created in the same second as its child may come first: a second pass
	// removes what the first could not.
	for pass := 0; pass < 2 && len(imgs) > 0; pass++ {
		var left []image.Summary
		failed = failed[:0]
		for _, img := range imgs {
			_, err := e.c.ImageRemove(ctx, img.ID, image.RemoveOptions{Force: true, PruneChildren: true})
			switch {
			case err == nil:
				n++
			case client.IsErrNotFound(err):
			default:
				left = append(left, img)
				failed = append(failed, fmt.Errorf("remove image %s: %w", shortID(img.ID), err))
			}
		}
		imgs = left
	}
	return n, errors.Join(failed...)
}

// Sweep removes, with force, every container carrying label (a key, or key=value), such as
// the containers of a run that died, and returns how many it removed.
func (e *Engine) Sweep(ctx context.Context, label string) (int, error) {
	cs, err := e.c.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label))})
	if err != nil {
		return 0, fmt.Errorf("list containers: %w", err)
	}
	n := 0
	var failed []error
	for _, c := range cs {
		err := e.c.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		switch {
		case err == nil:
			n++
		case client.IsErrNotFound(err):
		default:
			failed = append(failed, fmt.Errorf("remove container %s: %w", shortID(c.ID), err))
		}
	}
	return n, errors.Join(failed...)
}

// ContainerSpec is one hardened container: no network, no capabilities, no privilege
// escalation, limits on memory, CPU and processes, an init process, and only the
// environment given here.
type ContainerSpec struct {
	Image      string
	Cmd        []string
	Env        []string // KEY=value; nothing of skillgate's own environment enters
	User       string   // "1000:1000"
	WorkingDir string
	Labels     map[string]string

	Memory    int64 // bytes; swap is not allowed on top of it; 0 means no limit
	NanoCPUs  int64 // 1e9 is one CPU; 0 means no limit
	PidsLimit int64 // 0 means no limit
	Timeout   time.Duration

	Binds []string // "hostpath:containerpath:ro"

	// OutputCap is how many bytes of stdout, and of stderr, are kept; the rest is counted
	// and discarded as it streams. It must be positive.
	OutputCap int64

	// CollectPrefix is the folder in the container whose changes are reported, such as
	// "/workspace"; changes elsewhere are ignored. Empty collects nothing.
	CollectPrefix string
	// CollectDir, when set, is the host folder that receives the added and modified
	// regular files under CollectPrefix, at their paths relative to it.
	CollectDir string

	// Commit makes an image of the container's final state (for assertions that run
	// commands in it), labelled with Labels.
	Commit bool
}

// Change is one changed path under a ContainerSpec's CollectPrefix.
type Change struct {
	Path string `json:"path"` // relative to CollectPrefix, slash-separated
	Kind string `json:"kind"` // ChangeAdded, ChangeModified or ChangeDeleted
}

// Kinds of Change.
const (
	ChangeAdded    = "added"
	ChangeModified = "modified"
	ChangeDeleted  = "deleted"
)

// ContainerDurations are the phases of RunContainer, for telemetry.
type ContainerDurations struct {
	Create  time.Duration // create and attach
	Start   time.Duration
	Agent   time.Duration // from start to exit
	Collect time.Duration // inspect, diff, copy out, commit
}

// ContainerOutcome is what a finished container left: how it ended, its output and its
// file changes.
type ContainerOutcome struct {
	ExitCode  int
	TimedOut  bool
	OOMKilled bool

	Stdout, Stderr           []byte // at most OutputCap bytes each
	StdoutBytes, StderrBytes int64  // all the bytes written
	Truncated                bool   // some output was discarded

	// Changes lists the paths under CollectPrefix that were added, modified or deleted,
	// sorted, folders omitted. A deleted folder shows as one deleted path.
	Changes []Change

	CommittedImage string

	Durations ContainerDurations
}

// createContainer creates the hardened container for spec and returns its ID.
func (e *Engine) createContainer(ctx context.Context, spec ContainerSpec) (string, error) {
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
		Binds:       spec.Binds,
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
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("create container: %w", err)
	}
	// Not cancelled midway: the engine would create the container anyway
	// and skillgate would never learn its ID to remove it.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	created, err := e.c.ContainerCreate(cctx, cfg, hc, nil, nil, "")
	if err != nil {
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
	id, err := e.createContainer(ctx, spec)
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

	att, err := e.c.ContainerAttach(ctx, id, container.AttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		return nil, fmt.Errorf("attach container %s: %w", shortID(id), err)
	}
	defer att.Close()
	stdout := &cappedBuffer{limit: spec.OutputCap}
	stderr := &cappedBuffer{limit: spec.OutputCap}
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
	out.Stdout, out.StdoutBytes = stdout.buf, stdout.total
	out.Stderr, out.StderrBytes = stderr.buf, stderr.total
	out.Truncated = stdout.total > int64(len(stdout.buf)) || stderr.total > int64(len(stderr.buf))

	info, err := e.c.ContainerInspect(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("inspect container %s: %w", shortID(id), err)
	}
	out.ExitCode = int(exit)
	if info.State != nil {
		out.OOMKilled = info.State.OOMKilled
	}
	if spec.CollectPrefix != "" {
		if out.Changes, err = e.collect(ctx, id, spec.CollectPrefix, spec.CollectDir); err != nil {
			return nil, err
		}
	}
	if spec.Commit {
		c, err := e.c.ContainerCommit(ctx, id, container.CommitOptions{Config: &container.Config{Labels: spec.Labels}})
		if err != nil {
			return nil, fmt.Errorf("commit container %s: %w", shortID(id), err)
		}
		out.CommittedImage = c.ID
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

// collect lists the changes under prefix and copies the added and modified regular files
// into dir. It asks the engine for the changed paths only, so its cost follows the size of
// the changes, not of the workspace: an added folder is copied in one piece (all of it is
// new), other files one by one.
func (e *Engine) collect(ctx context.Context, id, prefix, dir string) ([]Change, error) {
	prefix = path.Clean("/" + prefix)
	diff, err := e.c.ContainerDiff(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("diff container %s: %w", shortID(id), err)
	}
	type item struct {
		full, rel string
		kind      container.ChangeType
	}
	var items []item
	isDir := map[string]bool{} // by full path: folders that hold other changes
	for _, c := range diff {
		full := path.Clean(c.Path)
		rel, ok := under(prefix, full)
		if !ok {
			continue
		}
		items = append(items, item{full: full, rel: rel, kind: c.Kind})
		for d := path.Dir(full); d != prefix && d != "/"; d = path.Dir(d) {
			isDir[d] = true
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].rel < items[j].rel })
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("collect changes: %w", err)
		}
	}

	types := map[string]byte{} // by rel: the tar type of each path copied out
	copiedDirs := map[string]bool{}
	insideCopied := func(full string) bool {
		for d := path.Dir(full); d != prefix && d != "/"; d = path.Dir(d) {
			if copiedDirs[d] {
				return true
			}
		}
		return false
	}
	var changes []Change
	for _, it := range items {
		if it.kind == container.ChangeDelete {
			changes = append(changes, Change{Path: it.rel, Kind: ChangeDeleted})
			continue
		}
		kind := ChangeModified
		if it.kind == container.ChangeAdd {
			kind = ChangeAdded
		}
		switch {
		case isDir[it.full]:
			if it.kind == container.ChangeAdd && dir != "" && !insideCopied(it.full) {
				if err := e.copyOut(ctx, id, it.full, it.rel, dir, types, true); err != nil {
					return nil, err
				}
				copiedDirs[it.full] = true
			}
			continue
		case insideCopied(it.full):
			// Already copied with its added folder; types tells what it is.
		default:
			if err := e.copyOut(ctx, id, it.full, it.rel, dir, types, it.kind == container.ChangeAdd); err != nil {
				return nil, err
			}
		}
		if t, ok := types[it.rel]; ok && t == tar.TypeDir {
			continue
		}
		changes = append(changes, Change{Path: it.rel, Kind: kind})
	}
	return changes, nil
}

// under returns full relative to prefix when it lies strictly below it.
func under(prefix, full string) (string, bool) {
	if prefix == "/" {
		return strings.TrimPrefix(full, "/"), full != "/"
	}
	rel, ok := strings.CutPrefix(full, prefix+"/")
	return rel, ok && rel != ""
}

// copyOut copies the path full out of the container and writes the regular files it holds
// under dir (or nowhere when dir is empty), recording each entry's type by path. A folder
// is read only when wholeDir is set: a modified folder holds unchanged files.
func (e *Engine) copyOut(ctx context.Context, id, full, rel, dir string, types map[string]byte, wholeDir bool) error {
	if dir == "" {
		// Only the kind of file is needed, not its content.
		st, err := e.c.ContainerStatPath(ctx, id, full)
		if err != nil {
			return fmt.Errorf("stat %s in container %s: %w", full, shortID(id), err)
		}
		types[rel] = fileModeType(st.Mode)
		return nil
	}
	rc, st, err := e.c.CopyFromContainer(ctx, id, full)
	if err != nil {
		return fmt.Errorf("copy %s from container %s: %w", full, shortID(id), err)
	}
	defer rc.Close()
	if st.Mode.IsDir() && !wholeDir {
		types[rel] = tar.TypeDir
		return nil
	}
	base := path.Base(full)
	parent := path.Dir(rel)
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("copy %s from container %s: %w", full, shortID(id), err)
		}
		name := path.Clean(hdr.Name)
		if name != base && !strings.HasPrefix(name, base+"/") {
			return fmt.Errorf("copy %s from container %s: unexpected entry %q", full, shortID(id), hdr.Name)
		}
		r := path.Join(parent, name)
		types[r] = hdr.Typeflag
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		if err := writeCollected(filepath.Join(dir, filepath.FromSlash(r)), hdr.FileInfo().Mode(), tr); err != nil {
			return fmt.Errorf("collect %s: %w", r, err)
		}
	}
}

func writeCollected(dst string, mode fs.FileMode, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	perm := fs.FileMode(0o644)
	if mode&0o111 != 0 {
		perm = 0o755
	}
	// A stale entry of another kind (a folder, a symlink) must not be written through.
	if fi, err := os.Lstat(dst); err == nil && !fi.Mode().IsRegular() {
		if err := os.RemoveAll(dst); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func fileModeType(m fs.FileMode) byte {
	switch {
	case m.IsDir():
		return tar.TypeDir
	case m&fs.ModeSymlink != 0:
		return tar.TypeSymlink
	case m.IsRegular():
		return tar.TypeReg
	default:
		return tar.TypeChar // some other kind; only folders are left out of Changes
	}
}

// cappedBuffer keeps the first limit bytes written to it and counts the rest.
type cappedBuffer struct {
	limit int64
	buf   []byte
	total int64
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.total += int64(len(p))
	if room := c.limit - int64(len(c.buf)); room > 0 {
		c.buf = append(c.buf, p[:min(room, int64(len(p)))]...)
	}
	return len(p), nil
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
