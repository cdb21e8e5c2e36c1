package kube

import (
	"context"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
)

// streamOpts are the streams of an exec or an attach; nil ones are not
// asked for.
type streamOpts struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// execEnd is how an exec that ran in the background ended.
type execEnd struct {
	code int
	err  error
}

// exec runs cmd in a container of a Pod through the API and returns its exit
// code; an error means the API or the stream failed.
func (c *Cluster) exec(ctx context.Context, pod, container string, cmd []string, s streamOpts) (int, error) {
	req := c.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(c.namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: container, Command: cmd,
			Stdin: s.stdin != nil, Stdout: s.stdout != nil, Stderr: s.stderr != nil,
		}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(c.rest, "POST", req.URL())
	if err != nil {
		return 0, fmt.Errorf("exec in pod %s: %w", pod, err)
	}
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: s.stdin, Stdout: s.stdout, Stderr: s.stderr})
	var ce utilexec.CodeExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ce):
		return ce.ExitStatus(), nil
	default:
		return 0, fmt.Errorf("exec in pod %s: %w", pod, err)
	}
}

// attach streams to and from the main process of a running container; it
// returns when the container's output ends.
func (c *Cluster) attach(ctx context.Context, pod, container string, s streamOpts) error {
	req := c.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(c.namespace).Name(pod).SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{
			Container: container,
			Stdin:     s.stdin != nil, Stdout: s.stdout != nil, Stderr: s.stderr != nil,
		}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(c.rest, "POST", req.URL())
	if err != nil {
		return fmt.Errorf("attach pod %s: %w", pod, err)
	}
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: s.stdin, Stdout: s.stdout, Stderr: s.stderr}); err != nil {
		return fmt.Errorf("attach pod %s: %w", pod, err)
	}
	return nil
}
