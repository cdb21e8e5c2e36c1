package suite

import (
	"reflect"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/token"
)

// A shape is what the schema says of a struct the Go type decodes: the
// fields every value has (regular fields, present once validated), and the
// shapes of its struct-valued fields and of its lists' struct elements. A
// nil shape is one the schema does not make plain enough to predict.
//
// defaults are the values of regular fields that the schema gives alike to
// every value (a default or an empty list that depends on no other field),
// read once from the schema, so a value that does not set them is not
// looked up for them.
type shape struct {
	regular  map[string]bool
	fields   map[string]*shape
	defaults map[string]reflect.Value
}

// shapeOf reads the shape of the schema value sv, decoded into t.
func shapeOf(sv cue.Value, t reflect.Type) *shape {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	if op, _ := sv.Eval().Expr(); op == cue.OrOp || sv.IncompleteKind() != cue.StructKind || !plainDefinition(sv) {
		return nil
	}
	it, err := sv.Fields(cue.Optional(true))
	if err != nil {
		return nil
	}
	fs := fieldsOf(t)
	sh := &shape{regular: map[string]bool{}, fields: map[string]*shape{}, defaults: map[string]reflect.Value{}}
	for it.Next() {
		sel := it.Selector()
		name := sel.Unquoted()
		f, ok := fs.byName[name]
		if !ok {
			return nil
		}
		if sel.ConstraintType() == 0 {
			sh.regular[name] = true
			if d, ok := sameDefault(it.Value(), f.typ); ok {
				sh.defaults[name] = d
			}
		}
		ft := f.typ
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.Struct:
			sh.fields[name] = shapeOf(it.Value(), ft)
		case ft.Kind() == reflect.Slice && elemStruct(ft):
			if it.Value().IncompleteKind() == cue.ListKind {
				sh.fields[name] = shapeOf(it.Value().LookupPath(cue.MakePath(cue.AnyIndex)), ft.Elem())
			}
		}
	}
	return sh
}

// sameDefault decodes the schema's value sv for a regular field of Go type
// t when every value that does not set the field has that value: sv
// refers to nothing but the package's definitions and CUE's types, and
// decodes to a scalar or a list of them.
func sameDefault(sv cue.Value, t reflect.Type) (reflect.Value, bool) {
	switch k := t.Kind(); {
	case k == reflect.String, k == reflect.Bool, k == reflect.Float64, k == reflect.Int:
	case k == reflect.Slice && t.Elem().Kind() == reflect.String:
	default:
		return reflect.Value{}, false
	}
	src := sv.Source()
	if f, ok := src.(*ast.Field); ok {
		src = f.Value
	}
	if src == nil {
		return reflect.Value{}, false
	}
	alone := true
	ast.Walk(src, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			// Resolved within the file's struct literals: another field.
			if _, top := id.Scope.(*ast.File); id.Scope != nil && !top {
				alone = false
			}
		}
		return alone
	}, nil)
	if !alone {
		return reflect.Value{}, false
	}
	d := reflect.New(t).Elem()
	if decodeLookup(sv, d, nil) != nil {
		return reflect.Value{}, false
	}
	return d, true
}

// plainDefinition reports whether the schema value sv is written as struct
// literals of plain fields only: no comprehension or embedding that could
// add a field the evaluated definition does not list.
func plainDefinition(sv cue.Value) bool {
	vals := []cue.Value{sv}
	if op, args := sv.Expr(); op == cue.AndOp {
		vals = args
	}
	for _, x := range vals {
		src := cue.Dereference(x).Source()
		if f, ok := src.(*ast.Field); ok {
			src = f.Value
		}
		st, ok := src.(*ast.StructLit)
		if !ok {
			return false
		}
		for _, e := range st.Elts {
			switch e.(type) {
			case *ast.Field, *ast.CommentGroup, *ast.Attribute:
			default:
				return false
			}
		}
	}
	return true
}

// elemStruct reports whether the slice type t holds structs.
func elemStruct(t reflect.Type) bool {
	e := t.Elem()
	for e.Kind() == reflect.Pointer {
		e = e.Elem()
	}
	return e.Kind() == reflect.Struct
}

// caseLiterals finds, in the suite's own files, the struct literals each
// case is written as. ok is false when the files set cases some other way
// as well (a pattern over cases, a comprehension, an embedding, a dynamic
// label): then no case's fields can be told from its literals. A case
// written other than as a literal has no entry.
func caseLiterals(files []*ast.File) (lits map[string][]*ast.StructLit, ok bool) {
	lits = map[string][]*ast.StructLit{}
	odd := map[string]bool{}
	var top func(decls []ast.Decl) bool
	top = func(decls []ast.Decl) bool {
		for _, d := range decls {
			switch d := d.(type) {
			case *ast.Package, *ast.ImportDecl, *ast.CommentGroup, *ast.Attribute:
			case *ast.EmbedDecl:
				switch x := d.Expr.(type) {
				case *ast.SelectorExpr: // the schema's #Suite, beside the fields
				case *ast.BinaryExpr: // X.#Suite & {...}
					if x.Op != token.AND {
						return false
					}
					st, ok := x.Y.(*ast.StructLit)
					if _, sel := x.X.(*ast.SelectorExpr); !sel || !ok || !top(st.Elts) {
						return false
					}
				default:
					return false
				}
			case *ast.Field:
				name, _, err := ast.LabelName(d.Label)
				if err != nil || d.Constraint != token.ILLEGAL {
					return false
				}
				if name != "cases" {
					continue
				}
				st, ok := d.Value.(*ast.StructLit)
				if !ok {
					return false
				}
				for _, e := range st.Elts {
					switch e := e.(type) {
					case *ast.CommentGroup, *ast.Attribute:
					case *ast.Field:
						id, _, err := ast.LabelName(e.Label)
						if err != nil || e.Constraint != token.ILLEGAL {
							return false
						}
						if cs, ok := e.Value.(*ast.StructLit); ok {
							lits[id] = append(lits[id], cs)
						} else {
							odd[id] = true
						}
					default:
						return false
					}
				}
			default:
				return false
			}
		}
		return true
	}
	for _, f := range files {
		if !top(f.Decls) {
			return nil, false
		}
	}
	for id := range odd {
		delete(lits, id)
	}
	return lits, true
}

// plainFields gathers the values of the regular fields the literals set,
// by label; ok is false when a literal holds anything but plain fields.
func plainFields(lits []*ast.StructLit) (fields map[string][]ast.Expr, ok bool) {
	fields = map[string][]ast.Expr{}
	for _, st := range lits {
		for _, e := range st.Elts {
			switch e := e.(type) {
			case *ast.CommentGroup, *ast.Attribute:
			case *ast.Field:
				name, _, err := ast.LabelName(e.Label)
				if err != nil || e.Constraint != token.ILLEGAL {
					return nil, false
				}
				fields[name] = append(fields[name], e.Value)
			default:
				return nil, false
			}
		}
	}
	return fields, true
}

// A lazyValue is a value looked up only when something is read from CUE
// itself: a struct whose fields all come from its literals or the
// schema's defaults costs no lookup.
type lazyValue struct {
	parent *lazyValue
	path   cue.Path
	v      cue.Value
	done   bool
}

func (l *lazyValue) get() cue.Value {
	if !l.done {
		l.v, l.done = l.parent.get().LookupPath(l.path), true
	}
	return l.v
}

// decodePredicted is decodeLookup for a struct written as the literals
// lits with the schema's shape sh: it reads only the fields that are
// there, those the literals set and those the schema always gives, where
// decodeLookup would look up every field Go declares, and reads from the
// literals what CUE would leave as written.
func decodePredicted(lv *lazyValue, rv reflect.Value, lits []*ast.StructLit, sh *shape) error {
	fields, ok := plainFields(lits)
	if !ok || sh == nil {
		return decodeLookup(lv.get(), rv, nil)
	}
	for name := range fields {
		if _, known := fieldsOf(rv.Type()).byName[name]; !known && !strings.HasPrefix(name, "#") && !strings.HasPrefix(name, "_") {
			return errNotDecoded // a field Go lacks: JSON says so
		}
	}
	for _, f := range fieldsOf(rv.Type()).list {
		set := fields[f.name]
		if len(set) == 0 && !sh.regular[f.name] {
			continue
		}
		out := rv.FieldByIndex(f.index)
		if d, ok := sh.defaults[f.name]; ok && len(set) == 0 {
			if d.Kind() == reflect.Slice {
				out.Set(reflect.AppendSlice(reflect.MakeSlice(d.Type(), 0, d.Len()), d))
			} else {
				out.Set(d)
			}
			continue
		}
		if len(set) == 1 {
			if x, ok := literalValue(set[0], f.typ); ok {
				out.Set(x)
				continue
			}
		}
		t := f.typ
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		field := &lazyValue{parent: lv, path: f.path}
		if child := sh.fields[f.name]; child != nil {
			switch {
			case t.Kind() == reflect.Struct:
				sub, ok := structLits(set)
				if !ok {
					break
				}
				target := out
				if f.typ.Kind() == reflect.Pointer {
					target = reflect.New(t).Elem()
				}
				if err := decodePredicted(field, target, sub, child); err != nil {
					return err
				}
				if f.typ.Kind() == reflect.Pointer {
					out.Set(target.Addr())
				}
				continue
			case t.Kind() == reflect.Slice && f.typ.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct && len(set) == 1:
				// A list literal unified with the schema's list keeps its
				// length: the elements are the literal's, each met by the
				// schema's element.
				list, ok := set[0].(*ast.ListLit)
				if !ok {
					break
				}
				elems, ok := structLits(list.Elts)
				if !ok {
					break
				}
				sl := reflect.MakeSlice(t, len(elems), len(elems))
				for i, e := range elems {
					elem := &lazyValue{parent: field, path: cue.MakePath(cue.Index(i))}
					if err := decodePredicted(elem, sl.Index(i), []*ast.StructLit{e}, child); err != nil {
						return err
					}
				}
				out.Set(sl)
				continue
			}
		}
		fv := field.get()
		if !fv.Exists() {
			continue
		}
		if err := decodeLookup(fv, out, nil); err != nil {
			return err
		}
	}
	return nil
}

// structLits is xs as struct literals, ok only if all are.
func structLits(xs []ast.Expr) (lits []*ast.StructLit, ok bool) {
	for _, x := range xs {
		st, ok := x.(*ast.StructLit)
		if !ok {
			return nil, false
		}
		lits = append(lits, st)
	}
	return lits, true
}

// literalValue reads a field of Go type t that its only literal sets to a
// double-quoted string, or a list of them: unifying a concrete string
// with the schema leaves it as it is, so the validated value is the
// literal's.
func literalValue(x ast.Expr, t reflect.Type) (reflect.Value, bool) {
	ptr := t.Kind() == reflect.Pointer
	if ptr {
		t = t.Elem()
	}
	var out reflect.Value
	switch {
	case t.Kind() == reflect.String:
		str, ok := literalString(x)
		if !ok {
			return reflect.Value{}, false
		}
		out = reflect.New(t).Elem()
		out.SetString(str)
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		list, ok := x.(*ast.ListLit)
		if !ok {
			return reflect.Value{}, false
		}
		out = reflect.MakeSlice(t, len(list.Elts), len(list.Elts))
		for i, e := range list.Elts {
			str, ok := literalString(e)
			if !ok {
				return reflect.Value{}, false
			}
			out.Index(i).SetString(str)
		}
	default:
		return reflect.Value{}, false
	}
	if ptr {
		p := reflect.New(t)
		p.Elem().Set(out)
		return p, true
	}
	return out, true
}

// literalString is the value of a double-quoted string literal.
func literalString(x ast.Expr) (string, bool) {
	lit, ok := x.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	q, _, _, err := literal.ParseQuotes(lit.Value, lit.Value)
	if err != nil || !q.IsDouble() {
		return "", false
	}
	str, err := literal.Unquote(lit.Value)
	return str, err == nil
}
