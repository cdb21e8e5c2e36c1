package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skillgate/skillgate/runner/backend"
	"github.com/skillgate/skillgate/runner/gateway"
	"github.com/skillgate/skillgate/runner/internal/bounded"
)

// agentScript waits for the go-ahead line on standard input, so that the
// attach that reads the agent's output is in place before the agent writes
// any, then runs the command as a child: a timeout kills every process of the
// container but this shell (kill -9 -1 from an exec), which then ends with
// the command's status, like an init. The rest of standard input is the
// command's.
const agentScript = `read -r _ || exit 125
exec 3<&0
"$@" <&3 3<&- &
wait $!`

// killScript ends every process of a cell's container that its user may
// signal, except the container's first process (the agentScript shell).
const killScript = "kill -9 -1"

// errPodDeadline says the Pod's activeDeadlineSeconds ended it.
var errPodDeadline = errors.New("the pod ran past its deadline")

// RunContainer runs spec as a Pod to its end and deletes the Pod, also when
// ctx is cancelled. An error means the cluster failed, not the agent: a
// non-zero exit, a timeout or an OOM kill is an outcome.
func (c *Cluster) RunContainer(ctx context.Context, spec backend.ContainerSpec) (out *backend.ContainerOutcome, err error) {
	if err := c.checkCellSpec(ctx, spec); err != nil {
		return nil, err
	}
	out = &backend.ContainerOutcome{}
	t0 := time.Now()
	base, baseID, layers := c.resolve(spec.Image)
	image, want, err := c.podImage(ctx, base, baseID)
	if err != nil {
		return nil, fmt.Errorf("run pod: %w", err)
	}
	folders := writableFolders(spec.Env)
	folders = append(folders, filesFolders(spec.Files, folders)...)
	binds := spec.Binds
	var gwHost, gwDir string
	if spec.Gateway != "" {
		var ok bool
		if gwHost, gwDir, ok = strings.Cut(spec.Gateway, ":"); !ok || !path.IsAbs(gwHost) || !path.IsAbs(gwDir) {
			return nil, fmt.Errorf("run pod: gateway folder %q: want hostpath:containerpath", spec.Gateway)
		}
		gwDir = path.Clean(gwDir)
		binds = append(slices.Clip(binds), spec.Gateway+":ro")
	}
	g, err := c.hostFolders(binds, folders)
	if err != nil {
		return nil, fmt.Errorf("run pod: %w", err)
	}
	folders = append(folders, g.folders...)
	trees, err := copiedTrees(spec.Trees, folders)
	if err != nil {
		return nil, fmt.Errorf("run pod: %w", err)
	}
	g.trees = append(g.trees, trees...)
	relayed := spec.Gateway != "" && !c.hostPath
	env := podEnv(spec.Env)
	shape := podShape{image: image, user: spec.User, folders: folders, memory: spec.Memory, cpus: spec.NanoCPUs,
		labels: spec.Labels, prefix: "skillgate-cell-"}
	if spec.Timeout > 0 {
		// A backstop: the cell's own timeout kills the agent and its
		// workspace is still read; past this the cluster ends the Pod.
		shape.deadline = spec.Timeout + spec.CollectLimits.Timeout + cleanupTimeout
	}
	pod, err := shape.pod([]corev1.Container{
		{Name: agentContainer, Command: append([]string{"/bin/sh", "-c", agentScript, "sh"}, spec.Cmd...),
			WorkingDir: spec.WorkingDir, Env: env, Stdin: true, StdinOnce: true, VolumeMounts: g.mounts},
		{Name: holdContainer, Command: []string{"/bin/sh"}, Stdin: true},
	}, map[string]bool{agentContainer: true, holdContainer: true}, g.vols)
	if err != nil {
		return nil, fmt.Errorf("run pod: %w", err)
	}
	// The hold container only reads the workspace; where it relays the
	// gateway, it makes the socket in the gateway's folder, which the agent
	// only reads.
	for i, m := range pod.Spec.Containers[1].VolumeMounts {
		switch {
		case m.MountPath == backend.Workspace:
			pod.Spec.Containers[1].VolumeMounts[i].ReadOnly = true
		case relayed && m.MountPath == gwDir:
			pod.Spec.Containers[1].VolumeMounts[i].ReadOnly = false
		}
	}
	name, err := c.createPod(ctx, pod)
	if err != nil {
		return nil, err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if derr := c.deletePod(rctx, name); derr != nil && !apierrors.IsNotFound(derr) && err == nil {
			out, err = nil, derr
		}
	}()

	if err := c.seed(ctx, name, want, layers, g.trees, spec.Files, folders); err != nil {
		return nil, err
	}
	t1 := time.Now()
	out.Durations.Create = t1.Sub(t0)

	if _, err := c.waitRunning(ctx, name, agentContainer, false); err != nil {
		return nil, err
	}
	// The relay ends with the agent; one that ends before is the cluster's
	// failure, never the agent's: its model calls had nowhere to go.
	relayEnded := make(chan error, 1)
	if relayed {
		if st, err := c.waitRunning(ctx, name, holdContainer, false); err != nil {
			return nil, err
		} else if st.Terminated != nil {
			return nil, fmt.Errorf("run pod %s: its hold container ended: exit %d", name, st.Terminated.ExitCode)
		}
		rctx, rcancel := context.WithCancel(ctx)
		defer rcancel()
		go func() { relayEnded <- c.relay(rctx, name, gwDir, path.Join(gwHost, gateway.GatewaySocket)) }()
		defer func() {
			rcancel()
			if rerr := <-relayEnded; rerr != nil && err == nil {
				out, err = nil, rerr
			}
		}()
	}
	stdout := bounded.NewBuffer(spec.OutputCap)
	stderr := bounded.NewBuffer(spec.OutputCap)
	stdin := io.MultiReader(strings.NewReader("\n"), strings.NewReader(string(spec.Stdin)))
	attached := make(chan error, 1)
	actx, acancel := context.WithCancel(ctx)
	defer acancel()
	go func() {
		attached <- c.attach(actx, name, agentContainer, streamOpts{stdin: stdin, stdout: stdout, stderr: stderr})
	}()
	t2 := time.Now()
	out.Durations.Start = t2.Sub(t1)

	var timeout <-chan time.Time
	if spec.Timeout > 0 {
		timer := time.NewTimer(spec.Timeout - time.Since(t2))
		defer timer.Stop()
		timeout = timer.C
	}
	state, err := c.waitAgent(ctx, name, attached, timeout, &out.TimedOut)
	if err != nil && !errors.Is(err, errPodDeadline) {
		return nil, err
	}
	t3 := time.Now()
	out.Durations.Agent = t3.Sub(t2)
	out.Stdout, out.StdoutBytes = stdout.Bytes(), stdout.Total()
	out.Stderr, out.StderrBytes = stderr.Bytes(), stderr.Total()
	out.Truncated = stdout.Cut() || stderr.Cut()
	if errors.Is(err, errPodDeadline) {
		// Nothing of the Pod runs any more to read its workspace from.
		out.TimedOut, out.ExitCode = true, 137
		out.Collection = backend.Collection{Method: "api", Cut: "the pod's deadline (activeDeadlineSeconds) ended it before its workspace was read"}
		out.Durations.Collect = time.Since(t3)
		return out, nil
	}
	out.ExitCode = int(state.ExitCode)
	out.OOMKilled = state.Reason == "OOMKilled"
	if spec.CollectPrefix != "" && spec.Collect != nil {
		if out.Collection, err = c.collect(ctx, name, spec); err != nil {
			return nil, err
		}
	}
	out.Durations.Collect = time.Since(t3)
	return out, nil
}

// checkCellSpec refuses a cell's spec a Pod cannot run.
func (c *Cluster) checkCellSpec(ctx context.Context, spec backend.ContainerSpec) error {
	if spec.Image == "" {
		return errors.New("run pod: no image")
	}
	if len(spec.Cmd) == 0 {
		return errors.New("run pod: no command (a Pod's image command is not known here)")
	}
	if spec.OutputCap <= 0 {
		return errors.New("run pod: OutputCap must be positive")
	}
	if err := c.checkPids(ctx, spec.PidsLimit); err != nil {
		return fmt.Errorf("run pod: %w", err)
	}
	return nil
}

// podEnv is a spec's environment (KEY=value) as a container's.
func podEnv(kvs []string) []corev1.EnvVar {
	env := make([]corev1.EnvVar, 0, len(kvs))
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		env = append(env, corev1.EnvVar{Name: k, Value: v})
	}
	return env
}

// createPod creates the Pod, not cancelled midway: the API might create it
// anyway, and skillgate would never learn its name to delete it.
func (c *Cluster) createPod(ctx context.Context, pod *corev1.Pod) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("create pod: %w", err)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	created, err := c.cs.CoreV1().Pods(c.namespace).Create(cctx, pod, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("create pod: %w", err)
	}
	return created.Name, nil
}

// imageReasons are the reasons a container waits for an image that will
// not come.
var imageReasons = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "ErrImageNeverPull": true, "InvalidImageName": true}

// startReasons are the reasons a container waits and will never start.
var startReasons = map[string]bool{"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true, "StartError": true}

// waitRunning waits until a container of the Pod runs or has ended, and
// returns its state; a container that cannot start is an error.
func (c *Cluster) waitRunning(ctx context.Context, pod, container string, init bool, seen ...func(*corev1.Pod)) (corev1.ContainerState, error) {
	var st corev1.ContainerState
	err := c.pods.until(ctx, c.namespace, pod, func(p *corev1.Pod) (bool, error) {
		if p == nil {
			return false, nil // not seen yet, or deleted: the tick looks again
		}
		if err := podFailed(p); err != nil {
			return true, err
		}
		s, ok := containerState(p, container, init)
		if !ok {
			return false, nil
		}
		st = s
		for _, f := range seen {
			f(p)
		}
		switch {
		case s.Waiting != nil && imageReasons[s.Waiting.Reason]:
			img := p.Spec.Containers[0].Image
			return true, &ImageMissingError{Image: img, Reason: s.Waiting.Reason, Message: s.Waiting.Message, Registry: c.registry}
		case s.Waiting != nil && startReasons[s.Waiting.Reason]:
			return true, fmt.Errorf("start container %s of pod %s: %s: %s", container, pod, s.Waiting.Reason, s.Waiting.Message)
		}
		return s.Running != nil || s.Terminated != nil, nil
	})
	return st, err
}

// podFailed is why a Pod has failed, or nil.
func podFailed(p *corev1.Pod) error {
	if p.Status.Phase != corev1.PodFailed {
		return nil
	}
	if p.Status.Reason == "DeadlineExceeded" {
		return errPodDeadline
	}
	return fmt.Errorf("pod %s failed: %s %s", p.Name, p.Status.Reason, p.Status.Message)
}

// waitTerminated waits until a container of the Pod has ended and returns how.
func (c *Cluster) waitTerminated(ctx context.Context, pod, container string, init bool) (*corev1.ContainerStateTerminated, error) {
	var st *corev1.ContainerStateTerminated
	err := c.pods.until(ctx, c.namespace, pod, func(p *corev1.Pod) (bool, error) {
		if p == nil {
			return false, nil
		}
		if err := podFailed(p); errors.Is(err, errPodDeadline) {
			return true, err
		}
		if s, ok := containerState(p, container, init); ok && s.Terminated != nil {
			st = s.Terminated
			return true, nil
		}
		return false, podFailed(p)
	})
	return st, err
}

// seed streams the cell's content into the Pod's seed container and waits
// for it to have unpacked it.
func (c *Cluster) seed(ctx context.Context, pod string, want imageWant, layers []*backend.BuildContext, trees []tree, files []backend.SpecFile, folders []folder) error {
	var checked error
	st, err := c.waitRunning(ctx, pod, seedContainer, true, func(p *corev1.Pod) { checked = checkImageID(p, seedContainer, true, want) })
	if err != nil {
		return err
	}
	if checked != nil {
		return checked
	}
	if st.Terminated != nil {
		return fmt.Errorf("seed pod %s: its seed container ended before its content came: exit %d: %s", pod, st.Terminated.ExitCode, st.Terminated.Message)
	}
	pr, pw := io.Pipe()
	streamed := make(chan error, 1)
	go func() {
		err := seedStream(pw, layers, trees, files, folders)
		pw.CloseWithError(err)
		streamed <- err
	}()
	stderr := bounded.NewBuffer(4 << 10)
	aerr := c.attach(ctx, pod, seedContainer, streamOpts{stdin: pr, stderr: stderr})
	pr.Close()
	if err := <-streamed; err != nil {
		return fmt.Errorf("seed pod %s: %w", pod, err)
	}
	if aerr != nil {
		return fmt.Errorf("seed pod %s: %w", pod, aerr)
	}
	wctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	t, err := c.waitTerminated(wctx, pod, seedContainer, true)
	if err != nil {
		return fmt.Errorf("seed pod %s: %w", pod, err)
	}
	if t.ExitCode != 0 {
		return fmt.Errorf("seed pod %s: unpacking the cell's content failed: exit %d: %s", pod, t.ExitCode, strings.TrimSpace(string(stderr.Bytes())))
	}
	return nil
}

// waitAgent waits for the agent's end: its output closed and its container
// ended. On timeout it kills the agent's processes, sets timedOut and waits
// for the end the kill causes.
func (c *Cluster) waitAgent(ctx context.Context, pod string, attached <-chan error, timeout <-chan time.Time, timedOut *bool) (*corev1.ContainerStateTerminated, error) {
	for attached != nil {
		select {
		case err := <-attached:
			attached = nil
			if err != nil && ctx.Err() == nil {
				// The stream broke: the container's state says whether it ended.
				if t, werr := c.waitTerminated(ctx, pod, agentContainer, false); werr == nil {
					return t, nil
				}
				return nil, err
			}
		case <-timeout:
			timeout = nil
			*timedOut = true
			kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			_, err := c.exec(kctx, pod, agentContainer, []string{"/bin/sh", "-c", killScript}, streamOpts{stderr: io.Discard})
			cancel()
			if err != nil {
				// Ended in the meantime, or the kill failed: the Pod's own
				// deadline is the backstop.
				continue
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("wait pod %s: %w", pod, ctx.Err())
		}
	}
	return c.waitTerminated(ctx, pod, agentContainer, false)
}
