package suite

import (
	"fmt"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"
)

// checkDuplicateCases reports a case ID declared more than once: CUE would
// silently merge two cases with one ID written in two files.
func checkDuplicateCases(insts []*build.Instance) cueerrors.Error {
	seen := map[string][]token.Pos{}
	var order []string
	for _, inst := range insts {
		for _, f := range inst.Files {
			ast.Walk(f, func(n ast.Node) bool {
				fd, ok := n.(*ast.Field)
				if !ok {
					return true
				}
				if name, _, _ := ast.LabelName(fd.Label); name != "cases" {
					return true
				}
				for _, id := range caseLabels(fd.Value) {
					name, _, _ := ast.LabelName(id.Label)
					if _, ok := seen[name]; !ok {
						order = append(order, name)
					}
					seen[name] = append(seen[name], id.Label.Pos())
				}
				return false
			}, nil)
		}
	}
	var errs cueerrors.Error
	for _, id := range order {
		if ps := seen[id]; len(ps) > 1 {
			errs = cueerrors.Append(errs, &suiteError{path: []string{"cases", cue.Str(id).String()}, pos: ps, msg: fmt.Sprintf("case %s is declared %d times; case IDs must be unique", id, len(ps))})
		}
	}
	return errs
}

// caseLabels lists the fields of a `cases:` value written as a struct.
func caseLabels(x ast.Expr) []*ast.Field {
	st, ok := x.(*ast.StructLit)
	if !ok {
		return nil
	}
	var out []*ast.Field
	for _, d := range st.Elts {
		if fd, ok := d.(*ast.Field); ok {
			out = append(out, fd)
		}
	}
	return out
}
