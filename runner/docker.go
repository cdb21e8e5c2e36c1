package runner

// This is the only file that imports the Docker SDK, so that the move from
// github.com/docker/docker to github.com/moby/moby/client stays local.

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
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
	// apiCollect makes collections use the engine's API even where the upper layer can be
	// read, so both ways stay tested.
	apiCollect bool
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

	// CollectPrefix is the folder in the container whose changes are collected, such as
	// "/workspace"; changes elsewhere are ignored. Empty collects nothing.
	CollectPrefix string
	// Collect receives every entry below CollectPrefix that differs from the image, in
	// path order, once the container has exited; it reads a file's content through the
	// entry while it is visited. An error it returns fails the run, except errCollectCut,
	// which ends the collection as cut.
	Collect func(WorkspaceEntry) error
	// CollectLimits bound the collection; what they cut is in the outcome.
	CollectLimits CollectLimits

	// Files are written into the container before it starts (the prompt file, for one),
	// owned by root, so the container's user can read them but never change them.
	Files []SpecFile
	// Stdin, when set, is the container's standard input, closed after it.
	Stdin []byte
}

// SpecFile is one file a ContainerSpec puts into its container before the start.
type SpecFile struct {
	Path string // absolute in the container
	Mode int64
	Data []byte
}

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

	// Collection says how the changes below CollectPrefix were read, and what was cut.
	Collection Collection

	Durations ContainerDurations
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

	if len(spec.Files) > 0 {
		if err := e.copyFiles(ctx, id, spec.Files); err != nil {
			return nil, err
		}
	}
	att, err := e.c.ContainerAttach(ctx, id, container.AttachOptions{Stream: true, Stdin: spec.Stdin != nil, Stdout: true, Stderr: true})
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

// collect visits what the container changed below spec.CollectPrefix. On a local overlay2
// engine it reads the container's own upper layer, which holds only the changes, so the
// cost follows them and not the image; elsewhere it asks the engine for its change list and
// an archive of the folder (the whole final folder, listed, with the content of what
// changed).
func (e *Engine) collect(ctx context.Context, id, driver, upper string, spec ContainerSpec) (Collection, error) {
	prefix := path.Clean("/" + spec.CollectPrefix)
	lim := spec.CollectLimits
	var deadline time.Time
	if lim.Timeout > 0 {
		deadline = time.Now().Add(lim.Timeout)
	}
	if driver == "overlay2" && !e.apiCollect && upperReadable(upper) {
		entries, cut, err := walkUpper(upper, prefix, lim, deadline)
		if err == nil {
			col := Collection{Method: "upper", Cut: cut}
			for _, en := range entries {
				if en.open != nil {
					en.open = deadlineOpen(en.open, deadline, lim.Timeout)
				}
				if err := spec.Collect(en); err != nil {
					if errors.Is(err, errCollectCut) {
						col.Cut = cutReason(err)
						break
					}
					return col, err
				}
				col.Entries++
			}
			return col, nil
		}
		if !errors.Is(err, errUpperUnsupported) {
			return Collection{}, fmt.Errorf("collect container %s: %w", shortID(id), err)
		}
	}
	return e.collectAPI(ctx, id, prefix, spec.Collect, lim, deadline)
}

// collectAPI collects through the engine's API: the change list says what changed, and
// one archive of the folder lists everything in it and carries the changed content.
func (e *Engine) collectAPI(ctx context.Context, id, prefix string, visit func(WorkspaceEntry) error, lim CollectLimits, deadline time.Time) (Collection, error) {
	col := Collection{Method: "api"}
	diff, err := e.c.ContainerDiff(ctx, id)
	if err != nil {
		return col, fmt.Errorf("diff container %s: %w", shortID(id), err)
	}
	changed := map[string]bool{}
	var deleted []WorkspaceEntry
	for _, c := range diff {
		rel, ok := under(prefix, path.Clean(c.Path))
		if !ok {
			continue
		}
		if c.Kind == container.ChangeDelete {
			deleted = append(deleted, WorkspaceEntry{Path: rel, Deleted: true})
		} else {
			changed[rel] = true
		}
	}
	if len(changed) == 0 && len(deleted) == 0 {
		return col, nil
	}
	sortEntries(deleted)
	for _, d := range deleted {
		if err := visit(d); err != nil {
			return col, err
		}
		col.Entries++
	}
	rc, _, err := e.c.CopyFromContainer(ctx, id, prefix)
	if err != nil {
		return col, fmt.Errorf("copy %s from container %s: %w", prefix, shortID(id), err)
	}
	defer rc.Close()
	base := path.Base(prefix)
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return col, nil
		}
		if err != nil {
			return col, fmt.Errorf("copy %s from container %s: %w", prefix, shortID(id), err)
		}
		rel, ok := strings.CutPrefix(path.Clean(hdr.Name), base+"/")
		if !ok {
			continue // the folder itself
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			col.Cut = fmt.Sprintf("the collection took longer than limits.collect.timeout (%s)", lim.Timeout)
			return col, nil
		}
		en := WorkspaceEntry{Path: rel, Mode: hdr.FileInfo().Mode().Perm(), Size: hdr.Size, Listed: !changed[rel]}
		switch hdr.Typeflag {
		case tar.TypeDir:
			en.Type = entryDir
		case tar.TypeReg:
			en.Type = entryFile
			if !en.Listed {
				size := hdr.Size
				en.open = deadlineOpen(func() (io.ReadCloser, error) { return io.NopCloser(io.LimitReader(tr, size)), nil }, deadline, lim.Timeout)
			}
		case tar.TypeSymlink:
			en.Type, en.Target = entrySymlink, hdr.Linkname
		case tar.TypeLink:
			// A hard link: the archive does not repeat the content of its earlier name.
			en.Type, en.Size = entryFile, 0
			target := strings.TrimPrefix(path.Clean(hdr.Linkname), base+"/")
			en.open = func() (io.ReadCloser, error) { return nil, fmt.Errorf("%s is a hard link to %s", rel, target) }
		default:
			en.Type = entryOther
		}
		if !en.Listed {
			if lim.Entries > 0 && col.Entries >= lim.Entries {
				col.Cut = fmt.Sprintf("more than %d changed paths (limits.collect.entries): the rest was not collected", lim.Entries)
				return col, nil
			}
			col.Entries++
		}
		if err := visit(en); err != nil {
			if errors.Is(err, errCollectCut) {
				col.Cut = cutReason(err)
				return col, nil
			}
			return col, err
		}
	}
}

// under returns full relative to prefix when it lies strictly below it.
func under(prefix, full string) (string, bool) {
	if prefix == "/" {
		return strings.TrimPrefix(full, "/"), full != "/"
	}
	rel, ok := strings.CutPrefix(full, prefix+"/")
	return rel, ok && rel != ""
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
