package docker

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/opencontainers/go-digest"

	"github.com/skillgate/skillgate/runner/backend"
)

// loadedConfig is the image configuration loadLayers writes: the base's, with its layers,
// one more, and the labels added.
type loadedConfig struct {
	Architecture string          `json:"architecture"`
	OS           string          `json:"os"`
	Variant      string          `json:"variant,omitempty"`
	Created      string          `json:"created"`
	Config       json.RawMessage `json:"config"`
	RootFS       struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
	History []loadedHistory `json:"history"`
}

type loadedHistory struct {
	Created   string `json:"created"`
	CreatedBy string `json:"created_by"`
}

// BuildImages builds images in order, each tagged, labelled and built as BuildImage
// builds it, and returns their IDs. A context may be FROM an earlier image of builds,
// named by its tag. When every context only adds a layer on an image, in the engine or
// earlier in builds, they are all loaded in one archive (loadLayers): the engine unpacks
// an archive with a process of its own, so one archive for a case's fixture image and
// every arm's image above it costs that once rather than once per image, and the
// fixture's layer is written once. Otherwise each is built by BuildImage in turn.
func (e *Engine) BuildImages(ctx context.Context, builds []ImageBuild) ([]string, error) {
	bases := make([]string, len(builds))
	for i, b := range builds {
		base, ok := "", false
		if err := b.Context.Check(); err == nil {
			base, ok = backend.LayerBase(b.Context)
		}
		if !ok {
			ids := make([]string, len(builds))
			for i, b := range builds {
				id, err := e.BuildImage(ctx, b.Tag, b.Labels, b.Context)
				if err != nil {
					return nil, err
				}
				ids[i] = id
			}
			return ids, nil
		}
		bases[i] = base
	}
	return e.loadLayers(ctx, builds, bases)
}

// layerParent is the image below an image loadLayers makes, as the engine's inspect
// gives it (ID, platform, configuration, layers), so that an image gets one ID whether
// its parent was in the engine or loaded with it; layers are the names of its layers in
// the archive.
type layerParent struct {
	img       image.InspectResponse
	layers    []string
	inArchive bool
}

// loadLayers makes the images of builds, each of its context's entries on bases[i]
// (an image in the engine, or the tag of an earlier build), by loading them, the way
// "docker load" reads saved images, instead of building them: the archive holds each
// new layer alone, once (the engine has the bases', found by their chain), so no
// container is created or committed, and an image's cost is its own layer's. Each
// configuration is its parent's, labels added, with a fixed creation time: equal layers
// on one base give one image ID. A base missing from the engine is ErrImageMissing.
func (e *Engine) loadLayers(ctx context.Context, builds []ImageBuild, bases []string) ([]string, error) {
	parents := map[string]*layerParent{} // by base, of the bases in the engine
	for i, base := range bases {
		if _, ok := parents[base]; ok || earlier(builds[:i], base) {
			continue
		}
		tag := builds[i].Tag
		img, err := e.c.ImageInspect(ctx, base)
		if err != nil {
			if client.IsErrNotFound(err) {
				return nil, fmt.Errorf("build image %s: %w: %s", tag, ErrImageMissing, base)
			}
			return nil, fmt.Errorf("build image %s: inspect %s: %w", tag, base, err)
		}
		if img.RootFS.Type != "layers" {
			img.RootFS.Layers = nil
		}
		p := &layerParent{img: img}
		for k := range img.RootFS.Layers {
			p.layers = append(p.layers, fmt.Sprintf("base-%d.tar", k))
		}
		parents[base] = p
	}
	epoch := layerEpoch.Format("2006-01-02T15:04:05Z")
	type entry struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	var manifest []entry
	describe := func(i int, layer, diffID string) ([]byte, error) {
		b, parent := builds[i], parents[bases[i]]
		pi := parent.img
		cfg := map[string]any{}
		all := map[string]string{}
		if pi.Config != nil {
			raw, err := json.Marshal(pi.Config)
			if err == nil {
				err = json.Unmarshal(raw, &cfg)
			}
			if err != nil {
				return nil, fmt.Errorf("read the configuration of %s: %w", bases[i], err)
			}
			maps.Copy(all, pi.Config.Labels)
		}
		maps.Copy(all, b.Labels)
		cfg["Labels"] = all
		rawCfg, err := json.Marshal(cfg)
		if err != nil {
			return nil, fmt.Errorf("describe image %s: %w", b.Tag, err)
		}
		c := loadedConfig{Architecture: pi.Architecture, OS: pi.Os, Variant: pi.Variant, Created: epoch, Config: rawCfg}
		c.RootFS.Type = "layers"
		c.RootFS.DiffIDs = append(slices.Clone(pi.RootFS.Layers), diffID)
		for k := range pi.RootFS.Layers {
			c.History = append(c.History, loadedHistory{Created: epoch, CreatedBy: fmt.Sprintf("layer %d of %s", k+1, pi.ID)})
		}
		c.History = append(c.History, loadedHistory{Created: epoch, CreatedBy: "ADD " + LayerTar + " /"})
		config, err := json.Marshal(c)
		if err != nil {
			return nil, fmt.Errorf("describe image %s: %w", b.Tag, err)
		}
		// A later build FROM this one's tag takes it as the engine's inspect would give
		// it: its ID is the digest of its configuration.
		self := &layerParent{layers: append(slices.Clone(parent.layers), layer), inArchive: true}
		inspect, err := json.Marshal(map[string]any{"Id": digest.FromBytes(config).String(), "Architecture": c.Architecture, "Os": c.OS,
			"Variant": c.Variant, "Config": json.RawMessage(rawCfg), "RootFS": map[string]any{"Type": "layers", "Layers": c.RootFS.DiffIDs}})
		if err == nil {
			err = json.Unmarshal(inspect, &self.img)
		}
		if err != nil {
			return nil, fmt.Errorf("describe image %s: %w", b.Tag, err)
		}
		parents[b.Tag] = self
		manifest = append(manifest, entry{Config: fmt.Sprintf("%d.json", i), RepoTags: []string{b.Tag}, Layers: self.layers})
		return config, nil
	}

	pr, pw := io.Pipe()
	defer pr.Close()
	writeErr := make(chan error, 1)
	go func() {
		err := writeLoadArchive(pw, builds, describe, func() ([]byte, error) { return json.Marshal(manifest) })
		pw.CloseWithError(err)
		writeErr <- err
	}()
	what := builds[0].Tag
	if len(builds) > 1 {
		what = fmt.Sprintf("%s and %d more", what, len(builds)-1)
	}
	resp, err := e.c.ImageLoad(ctx, pr, client.ImageLoadWithQuiet(true))
	if err != nil {
		pr.CloseWithError(err)
		if werr := <-writeErr; werr != nil {
			return nil, fmt.Errorf("build image %s: %w", what, werr)
		}
		return nil, fmt.Errorf("build image %s: %w", what, err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var m buildMessage
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("build image %s: read the load's output: %w", what, err)
		}
		msg := m.Error
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			msg = m.ErrorDetail.Message
		}
		if msg != "" {
			pr.CloseWithError(errors.New(msg))
			if werr := <-writeErr; werr != nil {
				return nil, fmt.Errorf("build image %s: %w", what, werr)
			}
			for base, p := range parents {
				if p.inArchive {
					continue
				}
				if _, ok, _ := e.ImageExists(ctx, base); !ok {
					return nil, fmt.Errorf("build image %s: %w: %s: %s", what, ErrImageMissing, base, msg)
				}
			}
			return nil, fmt.Errorf("build image %s: %s", what, msg)
		}
	}
	if werr := <-writeErr; werr != nil {
		return nil, fmt.Errorf("build image %s: %w", what, werr)
	}
	ids := make([]string, len(builds))
	for i, b := range builds {
		id, ok, err := e.ImageExists(ctx, b.Tag)
		if err != nil {
			return nil, fmt.Errorf("build image %s: %w", b.Tag, err)
		}
		if !ok {
			return nil, fmt.Errorf("build image %s: the engine loaded no image", b.Tag)
		}
		ids[i] = id
	}
	return ids, nil
}

// earlier reports whether ref is the tag of one of builds.
func earlier(builds []ImageBuild, ref string) bool {
	return slices.ContainsFunc(builds, func(b ImageBuild) bool { return b.Tag == ref })
}

// writeLoadArchive writes the archive "docker load" reads: the layer of each build's
// entries as N/layer.tar and its configuration, which describe returns for its diff ID
// (the sha256 of the layer's bytes, known once they are written), as N.json, then the
// manifest of them all. An entry whose bytes differ from the plan's fails the write, so
// the engine loads nothing.
func writeLoadArchive(w io.Writer, builds []ImageBuild, describe func(i int, layer, diffID string) (config []byte, err error), manifest func() ([]byte, error)) error {
	outer := tar.NewWriter(w)
	file := func(name string, data []byte) error {
		if err := outer.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: layerEpoch}); err != nil {
			return err
		}
		_, err := outer.Write(data)
		return err
	}
	for i, b := range builds {
		bc := b.Context
		if err := bc.Check(); err != nil {
			return err
		}
		size, err := bc.LayerSize()
		if err != nil {
			return err
		}
		layer := fmt.Sprintf("%d/layer.tar", i)
		if err := outer.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: layer, Mode: 0o644, Size: size, ModTime: layerEpoch}); err != nil {
			return err
		}
		h := sha256.New()
		if err := bc.WriteEntries(io.MultiWriter(outer, h)); err != nil {
			return err
		}
		config, err := describe(i, layer, "sha256:"+hex.EncodeToString(h.Sum(nil)))
		if err != nil {
			return err
		}
		if err := file(fmt.Sprintf("%d.json", i), config); err != nil {
			return err
		}
	}
	m, err := manifest()
	if err != nil {
		return err
	}
	if err := file("manifest.json", m); err != nil {
		return err
	}
	return outer.Close()
}
