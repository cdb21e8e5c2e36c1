package suite

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
)

// Cases are decoded by looking up the fields their Go types declare, not by
// exporting them as JSON: every way CUE offers to list a struct's fields
// sorts them topologically first, which for a large suite costs more than
// evaluating it. Looking up leaves a field the schema declares and Go lacks
// unread, so the cases take this way only when mirrored says the schema's
// #Case declares no such field at any depth: the schema's definitions are
// closed, so a case holds no field its definition does not declare.
//
// Each lookup costs an evaluation context, and most of a case's fields are
// absent, so where the suite's files write a case as struct literals of
// plain fields (decodePredicted), a case's value has only the fields those
// literals set and the fields the schema always gives; of these, the ones
// the schema gives alike to every case are read once from the schema
// (shape.defaults), strings the literals write are read from them (CUE
// leaves a concrete string as it is), and only the rest are looked up.
// The type information of the Go mirror is kept for the process, as
// encoding/json keeps its own; nothing of a suite is.

// errNotDecoded stands for a value the lookup decoder cannot read as Go
// would read its JSON; the case is then decoded through JSON, whose error,
// if any, is the one the user sees.
var errNotDecoded = errors.New("not decoded by lookup")

// goField is one field of a Go struct as encoding/json names it.
type goField struct {
	name  string
	path  cue.Path
	index []int
	typ   reflect.Type
}

// goFields are the fields encoding/json decodes into a struct type, by
// name, embedded structs' fields promoted.
type goFields struct {
	list   []goField
	byName map[string]goField
}

var goFieldCache sync.Map // reflect.Type → *goFields

// verifyLookupDecode, set by the package's tests, has every case decoded
// by lookup decoded through JSON as well, and refused if the two differ.
var verifyLookupDecode bool

// errLookupDiffers is a case that decodes differently by lookup and
// through JSON, which only verifyLookupDecode looks for.
var errLookupDiffers = errors.New("decode case by lookup: differs from JSON")

// decodeCase decodes the case v by lookup: by its literals lits and the
// schema's shape of #Case sh where the suite's files give them, else every
// field Go declares. An error means it is to be decoded through JSON.
//
// With src, the files the case's values come from are gathered into it on
// the way (they are the positions of the values decodeLookup reads), so
// caseSources need not walk the case again; a case decoded by its literals
// gathers none, and its caller walks it.
func decodeCase(v cue.Value, lits []*ast.StructLit, sh *shape, src *sourceSet) (Case, error) {
	var c Case
	var err error
	if lits != nil && sh != nil {
		err = decodePredicted(&lazyValue{v: v, done: true}, reflect.ValueOf(&c).Elem(), lits, sh)
	} else {
		err = decodeLookup(v, reflect.ValueOf(&c).Elem(), src)
	}
	if err != nil || !verifyLookupDecode {
		return c, err
	}
	if src != nil && lits == nil {
		if got, want := src.list(), caseSources(v, src.dir); !slices.Equal(got, want) {
			return c, fmt.Errorf("%w: sources %q, walked %q", errLookupDiffers, got, want)
		}
	}
	b, err := v.MarshalJSON()
	if err != nil {
		return c, err
	}
	var want Case
	if err := decodeStrict(b, &want); err != nil {
		return c, err
	}
	if !reflect.DeepEqual(c, want) {
		got, _ := json.Marshal(c)
		wantb, _ := json.Marshal(want)
		return c, fmt.Errorf("%w: got %s, want %s", errLookupDiffers, got, wantb)
	}
	return c, nil
}

var (
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	caseType        = reflect.TypeFor[Case]()
)

// fieldsOf lists the JSON fields of the struct type t, as encoding/json
// would decode them: a tag's name or the Go name, `-` skipped, untagged
// embedded structs promoted.
func fieldsOf(t reflect.Type) *goFields {
	if f, ok := goFieldCache.Load(t); ok {
		return f.(*goFields)
	}
	fs := &goFields{byName: map[string]goField{}}
	var add func(t reflect.Type, index []int)
	add = func(t reflect.Type, index []int) {
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			idx := append(append([]int{}, index...), i)
			if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
				add(sf.Type, idx)
				continue
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			f := goField{name: name, path: cue.MakePath(cue.Str(name)), index: idx, typ: sf.Type}
			fs.list = append(fs.list, f)
			fs.byName[name] = f
		}
	}
	add(t, nil)
	got, _ := goFieldCache.LoadOrStore(t, fs)
	return got.(*goFields)
}

// mirrored reports whether the Go type t has a field for every field the
// schema value sv declares, at every depth, so that decodeLookup, which
// reads only the fields Go declares, drops nothing. It answers false
// whenever it cannot tell: an open struct, a pattern, a disjunction of
// structs.
func mirrored(sv cue.Value, t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return true // decoded through JSON
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Slice, reflect.Map:
	default:
		return true // a scalar or any: no field to drop
	}
	if op, args := sv.Eval().Expr(); op == cue.OrOp {
		for _, a := range args {
			if !mirrored(a, t) {
				return false
			}
		}
		return true
	}
	k := sv.IncompleteKind()
	if k == cue.NullKind {
		return true
	}
	switch t.Kind() {
	case reflect.Struct:
		if k != cue.StructKind || sv.Allows(cue.Str("\x00")) {
			return false
		}
		it, err := sv.Fields(cue.Optional(true), cue.Patterns(true))
		if err != nil {
			return false
		}
		fs := fieldsOf(t)
		for it.Next() {
			sel := it.Selector()
			if sel.LabelType() != cue.StringLabel || sel.ConstraintType() == cue.PatternConstraint {
				return false
			}
			f, ok := fs.byName[sel.Unquoted()]
			if !ok || !mirrored(it.Value(), f.typ) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if k != cue.ListKind {
			return false
		}
		elem := sv.LookupPath(cue.MakePath(cue.AnyIndex))
		return !elem.Exists() || mirrored(elem, t.Elem())
	default: // a map
		if k != cue.StructKind {
			return false
		}
		elem := sv.LookupPath(cue.MakePath(cue.AnyString))
		return !elem.Exists() || mirrored(elem, t.Elem())
	}
}

// decodeLookup decodes the concrete value v into rv as encoding/json would
// decode v's JSON, reading each field Go declares by its path. It returns
// errNotDecoded, or CUE's error, where it cannot. With src, it gathers the
// files of the values it reads: those of the scalars, as caseSources does.
func decodeLookup(v cue.Value, rv reflect.Value, src *sourceSet) error {
	t := rv.Type()
	byJSON := t.Kind() == reflect.Interface || t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8
	if byJSON || t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(unmarshalerType) {
		b, err := v.MarshalJSON()
		if err != nil {
			return err
		}
		src.walk(v)
		return json.Unmarshal(b, rv.Addr().Interface())
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Struct, reflect.Slice, reflect.Map:
		if v.Kind() == cue.NullKind {
			src.add(v)
		} // else its elements' files, read below
	default:
		src.add(v)
	}
	if v.Kind() == cue.NullKind {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map:
			rv.SetZero()
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		if err := decodeLookup(v, p.Elem(), src); err != nil {
			return err
		}
		rv.Set(p)
	case reflect.Struct:
		if v.IncompleteKind() != cue.StructKind {
			return errNotDecoded
		}
		for _, f := range fieldsOf(t).list {
			fv := v.LookupPath(f.path)
			if !fv.Exists() {
				continue
			}
			if err := decodeLookup(fv, rv.FieldByIndex(f.index), src); err != nil {
				return err
			}
		}
	case reflect.Slice:
		it, err := v.List()
		if err != nil {
			return errNotDecoded
		}
		s := reflect.MakeSlice(t, 0, 4)
		for i := 0; it.Next(); i++ {
			s = reflect.Append(s, reflect.Zero(t.Elem()))
			if err := decodeLookup(it.Value(), s.Index(i), src); err != nil {
				return err
			}
		}
		rv.Set(s)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return errNotDecoded
		}
		it, err := v.Fields()
		if err != nil {
			return errNotDecoded
		}
		m := reflect.MakeMap(t)
		for it.Next() {
			e := reflect.New(t.Elem()).Elem()
			if err := decodeLookup(it.Value(), e, src); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(it.Selector().Unquoted()).Convert(t.Key()), e)
		}
		rv.Set(m)
	case reflect.String:
		s, err := v.String()
		if err != nil {
			return errNotDecoded
		}
		rv.SetString(s)
	case reflect.Bool:
		b, err := v.Bool()
		if err != nil {
			return errNotDecoded
		}
		rv.SetBool(b)
	case reflect.Float64, reflect.Float32:
		f, err := v.Float64()
		if err != nil {
			return errNotDecoded
		}
		rv.SetFloat(f)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.IncompleteKind() != cue.IntKind {
			return errNotDecoded
		}
		n, err := v.Int64()
		if err != nil || rv.OverflowInt(n) {
			return errNotDecoded
		}
		rv.SetInt(n)
	default:
		return errNotDecoded
	}
	return nil
}
