package grade

import (
	"fmt"
	"sort"
)

// ChangeDiff is one changed file of a rollout as a person or a judge reads it: a
// unified diff of its text, or a note saying why there is none.
type ChangeDiff struct {
	Path string
	// Kind is the change: added, modified, deleted, ...
	Kind string
	Diff string
	// Note stands for Diff when the content is not shown: binary, not a regular file,
	// or not collected.
	Note string
}

// Notes of a change shown without its content.
const (
	NoteNotRegular = "(not a regular file; content not shown)"
	NoteBinary     = "(binary file; content not shown)"
)

// ChangeDiffs are the world's changes in path order, each with its diff against the
// initial workspace, uncapped. A file a collection limit cut is an error unless
// cutAsNote, when it is a note saying why it was not collected. A final file larger
// than maxBytes (0: no bound) is not read: its note says so.
func ChangeDiffs(w World, cutAsNote bool, maxBytes int64) ([]ChangeDiff, error) {
	changes := append([]FileChange(nil), w.Changes...)
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	out := make([]ChangeDiff, 0, len(changes))
	for _, ch := range changes {
		d := ChangeDiff{Path: ch.Path, Kind: ch.Kind}
		if maxBytes > 0 && ch.Size > maxBytes {
			d.Note = fmt.Sprintf("(%d bytes: too large to show; the stored file holds it)", ch.Size)
			out = append(out, d)
			continue
		}
		before, hadBefore, err := readRegular(w.Initial, ch.Path)
		var after []byte
		hasAfter := false
		if err == nil && ch.Kind != "deleted" {
			after, hasAfter, err = readRegular(w.Read, ch.Path)
		}
		switch {
		case err != nil && cutAsNote && IsCut(err):
			d.Note = "(" + err.Error() + ")"
		case err != nil:
			return out, err
		case ch.Kind != "deleted" && !hasAfter:
			d.Note = NoteNotRegular
		case !isText(before) || !isText(after):
			d.Note = NoteBinary
		default:
			d.Diff = UnifiedDiff(ch.Path, string(before), string(after), hadBefore, hasAfter)
		}
		out = append(out, d)
	}
	return out, nil
}
