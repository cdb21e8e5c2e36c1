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
	"path"
	"strings"

	"github.com/docker/docker/client"
)

// layerBase is the base image of a Dockerfile that only unpacks the context's entries on
// an image ("FROM base" then "ADD " + LayerTar + " /"): such an image is its base's layers
// and one more, which the engine can load without a build. Every folder leading to an
// entry must be an entry too: a layer lacking one would make it anew, owned by root,
// hiding the base's, where ADD keeps the base's folder as it is; such a context is built.
func layerBase(bc *BuildContext) (string, bool) {
	if bc.tree || len(bc.args) > 0 || len(bc.entries) == 0 {
		return "", false
	}
	for name := range bc.entries {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			if e, ok := bc.entries[d]; !ok || e.hdr.Typeflag != tar.TypeDir {
				return "", false
			}
		}
	}
	lines := strings.Split(strings.TrimSpace(bc.dockerfile), "\n")
	if len(lines) != 2 || lines[1] != "ADD "+LayerTar+" /" {
		return "", false
	}
	base, ok := strings.CutPrefix(lines[0], "FROM ")
	return base, ok && base != "scratch" && base != "" && !strings.ContainsAny(base, " \t")
}

// loadedConfig is the image configuration loadLayer writes: the base's, with its layers,
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

// loadLayer makes the image of bc's entries on base by loading it, the way "docker load"
// reads a saved image, instead of building it: the archive holds the new layer alone (the
// engine has the base's, found by their chain), so no container is created or committed,
// the layer's bytes are written once, and an image's cost is its own layer's. Its
// configuration is the base's, labels added, with a fixed creation time: equal layers on
// one base give one image ID. A base missing from the engine is ErrImageMissing.
func (e *Engine) loadLayer(ctx context.Context, tag, base string, labels map[string]string, bc *BuildContext) (string, error) {
	parent, err := e.c.ImageInspect(ctx, base)
	if err != nil {
		if client.IsErrNotFound(err) {
			return "", fmt.Errorf("build image %s: %w: %s", tag, ErrImageMissing, base)
		}
		return "", fmt.Errorf("build image %s: inspect %s: %w", tag, base, err)
	}
	cfg := map[string]any{}
	if parent.Config != nil {
		b, err := json.Marshal(parent.Config)
		if err == nil {
			err = json.Unmarshal(b, &cfg)
		}
		if err != nil {
			return "", fmt.Errorf("build image %s: read the configuration of %s: %w", tag, base, err)
		}
	}
	all := map[string]string{}
	if parent.Config != nil {
		maps.Copy(all, parent.Config.Labels)
	}
	maps.Copy(all, labels)
	cfg["Labels"] = all
	rawCfg, err := json.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("build image %s: %w", tag, err)
	}
	var diffIDs []string
	if parent.RootFS.Type == "layers" {
		diffIDs = parent.RootFS.Layers
	}
	epoch := layerEpoch.Format("2006-01-02T15:04:05Z")

	pr, pw := io.Pipe()
	defer pr.Close()
	writeErr := make(chan error, 1)
	go func() {
		err := writeLoadArchive(pw, bc, func(diffID string) ([]byte, []byte, error) {
			c := loadedConfig{Architecture: parent.Architecture, OS: parent.Os, Variant: parent.Variant, Created: epoch, Config: rawCfg}
			c.RootFS.Type = "layers"
			c.RootFS.DiffIDs = append(append([]string{}, diffIDs...), diffID)
			for i := range diffIDs {
				c.History = append(c.History, loadedHistory{Created: epoch, CreatedBy: fmt.Sprintf("layer %d of %s", i+1, parent.ID)})
			}
			c.History = append(c.History, loadedHistory{Created: epoch, CreatedBy: "ADD " + LayerTar + " /"})
			config, err := json.Marshal(c)
			if err != nil {
				return nil, nil, err
			}
			layers := make([]string, len(c.RootFS.DiffIDs))
			for i := range layers {
				layers[i] = fmt.Sprintf("layer-%d.tar", i)
			}
			// The base's layers are found by their chain, never read: only the last is
			// in the archive.
			layers[len(layers)-1] = "layer.tar"
			manifest, err := json.Marshal([]map[string]any{{"Config": "config.json", "RepoTags": []string{tag}, "Layers": layers}})
			return config, manifest, err
		})
		pw.CloseWithError(err)
		writeErr <- err
	}()
	resp, err := e.c.ImageLoad(ctx, pr, client.ImageLoadWithQuiet(true))
	if err != nil {
		pr.CloseWithError(err)
		if werr := <-writeErr; werr != nil {
			return "", fmt.Errorf("build image %s: %w", tag, werr)
		}
		return "", fmt.Errorf("build image %s: %w", tag, err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var m buildMessage
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return "", fmt.Errorf("build image %s: read the load's output: %w", tag, err)
		}
		msg := m.Error
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			msg = m.ErrorDetail.Message
		}
		if msg != "" {
			pr.CloseWithError(errors.New(msg))
			if werr := <-writeErr; werr != nil {
				return "", fmt.Errorf("build image %s: %w", tag, werr)
			}
			if _, ok, _ := e.ImageExists(ctx, base); !ok {
				return "", fmt.Errorf("build image %s: %w: %s: %s", tag, ErrImageMissing, base, msg)
			}
			return "", fmt.Errorf("build image %s: %s", tag, msg)
		}
	}
	if werr := <-writeErr; werr != nil {
		return "", fmt.Errorf("build image %s: %w", tag, werr)
	}
	id, ok, err := e.ImageExists(ctx, tag)
	if err != nil {
		return "", fmt.Errorf("build image %s: %w", tag, err)
	}
	if !ok {
		return "", fmt.Errorf("build image %s: the engine loaded no image", tag)
	}
	return id, nil
}

// writeLoadArchive writes the archive "docker load" reads: the layer of bc's entries as
// layer.tar, then the configuration and manifest that describe returns for its diff ID
// (the sha256 of the layer's bytes, known once they are written). An entry whose bytes
// differ from the plan's fails the write, so the engine loads nothing.
func writeLoadArchive(w io.Writer, bc *BuildContext, describe func(diffID string) (config, manifest []byte, err error)) error {
	if err := bc.check(); err != nil {
		return err
	}
	entries := bc.sorted()
	size, err := layerSize(entries)
	if err != nil {
		return err
	}
	outer := tar.NewWriter(w)
	if err := outer.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "layer.tar", Mode: 0o644, Size: size, ModTime: layerEpoch}); err != nil {
		return err
	}
	h := sha256.New()
	inner := tar.NewWriter(io.MultiWriter(outer, h))
	for _, e := range entries {
		if err := writeEntry(inner, e); err != nil {
			return err
		}
	}
	if err := inner.Close(); err != nil {
		return err
	}
	config, manifest, err := describe("sha256:" + hex.EncodeToString(h.Sum(nil)))
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{"config.json", config}, {"manifest.json", manifest}} {
		if err := outer.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: 0o644, Size: int64(len(f.data)), ModTime: layerEpoch}); err != nil {
			return err
		}
		if _, err := outer.Write(f.data); err != nil {
			return err
		}
	}
	return outer.Close()
}
