package backend

import (
	"archive/tar"
	"fmt"
	"path"
	"sort"
	"strings"
)

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

// LayerBase is the base image of a Dockerfile that only unpacks the context's entries on
// an image ("FROM base" then "ADD " + LayerTar + " /"): such an image is its base's layers
// and one more, which the engine can load without a build. Every folder leading to an
// entry must be an entry too: a layer lacking one would make it anew, owned by root,
// hiding the base's, where ADD keeps the base's folder as it is; such a context is built.
func LayerBase(bc *BuildContext) (string, bool) {
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
