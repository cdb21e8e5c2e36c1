package kube

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/skillgate/skillgate/runner/backend"
)

// cellImage is a cell image as this backend keeps it: the image it is
// FROM, which the cluster has, and the build context whose entries every
// Pod started from it receives through the API.
type cellImage struct {
	tag, id string
	base    string
	// baseID is the base image's ID in the local Docker engine, which a
	// Pod's image must have when the cluster reports it.
	baseID string
	labels map[string]string
	// layers are unpacked in order: the cell's content, then what a
	// case's setup left, built on it.
	layers []*backend.BuildContext
}

// engine is the local Docker engine that builds and names images, connected
// on first use.
func (c *Cluster) engine(ctx context.Context) (backend.LocalEngine, error) {
	c.dockerOnce.Do(func() {
		c.docker, c.dockerErr = c.local(ctx)
		if c.dockerErr != nil {
			c.dockerErr = fmt.Errorf("the kubernetes backend builds and names images with a local Docker engine: %w", c.dockerErr)
		}
	})
	return c.docker, c.dockerErr
}

// cellFrom is the base image of a cell image's Dockerfile: "FROM base" and
// "ADD " + backend.LayerTar + " /", nothing else, is what this backend can
// stream instead of building.
func cellFrom(dockerfile string) (string, bool) {
	lines := strings.Split(strings.TrimSpace(dockerfile), "\n")
	if len(lines) != 2 || lines[1] != "ADD "+backend.LayerTar+" /" {
		return "", false
	}
	base, ok := strings.CutPrefix(lines[0], "FROM ")
	return base, ok && base != "scratch" && !strings.ContainsAny(base, " \t")
}

// EnsureSandbox builds skillgate's sandbox image in the local Docker engine
// when it lacks it; the cluster must have it too (see ImageMissingError).
func (c *Cluster) EnsureSandbox(ctx context.Context) (string, error) {
	e, err := c.engine(ctx)
	if err != nil {
		return "", err
	}
	return e.EnsureSandbox(ctx)
}

// ImageExists reports whether ref names a cell image of this backend or an
// image of the local Docker engine.
func (c *Cluster) ImageExists(ctx context.Context, ref string) (string, bool, error) {
	id, _, ok, err := c.ImageLabels(ctx, ref)
	return id, ok, err
}

// ImageLabels returns a cell image's ID and labels, or those the local
// Docker engine has for ref.
func (c *Cluster) ImageLabels(ctx context.Context, ref string) (string, map[string]string, bool, error) {
	c.mu.Lock()
	ci, ok := c.cells[ref]
	c.mu.Unlock()
	if ok {
		return ci.id, maps.Clone(ci.labels), true, nil
	}
	if strings.HasPrefix(ref, backend.CellImageRepo+":") {
		return "", nil, false, nil
	}
	e, err := c.engine(ctx)
	if err != nil {
		return "", nil, false, err
	}
	return e.ImageLabels(ctx, ref)
}

// BuildImage keeps a cell image's context, to stream into its Pods, and
// has the local Docker engine build any other image (an agent's).
func (c *Cluster) BuildImage(ctx context.Context, tag string, labels map[string]string, bc *backend.BuildContext) (string, error) {
	df := dockerfileOf(bc)
	base, ok := cellFrom(df)
	if !ok {
		if from, _, _ := strings.Cut(strings.TrimPrefix(df, "FROM "), "\n"); c.isCell(from) {
			return "", fmt.Errorf("build image %s: the kubernetes backend streams a cell's content into its Pods and runs no build step on it (a setup that deletes paths of the fixture)", tag)
		}
		e, err := c.engine(ctx)
		if err != nil {
			return "", err
		}
		return e.BuildImage(ctx, tag, labels, bc)
	}
	// The digest reads every file and checks it against the plan, as a
	// build does; each Pod's stream checks it again.
	d, err := bc.Digest()
	if err != nil {
		return "", fmt.Errorf("build image %s: %w", tag, err)
	}
	ci := &cellImage{tag: tag, id: d.String(), base: base, labels: maps.Clone(labels), layers: []*backend.BuildContext{bc}}
	c.mu.Lock()
	parent, chained := c.cells[base]
	c.mu.Unlock()
	if chained {
		// On a cell image (a setup's changes): its base and layers first.
		ci.base, ci.baseID = parent.base, parent.baseID
		ci.layers = append(append([]*backend.BuildContext{}, parent.layers...), bc)
	} else if e, err := c.engine(ctx); err == nil {
		if id, ok, err := e.ImageExists(ctx, base); err == nil && ok {
			ci.baseID = id
		}
	}
	c.mu.Lock()
	c.cells[tag], c.cells[ci.id] = ci, ci
	c.mu.Unlock()
	return ci.id, nil
}

// ImageInfo inspects a cell image of this backend or an image of the local
// Docker engine (an environment's, pinned by digest).
func (c *Cluster) ImageInfo(ctx context.Context, ref string) (backend.ImageInfo, bool, error) {
	c.mu.Lock()
	ci, ok := c.cells[ref]
	c.mu.Unlock()
	if ok {
		return backend.ImageInfo{ID: ci.id, Labels: maps.Clone(ci.labels)}, true, nil
	}
	e, err := c.engine(ctx)
	if err != nil {
		return backend.ImageInfo{}, false, err
	}
	return e.ImageInfo(ctx, ref)
}

// ImportImage has the local Docker engine make an image of a root file
// system (an environment's userland); the cluster needs it loaded too.
func (c *Cluster) ImportImage(ctx context.Context, tag string, labels map[string]string, changes []string, root io.Reader) (string, error) {
	e, err := c.engine(ctx)
	if err != nil {
		return "", err
	}
	return e.ImportImage(ctx, tag, labels, changes, root)
}

// Tag names an image again: a cell image in this backend, any other in the
// local Docker engine.
func (c *Cluster) Tag(ctx context.Context, source, target string) error {
	c.mu.Lock()
	ci, ok := c.cells[source]
	if ok {
		c.cells[target] = ci
	}
	c.mu.Unlock()
	if ok {
		return nil
	}
	e, err := c.engine(ctx)
	if err != nil {
		return err
	}
	return e.Tag(ctx, source, target)
}

// dockerfileOf reads back a build context's Dockerfile from its stream.
func dockerfileOf(bc *backend.BuildContext) string {
	pr, pw := io.Pipe()
	go func() {
		_, err := bc.WriteTo(pw)
		pw.CloseWithError(err)
	}()
	defer pr.Close()
	tr := tar.NewReader(pr)
	hdr, err := tr.Next()
	if err != nil || hdr.Name != "Dockerfile" {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(tr, 1<<16))
	return string(b)
}

// resolve is the image a Pod starts from and the cell content it receives:
// a cell image's base and context, or ref itself with no content.
func (c *Cluster) resolve(ref string) (base, baseID string, layers []*backend.BuildContext) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ci, ok := c.cells[ref]; ok {
		return ci.base, ci.baseID, ci.layers
	}
	return ref, "", nil
}

// isCell reports whether ref names a cell image of this backend.
func (c *Cluster) isCell(ref string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.cells[strings.TrimSpace(ref)]
	return ok
}

// podImage is what a Pod names for base, the image its cell starts from,
// and what its containers must then report having run. Without a registry
// that is base, loaded into the nodes, and the local engine's ID for it
// (baseID, when known). With one it is the reference by digest that
// skillgate image push recorded for the local engine's build of base, so
// the node pulls exactly that build, or an error naming the command when
// this build was not pushed.
func (c *Cluster) podImage(ctx context.Context, base, baseID string) (string, imageWant, error) {
	if c.registry == "" {
		return base, imageWant{id: baseID}, nil
	}
	e, err := c.engine(ctx)
	if err != nil {
		return "", imageWant{}, err
	}
	p, ok, err := e.PushedRef(ctx, base, c.registry)
	if err != nil {
		return "", imageWant{}, fmt.Errorf("find image %s in registry %s: %w", base, c.registry, err)
	}
	if !ok {
		return "", imageWant{}, fmt.Errorf("find image %s in registry %s: the local engine's build of it was not pushed there: run skillgate image push %s (with the run's suite, cases and arms) first", base, c.registry, c.registry)
	}
	if baseID != "" && p.ID != baseID {
		// Built again since the cell's image was made on it: the rollout
		// names the build the cell image holds.
		return "", imageWant{}, fmt.Errorf("find image %s in registry %s: the local engine's build of it is %s now, the cell's is %s: run again", base, c.registry, p.ID, baseID)
	}
	return p.Ref, imageWant{id: p.ID, ref: p.Ref}, nil
}

// imageWant is what a Pod's container must have run: the local engine's
// image ID, and with a registry the reference by digest it was pulled by.
type imageWant struct {
	id, ref string
}

// checkImageID fails when the cluster ran a Pod's container from another
// image than the local engine's of the same name (loaded before a rebuild):
// the cell would not run the image its rollout names. The runtime reports
// an image it has by a registry digest as that reference, which must be
// the pushed one when it names the same repository, and an image it has
// by no digest (loaded into the node) by its ID, which must be the local
// engine's.
func checkImageID(p *corev1.Pod, container string, init bool, want imageWant) error {
	if want.id == "" && want.ref == "" {
		return nil
	}
	sts := p.Status.ContainerStatuses
	if init {
		sts = p.Status.InitContainerStatuses
	}
	wantRepo, wantDigest, _ := strings.Cut(want.ref, "@")
	for _, s := range sts {
		if s.Name != container || s.ImageID == "" {
			continue
		}
		got := strings.TrimPrefix(s.ImageID, "docker-pullable://")
		if repo, dg, pinned := strings.Cut(got, "@"); pinned {
			if want.ref != "" && repo == wantRepo && dg != wantDigest {
				return fmt.Errorf("start pod %s: the cluster's image %s is %s, the pushed one is %s", p.Name, s.Image, got, want.ref)
			}
			continue
		}
		if want.id != "" && got != want.id {
			hint := fmt.Sprintf("load it again (.ci/kube-load %s)", s.Image)
			if want.ref != "" {
				hint = "push it again (skillgate image push)"
			}
			return fmt.Errorf("start pod %s: the cluster's image %s is %s, the local engine's is %s: %s", p.Name, s.Image, got, want.id, hint)
		}
	}
	return nil
}

// ImageMissingError says the cluster could not start a Pod's image: it was
// not loaded into the node and cannot be pulled.
type ImageMissingError struct {
	Image, Reason, Message string
	// Registry is the registry the image was to be pulled from, if any.
	Registry string
}

func (e *ImageMissingError) Error() string {
	if e.Registry != "" {
		return fmt.Sprintf("start pod: the cluster could not pull image %s (%s: %s): push it with skillgate image push %s, to a registry the nodes reach and may pull from",
			e.Image, e.Reason, e.Message, e.Registry)
	}
	return fmt.Sprintf("start pod: image %s is not in the cluster (%s: %s): load it into the nodes (.ci/kube-load %s for the local cluster) or push it to a registry they pull from (skillgate image push REGISTRY, then run --registry REGISTRY)",
		e.Image, e.Reason, e.Message, e.Image)
}

// layerEntries streams the entries of a build context's layer to fn, each
// with its content readable from the tar reader while fn runs; the stream
// checks every file of a plan's tree against its digest as it goes.
func layerEntries(bc *backend.BuildContext, fn func(*tar.Header, io.Reader) error) error {
	pr, pw := io.Pipe()
	go func() {
		_, err := bc.WriteTo(pw)
		pw.CloseWithError(err)
	}()
	defer pr.Close()
	outer := tar.NewReader(pr)
	for {
		hdr, err := outer.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if hdr.Name != backend.LayerTar {
			continue
		}
		tr := tar.NewReader(outer)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			if err := fn(h, tr); err != nil {
				return err
			}
		}
	}
}
