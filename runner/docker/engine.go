package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
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

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
