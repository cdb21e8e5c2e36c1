package runner

import (
	"context"

	"github.com/skillgate/skillgate/runner/checks"

	"github.com/skillgate/skillgate/runner/backend"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/kube"
)

var (
	_ backend.Backend = dockerBackend{}
	_ backend.Backend = kubeBackend{}
)

// dockerBackend is the Docker engine as a backend.
type dockerBackend struct{ *docker.Engine }

func (d dockerBackend) StartSession(ctx context.Context, spec backend.SessionSpec) (backend.Session, error) {
	s, err := d.Engine.StartSession(ctx, spec)
	if err != nil {
		return nil, err // not a nil *docker.Session in a non-nil session
	}
	return s, nil
}

// kubeBackend is a Kubernetes cluster as a backend. Its Pods have a
// read-only root, so a session is told the folder its checks are given.
type kubeBackend struct{ *kube.Cluster }

func (k kubeBackend) StartSession(ctx context.Context, spec backend.SessionSpec) (backend.Session, error) {
	s, err := k.Cluster.StartSession(ctx, spec, checks.CheckDir)
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

// localImages is the local engine as the Kubernetes backend builds and
// names its images with.
func localImages(ctx context.Context) (backend.LocalEngine, error) {
	e, err := localEngine(ctx)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// newBackend connects to the engine the options name: a Kubernetes cluster
// when they name one, else the Docker engine the environment names.
func newBackend(ctx context.Context, opts Options) (backend.Backend, error) {
	if opts.Kubernetes != nil {
		c, err := kube.Connect(ctx, *opts.Kubernetes, localImages)
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
