package docker

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// Labels of an environment's images.
const (
	// LabelEnvKey is the digest of all an environment image was built from (a
	// Debian root's release, packages and mirror; a Dockerfile folder's tree and its
	// base image ID); an image found by its tag is reused only when it carries it.
	LabelEnvKey = "dev.skillgate.env-key"
	// LabelDebianRelease and LabelDebianPackages describe a Debian root.
	LabelDebianRelease  = "dev.skillgate.debian-release"
	LabelDebianPackages = "dev.skillgate.debian-packages"
	// LabelDebianMirror is the mirror a Debian root was bootstrapped from.
	LabelDebianMirror = "dev.skillgate.debian-mirror"
)

// ImageInfo is what skillgate reads of a local image.
type ImageInfo struct {
	ID string
	// RepoDigests are the repository digests it was pulled or pushed by
	// ("registry/name@sha256:...").
	RepoDigests []string
	Labels      map[string]string
	// Layers are its layers' diff IDs, the base's first, and Size the bytes of them all:
	// an image one layer above another (a cell image on its fixture image) stores the
	// difference of their sizes.
	Layers []string
	Size   int64
}

// ImageInfo inspects ref (a tag, digest reference or ID); ok is false when the engine
// lacks it. Nothing is pulled.
func (e *Engine) ImageInfo(ctx context.Context, ref string) (ImageInfo, bool, error) {
	img, err := e.c.ImageInspect(ctx, ref)
	if err != nil {
		if client.IsErrNotFound(err) {
			return ImageInfo{}, false, nil
		}
		return ImageInfo{}, false, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	info := ImageInfo{ID: img.ID, RepoDigests: img.RepoDigests, Labels: map[string]string{}, Layers: img.RootFS.Layers, Size: img.Size}
	if img.Config != nil && img.Config.Labels != nil {
		info.Labels = img.Config.Labels
	}
	return info, true, nil
}

// ImportImage makes an image of a root file system streamed as a tar (docker import),
// tags it tag, and returns its ID. changes are Dockerfile instructions applied to its
// configuration (ENV, USER, WORKDIR, CMD); labels become LABEL instructions.
func (e *Engine) ImportImage(ctx context.Context, tag string, labels map[string]string, changes []string, root io.Reader) (string, error) {
	all := append([]string{}, changes...)
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		all = append(all, fmt.Sprintf("LABEL %q=%q", k, labels[k]))
	}
	rc, err := e.c.ImageImport(ctx, image.ImportSource{Source: root, SourceName: "-"}, tag, image.ImportOptions{Changes: all, Message: "skillgate"})
	if err != nil {
		return "", fmt.Errorf("import image %s: %w", tag, err)
	}
	defer rc.Close()
	if err := readJSONStream(rc); err != nil {
		return "", fmt.Errorf("import image %s: %w", tag, err)
	}
	info, ok, err := e.ImageInfo(ctx, tag)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("import image %s: the engine reported no image", tag)
	}
	return info.ID, nil
}

// readJSONStream reads an engine's JSON message stream to its end and returns the first
// error it carries.
func readJSONStream(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var m buildMessage
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		msg := m.Error
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			msg = m.ErrorDetail.Message
		}
		if msg != "" {
			return fmt.Errorf("%s", msg)
		}
	}
}

// NewTreeContext is a build context made of a tree's files (a Dockerfile folder the plan
// digested, from its snapshot in the store) at the context's root, each verified against
// its digest while it streams; the folder's own Dockerfile builds it.
func NewTreeContext(dir string, files map[string]TreeFile) (*BuildContext, error) {
	b := &BuildContext{entries: map[string]*layerEntry{}, tree: true}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, rel := range paths {
		if _, err := ImagePath(rel); err != nil {
			return nil, fmt.Errorf("build context %s: %s: %w", dir, rel, err)
		}
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			if _, ok := b.entries[d]; ok {
				break
			}
			b.AddDir(d, 0o755, 0, 0)
		}
	}
	if err := b.addTreeFiles("", dir, files, 0, 0); err != nil {
		return nil, err
	}
	if _, ok := files["Dockerfile"]; !ok {
		return nil, fmt.Errorf("build context %s: no Dockerfile", dir)
	}
	return b, nil
}

// SetBuildArg sets a build argument (ARG NAME in the Dockerfile).
func (b *BuildContext) SetBuildArg(name, value string) {
	if b.args == nil {
		b.args = map[string]*string{}
	}
	b.args[name] = &value
}

// writeTree writes a tree context: its entries at the root of the context.
func (b *BuildContext) writeTree(tw *tar.Writer) error {
	for _, e := range b.sorted() {
		if strings.HasSuffix(e.hdr.Name, "/") && e.hdr.Typeflag != tar.TypeDir {
			continue
		}
		if err := writeEntry(tw, e); err != nil {
			return err
		}
	}
	return nil
}
