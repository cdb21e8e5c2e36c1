package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

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
