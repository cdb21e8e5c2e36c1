package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/skillgate/skillgate/runner/backend"
)

// ImageExists reports whether ref (a tag or an ID) names an image, and its ID.
func (e *Engine) ImageExists(ctx context.Context, ref string) (id string, ok bool, err error) {
	img, err := e.c.ImageInspect(ctx, ref)
	if err != nil {
		if client.IsErrNotFound(err) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	return img.ID, true, nil
}

// ImageLabels returns an image's ID and labels; ok is false when the engine lacks it.
func (e *Engine) ImageLabels(ctx context.Context, ref string) (id string, labels map[string]string, ok bool, err error) {
	img, err := e.c.ImageInspect(ctx, ref)
	if err != nil {
		if client.IsErrNotFound(err) {
			return "", nil, false, nil
		}
		return "", nil, false, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	labels = map[string]string{}
	if img.Config != nil && img.Config.Labels != nil {
		labels = img.Config.Labels
	}
	return img.ID, labels, true, nil
}

// buildMessage is one message of the engine's JSON build stream.
type buildMessage struct {
	Stream      string `json:"stream"`
	Error       string `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
	Aux json.RawMessage `json:"aux"`
}

// BuildImage builds bc with networking off, tags the image tag, labels it, and returns its
// ID. It builds unconditionally: the caller asks ImageExists first. A context that only
// unpacks its entries on a base image is loaded as one layer on it (loadLayers), with no
// build step; a base missing then is ErrImageMissing.
func (e *Engine) BuildImage(ctx context.Context, tag string, labels map[string]string, bc *BuildContext) (id string, err error) {
	if err := bc.Check(); err != nil {
		return "", fmt.Errorf("build image %s: %w", tag, err)
	}
	if base, ok := backend.LayerBase(bc); ok {
		ids, err := e.loadLayers(ctx, []ImageBuild{{Tag: tag, Labels: labels, Context: bc}}, []string{base})
		if err != nil {
			return "", err
		}
		return ids[0], nil
	}
	pr, pw := io.Pipe()
	defer pr.Close()
	writeErr := make(chan error, 1)
	go func() {
		_, err := bc.WriteTo(pw)
		pw.CloseWithError(err)
		writeErr <- err
	}()
	resp, err := e.c.ImageBuild(ctx, pr, build.ImageBuildOptions{
		Tags:        []string{tag},
		Labels:      labels,
		NetworkMode: "none",
		Remove:      true,
		ForceRemove: true,
		Dockerfile:  "Dockerfile",
		BuildArgs:   bc.BuildArgs(),
		Version:     build.BuilderV1,
	})
	if err != nil {
		pr.CloseWithError(err)
		if werr := <-writeErr; werr != nil {
			return "", fmt.Errorf("build image %s: %w", tag, werr)
		}
		return "", fmt.Errorf("build image %s: %w", tag, err)
	}
	defer resp.Body.Close()

	var tail []string  // the last lines of build output, to explain a failure
	var steps []string // images the steps made, to remove when the build fails
	fromStep := false
	dec := json.NewDecoder(resp.Body)
	for {
		var m buildMessage
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return "", fmt.Errorf("build image %s: read build output: %w", tag, err)
		}
		if m.Stream != "" {
			for _, l := range strings.Split(strings.TrimRight(m.Stream, "\n"), "\n") {
				if strings.TrimSpace(l) == "" {
					continue
				}
				tail = append(tail, l)
				if strings.HasPrefix(l, "Step ") {
					fromStep = strings.Contains(strings.ToUpper(l), " : FROM ")
				} else if sid, ok := strings.CutPrefix(l, " ---> "); ok && isHex(sid) {
					// The FROM step names its base image, which is not ours to remove.
					if !fromStep {
						steps = append(steps, sid)
					}
				}
			}
			if len(tail) > 10 {
				tail = tail[len(tail)-10:]
			}
		}
		msg := m.Error
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			msg = m.ErrorDetail.Message
		}
		if msg != "" {
			if werr := <-writeErr; werr != nil {
				return "", fmt.Errorf("build image %s: %w", tag, werr)
			}
			e.removeDangling(steps)
			if len(tail) > 0 {
				msg += "\n" + strings.Join(tail, "\n")
			}
			return "", fmt.Errorf("build image %s: %s", tag, msg)
		}
		if len(m.Aux) > 0 {
			var aux struct{ ID string }
			if json.Unmarshal(m.Aux, &aux) == nil && aux.ID != "" {
				id = aux.ID
			}
		}
	}
	if werr := <-writeErr; werr != nil {
		return "", fmt.Errorf("build image %s: %w", tag, werr)
	}
	if id == "" {
		got, ok, err := e.ImageExists(ctx, tag)
		if err != nil {
			return "", fmt.Errorf("build image %s: %w", tag, err)
		}
		if !ok {
			return "", fmt.Errorf("build image %s: the engine reported no image", tag)
		}
		id = got
	}
	return id, nil
}

// removeDangling removes the images that the steps of a failed build left: untagged, and
// without the build's labels, which the classic builder adds only as its last step. It
// never forces: an image that another image or a container uses stays.
func (e *Engine) removeDangling(ids []string) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	for i := len(ids) - 1; i >= 0; i-- {
		img, err := e.c.ImageInspect(ctx, ids[i])
		if err != nil || len(img.RepoTags) > 0 {
			continue
		}
		e.c.ImageRemove(ctx, img.ID, image.RemoveOptions{PruneChildren: true})
	}
}

func isHex(s string) bool {
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return len(s) >= 12
}

// Tag gives the image source the name target as well.
func (e *Engine) Tag(ctx context.Context, source, target string) error {
	if err := e.c.ImageTag(ctx, source, target); err != nil {
		return fmt.Errorf("tag image %s: %w", target, err)
	}
	return nil
}

// RemoveImages removes, with force, every image carrying label (a key, or key=value), and
// returns how many it removed. Images built from other ones inherit their labels, so
// children are removed first.
func (e *Engine) RemoveImages(ctx context.Context, label string) (int, error) {
	imgs, err := e.c.ImageList(ctx, image.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label))})
	if err != nil {
		return 0, fmt.Errorf("list images: %w", err)
	}
	sort.Slice(imgs, func(i, j int) bool { return imgs[i].Created > imgs[j].Created })
	n := 0
	var failed []error
	// A parent created in the same second as its child may come first: a second pass
	// removes what the first could not.
	for pass := 0; pass < 2 && len(imgs) > 0; pass++ {
		var left []image.Summary
		failed = failed[:0]
		for _, img := range imgs {
			_, err := e.c.ImageRemove(ctx, img.ID, image.RemoveOptions{Force: true, PruneChildren: true})
			switch {
			case err == nil:
				n++
			case client.IsErrNotFound(err):
			default:
				left = append(left, img)
				failed = append(failed, fmt.Errorf("remove image %s: %w", shortID(img.ID), err))
			}
		}
		imgs = left
	}
	return n, errors.Join(failed...)
}
