package runner

import (
	"context"
	"io"

	"github.com/skillgate/skillgate/runner/docker"
)

// backend is what the runner asks of the engine that runs its cells: the
// images a cell starts from, the cell's container, the check sessions of
// its run: assertions, and the sweep of what a dead run left. Only Docker
// is one today (package docker); the next backend implements these.
type backend interface {
	// Images.
	EnsureSandbox(ctx context.Context) (ref string, err error)
	ImageExists(ctx context.Context, ref string) (id string, ok bool, err error)
	ImageLabels(ctx context.Context, ref string) (id string, labels map[string]string, ok bool, err error)
	BuildImage(ctx context.Context, tag string, labels map[string]string, bc *docker.BuildContext) (id string, err error)
	Tag(ctx context.Context, source, target string) error
	// ImageInfo and ImportImage serve environments: an image pinned by digest, a root
	// file system (skillgate's Debian userland) made an image.
	ImageInfo(ctx context.Context, ref string) (docker.ImageInfo, bool, error)
	ImportImage(ctx context.Context, tag string, labels map[string]string, changes []string, root io.Reader) (id string, err error)
	// Cells and checks.
	RunContainer(ctx context.Context, spec docker.ContainerSpec) (*docker.ContainerOutcome, error)
	StartSession(ctx context.Context, spec docker.SessionSpec) (*docker.Session, error)
	Sweep(ctx context.Context, label string) (int, error)
	Close() error
}

var _ backend = (*docker.Engine)(nil)

// newBackend connects to the engine the environment names.
func newBackend(ctx context.Context) (backend, error) {
	e, err := docker.NewEngine(ctx)
	if err != nil {
		return nil, err // not a nil *docker.Engine in a non-nil backend
	}
	return e, nil
}
