package backend

import (
	"context"
	"io"
)

// Backend is what the runner asks of the engine that runs its cells: the
// images a cell starts from, the cell's container, the check sessions of
// its run: assertions, and the sweep of what a dead run left. Docker is
// one (package runner/docker), Kubernetes the other (package runner/kube).
type Backend interface {
	// Images.
	EnsureSandbox(ctx context.Context) (ref string, err error)
	ImageExists(ctx context.Context, ref string) (id string, ok bool, err error)
	ImageLabels(ctx context.Context, ref string) (id string, labels map[string]string, ok bool, err error)
	BuildImage(ctx context.Context, tag string, labels map[string]string, bc *BuildContext) (id string, err error)
	Tag(ctx context.Context, source, target string) error
	// ImageInfo and ImportImage serve environments: an image pinned by digest, a root
	// file system (skillgate's Debian userland) made an image.
	ImageInfo(ctx context.Context, ref string) (ImageInfo, bool, error)
	ImportImage(ctx context.Context, tag string, labels map[string]string, changes []string, root io.Reader) (id string, err error)
	// Cells and checks.
	RunContainer(ctx context.Context, spec ContainerSpec) (*ContainerOutcome, error)
	StartSession(ctx context.Context, spec SessionSpec) (Session, error)
	Sweep(ctx context.Context, label string) (int, error)
	Close() error
}

// Session is a backend's check session: commands run in it one by one.
type Session interface {
	CopyIn(ctx context.Context, tarStream io.Reader) error
	Exec(ctx context.Context, spec ExecSpec) (*ExecOutcome, error)
	Close() error
}

// LocalEngine is the engine of skillgate's own machine that builds and
// names every image, whatever backend runs the cells: a backend whose cells
// run elsewhere (runner/kube) asks it for the images it does not stream,
// and for the reference by digest a push to a registry recorded.
type LocalEngine interface {
	EnsureSandbox(ctx context.Context) (ref string, err error)
	ImageExists(ctx context.Context, ref string) (id string, ok bool, err error)
	ImageLabels(ctx context.Context, ref string) (id string, labels map[string]string, ok bool, err error)
	BuildImage(ctx context.Context, tag string, labels map[string]string, bc *BuildContext) (id string, err error)
	Tag(ctx context.Context, source, target string) error
	ImageInfo(ctx context.Context, ref string) (ImageInfo, bool, error)
	ImportImage(ctx context.Context, tag string, labels map[string]string, changes []string, root io.Reader) (id string, err error)
	PushedRef(ctx context.Context, local, registryRef string) (p PushedImage, ok bool, err error)
	Close() error
}
