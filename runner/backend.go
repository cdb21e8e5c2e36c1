package runner

import (
	"context"
	"io"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/kube"
)

// backend is what the runner asks of the engine that runs its cells: the
// images a cell starts from, the cell's container, the check sessions of
// its run: assertions, and the sweep of what a dead run left. Docker is
// one (package docker), Kubernetes the other (package kube).
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
	StartSession(ctx context.Context, spec docker.SessionSpec) (session, error)
	Sweep(ctx context.Context, label string) (int, error)
	Close() error
}

// session is a backend's check session: commands run in it one by one.
type session interface {
	CopyIn(ctx context.Context, tarStream io.Reader) error
	Exec(ctx context.Context, spec docker.ExecSpec) (*docker.ExecOutcome, error)
	Close() error
}

var (
	_ backend = dockerBackend{}
	_ backend = kubeBackend{}
)

// dockerBackend is the Docker engine as a backend.
type dockerBackend struct{ *docker.Engine }

func (d dockerBackend) StartSession(ctx context.Context, spec docker.SessionSpec) (session, error) {
	s, err := d.Engine.StartSession(ctx, spec)
	if err != nil {
		return nil, err // not a nil *docker.Session in a non-nil session
	}
	return s, nil
}

// kubeBackend is a Kubernetes cluster as a backend. Its Pods have a
// read-only root, so a session is told the folder its checks are given.
type kubeBackend struct{ *kube.Cluster }

func (k kubeBackend) StartSession(ctx context.Context, spec docker.SessionSpec) (session, error) {
	s, err := k.Cluster.StartSession(ctx, spec, checkDir)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// localEngine is the local Docker engine, for what is its work whatever
// backend runs the cells: it builds and names every image, and pushes them
// to a registry for clusters that pull.
func localEngine(ctx context.Context) (dockerBackend, error) {
	e, err := docker.NewEngine(ctx)
	if err != nil {
		return dockerBackend{}, err
	}
	return dockerBackend{e}, nil
}

// newBackend connects to the engine the options name: a Kubernetes cluster
// when they name one, else the Docker engine the environment names.
func newBackend(ctx context.Context, opts Options) (backend, error) {
	if opts.Kubernetes != nil {
		c, err := kube.Connect(ctx, *opts.Kubernetes)
		if err != nil {
			return nil, err
		}
		return kubeBackend{c}, nil
	}
	e, err := localEngine(ctx)
	if err != nil {
		return nil, err // not a backend holding no engine
	}
	return e, nil
}
