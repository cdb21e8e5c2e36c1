package images

import (
	"io"
	"maps"

	"github.com/opencontainers/go-digest"
)

// SetLog sets where the builds' notes go (the run's live progress, which
// keeps them above its line).
func (im *Images) SetLog(w io.Writer) {
	im.mu.Lock()
	defer im.mu.Unlock()
	im.log = w
}

// FixtureRefs are the tags of the fixture images looked up or built so far.
func (im *Images) FixtureRefs() []string {
	im.mu.Lock()
	defer im.mu.Unlock()
	refs := make([]string, 0, len(im.fixtures))
	for _, b := range im.fixtures {
		refs = append(refs, b.ref)
	}
	return refs
}

// Unclaimed are the IDs of the cell images built with their case's fixture
// image whose cells have not asked for them yet, by cell key.
func (im *Images) Unclaimed() map[digest.Digest]string {
	im.mu.Lock()
	defer im.mu.Unlock()
	return maps.Clone(im.made)
}
