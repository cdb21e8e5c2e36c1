package suite

import (
	"path/filepath"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	cueerrors "cuelang.org/go/cue/errors"

	"github.com/skillgate/skillgate/pipeline/formats"
)

// pathFormats is the suite field holding other systems' inputs.
var pathFormats = cue.ParsePath("formats")

// readFormats fills formats.FIELD.read of every format the suite uses whose
// files CUE cannot read, so the format's CUE package turns them into cases
// when the suite is validated. A reader's problems come back as CUE errors
// at positions in the user's files.
func readFormats(v cue.Value, dir string) (cue.Value, cueerrors.Error) {
	fv := v.LookupPath(pathFormats)
	if !fv.Exists() {
		return v, nil
	}
	it, err := fv.Fields()
	if err != nil {
		return v, nil // validation reports it
	}
	var errs cueerrors.Error
	for it.Next() {
		field := it.Selector().Unquoted()
		f, ok := formats.ByField(field)
		if !ok || f.Read == nil {
			continue
		}
		data, err := f.Read(dir, it.Value())
		if err != nil {
			errs = cueerrors.Append(errs, cueerrors.Promote(err, "read "+f.Name+" files"))
			if data == nil {
				continue
			}
			// A reader that says what it could not read and returns the
			// rest, stand-ins in place, spares every case that reads those
			// values a follow-on error.
		}
		read := cue.MakePath(cue.Str("formats"), cue.Str(field), cue.Str("read"))
		v = v.FillPath(read, v.Context().BuildExpr(data))
	}
	if errs != nil {
		return v, errs
	}
	return v, nil
}

// caseSources lists the files other than CUE files, relative to dir, that a
// case's values come from: the user's files in another system's format
// (read by CUE's @embed or by a format's reader), so a plan diff can name
// the file a changed case was edited in. A case decoded by lookup gathers
// them as it is read (decodeCase); this walk is for the others.
func caseSources(v cue.Value, dir string) []string {
	src := newSourceSet(dir)
	src.walk(v)
	return src.list()
}

// A sourceSet gathers the files, other than CUE files, that values come
// from, relative to dir. A nil set gathers nothing.
type sourceSet struct {
	dir  string
	seen map[string]bool
}

func newSourceSet(dir string) *sourceSet {
	return &sourceSet{dir: dir, seen: map[string]bool{}}
}

// walk adds the files of every scalar in x.
func (s *sourceSet) walk(x cue.Value) {
	if s == nil {
		return
	}
	switch x.IncompleteKind() {
	case cue.StructKind:
		it, err := x.Fields()
		if err != nil {
			return
		}
		for it.Next() {
			s.walk(it.Value())
		}
		return
	case cue.ListKind:
		it, err := x.List()
		if err != nil {
			return
		}
		for it.Next() {
			s.walk(it.Value())
		}
		return
	}
	s.add(x)
}

// add adds the file of the scalar x.
func (s *sourceSet) add(x cue.Value) {
	if s == nil {
		return
	}
	name := x.Pos().Filename()
	if name == "" || strings.HasSuffix(name, ".cue") {
		return
	}
	if filepath.IsAbs(name) {
		if rel, err := filepath.Rel(s.dir, name); err == nil {
			name = rel
		}
	}
	s.seen[filepath.ToSlash(name)] = true
}

// list is the files gathered, sorted; nil for none.
func (s *sourceSet) list() []string {
	if s == nil || len(s.seen) == 0 {
		return nil
	}
	out := make([]string, 0, len(s.seen))
	for k := range s.seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
