package suite

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
)

// PrintError renders an error the way `cue vet` does: each problem's path
// and message, then every position, relative to cwd.
func PrintError(err error, cwd string) string {
	return cueerrors.Details(err, &cueerrors.Config{Cwd: cwd})
}

// enumErrors is CUE's error with one rewrite: a value outside a disjunction
// of string literals, which CUE reports as one "conflicting values" error
// per alternative with positions in the schema, becomes one error naming
// the alternatives in the schema's order at the suite's own position.
// Every other error is kept as CUE gave it.
func enumErrors(err error, files []*ast.File) cueerrors.Error {
	list := cueerrors.Errors(err)
	roots := map[token.Position]bool{} // each file's root expression
	for _, f := range files {
		for _, d := range f.Decls {
			if e, ok := d.(*ast.EmbedDecl); ok {
				roots[e.Pos().Position()] = true
			}
		}
	}
	byPath := map[string][]cueerrors.Error{}
	for _, e := range list {
		k := strings.Join(e.Path(), ".")
		byPath[k] = append(byPath[k], e)
	}
	var out cueerrors.Error
	rewritten := map[string]bool{}
	for _, e := range list {
		k := strings.Join(e.Path(), ".")
		if rewritten[k] {
			continue
		}
		if one := enumError(byPath[k], roots, files); one != nil {
			rewritten[k] = true
			out = cueerrors.Append(out, one)
			continue
		}
		out = cueerrors.Append(out, e)
	}
	return out
}

// enumError is the one error for a path's errors when they all say that a
// string literal conflicts with each string literal of a disjunction, else
// nil.
func enumError(errs []cueerrors.Error, roots map[token.Position]bool, files []*ast.File) cueerrors.Error {
	type alt struct {
		value string
		pos   token.Position
	}
	var pairs [][2]string
	var alts []alt
	var inputs [][]token.Pos
	disjunction := false
	for _, e := range errs {
		format, args := e.Msg()
		switch {
		case format == "%d errors in empty disjunction:":
			disjunction = true
			continue
		case len(args) < 2 || format != "conflicting values %s and %s" && format != "conflicting values %s and %s (mismatched types %s and %s)":
			return nil
		}
		pairs = append(pairs, [2]string{fmt.Sprint(args[0]), fmt.Sprint(args[1])})
		inputs = append(inputs, e.InputPositions())
	}
	if !disjunction || len(pairs) < 2 {
		return nil
	}
	// The user's value is the one side every conflict shares.
	var value string
	for _, v := range pairs[0] {
		shared := true
		for _, p := range pairs[1:] {
			shared = shared && (p[0] == v || p[1] == v)
		}
		if shared {
			value = v
		}
	}
	if value == "" {
		return nil
	}
	seen := map[string]bool{}
	for i, p := range pairs {
		other := p[0]
		if other == value {
			other = p[1]
		}
		if _, err := strconv.Unquote(other); err != nil || !strings.HasPrefix(other, `"`) {
			return nil // not a disjunction of string literals
		}
		if seen[other] {
			continue
		}
		seen[other] = true
		// The alternative's own position: the first this conflict does not
		// share with every other.
		var pos token.Position
		for _, p := range inputs[i] {
			if !inAll(inputs, p) {
				pos = p.Position()
				break
			}
		}
		alts = append(alts, alt{other, pos})
	}
	// In the order the schema declares them.
	slices.SortStableFunc(alts, func(a, b alt) int {
		if a.pos.Filename != b.pos.Filename {
			return 0
		}
		if a.pos.Line != b.pos.Line {
			return a.pos.Line - b.pos.Line
		}
		return a.pos.Column - b.pos.Column
	})
	// The suite's own positions: in every conflict, outside the schema, and
	// not a file's root expression.
	var pos []token.Pos
	for _, p := range inputs[0] {
		at := p.Position()
		if strings.Contains(at.Filename, "cue.mod") || roots[at] {
			continue
		}
		if inAll(inputs, p) {
			pos = append(pos, p)
		}
	}
	if len(pos) == 0 {
		return nil
	}
	// Of those, the value itself where it is written.
	if lit := slices.DeleteFunc(slices.Clone(pos), func(p token.Pos) bool { return !literalAt(files, p, value) }); len(lit) > 0 {
		pos = lit
	}
	names := make([]string, len(alts))
	for i, a := range alts {
		names[i], _ = strconv.Unquote(a.value)
	}
	return &suiteError{path: errs[0].Path(), pos: pos, msg: fmt.Sprintf("%s is not one of %s", value, strings.Join(names, ", "))}
}

// inAll reports whether every list of positions holds p.
func inAll(lists [][]token.Pos, p token.Pos) bool {
	at := p.Position()
	for _, in := range lists {
		if !slices.ContainsFunc(in, func(q token.Pos) bool { return q.Position() == at }) {
			return false
		}
	}
	return true
}

// literalAt reports whether the suite's source holds the literal value at p.
func literalAt(files []*ast.File, p token.Pos, value string) bool {
	at := p.Position()
	found := false
	for _, f := range files {
		if f.Filename != at.Filename {
			continue
		}
		ast.Walk(f, func(n ast.Node) bool {
			if found {
				return false
			}
			if n.Pos().IsValid() && n.Pos().Line() > at.Line || n.End().IsValid() && n.End().Line() < at.Line {
				return false // not on the line: skip the subtree
			}
			if lit, ok := n.(*ast.BasicLit); ok && lit.Pos().Position() == at {
				found = lit.Value == value
			}
			return true
		}, nil)
	}
	return found
}

// withoutFollowOns drops the checks at a path where CUE reported an error
// at that path, above it or below it: what failed to decode there would
// make them report a problem that is not there.
func withoutFollowOns(checks, cueErrs cueerrors.Error) cueerrors.Error {
	if checks == nil || cueErrs == nil {
		return checks
	}
	var bad [][]string
	for _, e := range cueerrors.Errors(cueErrs) {
		if p := e.Path(); len(p) > 0 {
			bad = append(bad, p)
		}
	}
	var out cueerrors.Error
	for _, e := range cueerrors.Errors(checks) {
		p := e.Path()
		if slices.ContainsFunc(bad, func(b []string) bool { return isPrefix(b, p) || isPrefix(p, b) }) {
			continue
		}
		out = cueerrors.Append(out, e)
	}
	return out
}

// underFormats reports whether a CUE error is in another system's inputs,
// under the suite's formats field.
func underFormats(errs cueerrors.Error) bool {
	for _, e := range cueerrors.Errors(errs) {
		if p := e.Path(); len(p) > 0 && p[0] == "formats" {
			return true
		}
	}
	return false
}

// withoutPaths drops the errors at exactly the given top-level paths.
func withoutPaths(errs cueerrors.Error, paths ...string) cueerrors.Error {
	var out cueerrors.Error
	for _, e := range cueerrors.Errors(errs) {
		if p := e.Path(); len(p) == 1 && slices.Contains(paths, p[0]) {
			continue
		}
		out = cueerrors.Append(out, e)
	}
	return out
}

func isPrefix(a, b []string) bool { return len(a) <= len(b) && slices.Equal(a, b[:len(a)]) }

// outsideFiles reports every .cue file of the suite folder that CUE left
// out of the suite's package, which would otherwise vanish without a word,
// with the cases it holds. Files named .* or _* are left out on purpose.
func outsideFiles(inst *build.Instance) cueerrors.Error {
	var errs cueerrors.Error
	for _, f := range inst.IgnoredFiles {
		base := filepath.Base(f.Filename)
		if strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") || !strings.HasSuffix(base, ".cue") {
			continue
		}
		var why string
		file, _ := parser.ParseFile(f.Filename, nil, parser.PackageClauseOnly)
		pkg := ""
		if file != nil {
			pkg = file.PackageName()
		}
		switch {
		case strings.HasSuffix(base, "_test.cue"):
			why = "CUE leaves _test.cue files out of a package; rename it"
		case file != nil && pkg == "":
			why = fmt.Sprintf("it has no package clause; start it with \"package %s\" like the suite's other files", inst.PkgName)
		case pkg != "" && pkg != inst.PkgName:
			why = fmt.Sprintf("it is package %s, and the suite is package %s", pkg, inst.PkgName)
		case f.ExcludeReason != nil:
			why = fmt.Sprintf("CUE leaves it out (%v); skillgate sets no build tags", f.ExcludeReason)
		default:
			why = "CUE leaves it out"
		}
		var pos []token.Pos
		if file != nil {
			if p := file.Pos(); p.IsValid() {
				pos = append(pos, p)
			}
			for _, d := range file.Decls {
				if pk, ok := d.(*ast.Package); ok {
					pos = []token.Pos{pk.Pos()}
				}
			}
		}
		errs = cueerrors.Append(errs, &suiteError{pos: pos, msg: fmt.Sprintf("%s is not part of the suite: %s", base, why)})
	}
	return errs
}

// suitePackage is the package most .cue files of dir declare; on a tie, the
// package of suite.cue, else the first by name.
func suitePackage(dir string) string {
	count := map[string]int{}
	of := ""
	paths, _ := filepath.Glob(filepath.Join(dir, "*.cue"))
	for _, p := range paths {
		base := filepath.Base(p)
		if strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") || strings.HasSuffix(base, "_test.cue") {
			continue
		}
		f, err := parser.ParseFile(p, nil, parser.PackageClauseOnly)
		if err != nil || f.PackageName() == "" {
			continue
		}
		count[f.PackageName()]++
		if base == "suite.cue" {
			of = f.PackageName()
		}
	}
	best := ""
	for _, name := range sortedKeys(count) {
		if best == "" || count[name] > count[best] || count[name] == count[best] && name == of {
			best = name
		}
	}
	return best
}

// atUserFiles keeps, of an error positioned in a user's file of another
// system's format (JSON, YAML, JSONL, Markdown: any file that is not CUE),
// only its positions in such files: the mistake is there, and the
// positions in the vendored schema and in the suite's own CUE that reads
// the file are how it got there, not where to fix it. Other errors are
// kept as they are.
//
// An error under formats positioned in the vendored schema alone (a rule
// the format package states with error()) is positioned at the user's
// value it is about, found in v, when that is in such a file.
func atUserFiles(errs cueerrors.Error, v cue.Value) cueerrors.Error {
	if errs == nil {
		return nil
	}
	var out cueerrors.Error
	inFormats := underFormats(errs)
	for _, e := range cueerrors.Errors(errs) {
		if at := atEmbeddedFile(e); at != nil {
			out = cueerrors.Append(out, at)
			continue
		}
		all := append([]token.Pos{e.Position()}, e.InputPositions()...)
		schemaOnly := !slices.ContainsFunc(all, func(q token.Pos) bool { return q.IsValid() && !strings.Contains(q.Filename(), "cue.mod") })
		p := e.Path()
		if inFormats && schemaOnly && len(p) > 0 && p[0] != "formats" {
			// What the format package derives from another system's file
			// that CUE refused: a follow-on of the error there.
			continue
		}
		if len(p) > 1 && p[0] == "formats" && schemaOnly && v.Exists() {
			// A field the user's file lacks stands where its parent is
			// written.
			for n := len(p); n > 1; n-- {
				sel := make([]cue.Selector, n)
				for i, l := range p[:n] {
					sel[i] = cue.ParsePath(l).Selectors()[0]
				}
				if at := userPos(v.LookupPath(cue.MakePath(sel...))); at.IsValid() && !strings.HasSuffix(at.Filename(), ".cue") {
					format, args := e.Msg()
					msg := fmt.Sprintf(format, args...)
					if n < len(p) {
						msg = fmt.Sprintf("%s is missing (%s)", p[len(p)-1], msg)
					}
					out = cueerrors.Append(out, &suiteError{path: p, pos: []token.Pos{at}, msg: msg})
					break
				}
				if n == 2 {
					out = cueerrors.Append(out, e)
				}
			}
			continue
		}
		var user []token.Pos
		for _, p := range all {
			if p.IsValid() && !strings.HasSuffix(p.Filename(), ".cue") && !slices.ContainsFunc(user, func(q token.Pos) bool { return q.Position() == p.Position() }) {
				user = append(user, p)
			}
		}
		// A file's whole value (its line 1, column 1) holds every other
		// position in it: the narrower one says where the mistake is.
		user = slices.DeleteFunc(user, func(q token.Pos) bool {
			return q.Line() == 1 && q.Column() == 1 && slices.ContainsFunc(user, func(r token.Pos) bool { return r.Filename() == q.Filename() && r.Position() != q.Position() })
		})
		if len(user) == 0 || len(user) == len(all) {
			out = cueerrors.Append(out, e)
			continue
		}
		out = cueerrors.Append(out, &suiteError{path: e.Path(), pos: user, msg: message(e)})
	}
	return out
}

// userPos is the position of the suite's own source for v, preferring it
// over the schema's, which every suite value also has a conjunct in.
func userPos(v cue.Value) token.Pos {
	var found token.Pos
	var visit func(v cue.Value, depth int)
	visit = func(v cue.Value, depth int) {
		if found.IsValid() || depth > 5 {
			return
		}
		if p := v.Pos(); p.IsValid() && !strings.Contains(p.Filename(), "cue.mod") {
			found = p
			return
		}
		op, args := v.Expr()
		if op == cue.SelectorOp && len(args) == 2 {
			// X.f: where f is written in X (a field of the user's file).
			if label, err := args[1].String(); err == nil {
				visit(args[0].LookupPath(cue.MakePath(cue.Str(label))), depth+1)
			}
		}
		if len(args) > 1 || depth == 0 {
			for _, a := range args {
				visit(a, depth+1)
			}
		}
		// A list a format package builds (a rubric of one sidecar line,
		// the parts of a fixture's path) stands where the first of its
		// elements the user wrote is.
		if it, err := v.List(); err == nil {
			for n := 0; n < 8 && it.Next(); n++ {
				visit(it.Value(), depth+1)
			}
		}
	}
	visit(v, 0)
	if !found.IsValid() {
		return v.Pos()
	}
	return found
}
