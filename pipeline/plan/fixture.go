package plan

import (
	"fmt"
	"path"

	"github.com/opencontainers/go-digest"
)

// FixtureLayer is one tree a case's workspace is laid from: its fixture,
// or the overlay copied over it.
type FixtureLayer struct {
	// What names the layer in the store and in errors: "fixture PATH",
	// PATH as the plan's Fixtures key it (an overlay is keyed like a
	// fixture).
	What string
	Key  string
	Tree Tree
}

// FixtureLayers are the trees of case pc's initial workspace in the order
// they are laid down: the fixture, then the overlay. A case without a
// fixture has none.
func (p *Plan) FixtureLayers(pc PlanCase) []FixtureLayer {
	var out []FixtureLayer
	for _, rel := range []string{pc.Fixture, pc.Overlay} {
		if rel == "" {
			continue
		}
		key := path.Clean(rel)
		out = append(out, FixtureLayer{What: "fixture " + key, Key: key, Tree: p.Fixtures[key]})
	}
	return out
}

// CaseTree is case pc's initial workspace as one tree: the fixture's
// files, each replaced or joined by the overlay's at the same path. Its
// digest is that of a folder holding exactly these files. A path that is a
// file in one layer and a folder in the other is an error.
func (p *Plan) CaseTree(pc PlanCase) (Tree, error) {
	layers := p.FixtureLayers(pc)
	switch len(layers) {
	case 0:
		return Tree{Files: map[string]TreeEntry{}}, nil
	case 1:
		return layers[0].Tree, nil
	}
	return MergeTrees(layers[0].Tree, layers[1].Tree)
}

// MergeTrees is base with over copied onto it.
func MergeTrees(base, over Tree) (Tree, error) {
	t := Tree{Files: make(map[string]TreeEntry, len(base.Files)+len(over.Files))}
	dirs := map[string]bool{} // the base's folders
	for p, e := range base.Files {
		t.Files[p] = e
		for d := path.Dir(p); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for p, e := range over.Files {
		// A file of one that is a folder of the other: copying cannot make it.
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if _, ok := base.Files[d]; ok {
				return Tree{}, fmt.Errorf("merge overlay: %s is a file in the fixture and a folder in the overlay", d)
			}
		}
		if dirs[p] {
			return Tree{}, fmt.Errorf("merge overlay: %s is a folder in the fixture and a file in the overlay", p)
		}
		t.Files[p] = e
	}
	for _, e := range t.Files {
		t.Bytes += e.Size
	}
	t.Digest = t.digest()
	return t, nil
}

// WorkspaceDigest is what a cell's workspace starts from: the fixture's
// digest, joined by the overlay's when the case has one, so a case without
// an overlay keys its cell images as before.
func WorkspaceDigest(pc PlanCase) digest.Digest {
	if pc.OverlayDigest == "" {
		return pc.FixtureDigest
	}
	return DigestJSON([]digest.Digest{pc.FixtureDigest, pc.OverlayDigest})
}
