package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/load"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"

	"github.com/skillgate/skillgate/schema"
)

// Selector paths into a suite value, kept as typed constants.
var (
	pathSuite  = cue.ParsePath("#Suite")
	pathCases  = cue.ParsePath("cases")
	pathArms   = cue.ParsePath("arms")
	pathSkills = cue.ParsePath("skills")
)

// moduleFile is the cue.mod/module.cue skillgate supplies, in memory, for a
// suite folder that has none.
var moduleFile = fmt.Sprintf("module: \"skillgate.local/suite\"\nlanguage: version: %q\n", schema.LanguageVersion)

// LoadSuite loads the suite package in dir, unifies it with #Suite,
// validates it concretely, checks on disk what CUE cannot, and decodes it.
// Problems in the suite come back as one cue errors.Error listing all of
// them with their positions; print it with PrintError.
func LoadSuite(dir string) (*Suite, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("load suite %s: %w", dir, err)
	}
	return loadSuite(dir, abs, repositoryRoot(abs))
}

// LoadSuiteIn is LoadSuite for a suite inside the repository at root, which
// its paths must not leave.
func LoadSuiteIn(dir, root string) (*Suite, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("load suite %s: %w", dir, err)
	}
	return loadSuite(dir, abs, root)
}

// loadSuite loads the suite at abs; name is the folder as the user gave it.
func loadSuite(name, abs, root string) (*Suite, error) {
	if st, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("load suite %s: %w", name, unwrapPathError(err))
	} else if !st.IsDir() {
		return nil, fmt.Errorf("load suite %s: not a folder", name)
	}
	v, insts, err := buildSuite(abs, root)
	if insts == nil {
		if err != nil && strings.Contains(err.Error(), "matched no packages") || strings.Contains(fmt.Sprint(err), "no CUE files") {
			return nil, fmt.Errorf("load suite %s: no CUE package in the folder", name)
		}
		return nil, err
	}
	// With CUE errors, the checks below still run on what decodes, so one
	// vet shows every problem.
	var errs cueerrors.Error
	if err != nil {
		errs = enumErrors(err, insts[0].Files)
	}
	s := &Suite{Dir: abs, Root: root}
	if derr := decodeSuite(v, s, errs != nil); derr != nil && errs == nil {
		return nil, cueerrors.Promote(derr, "decode suite")
	}
	checks := withoutFollowOns(checkSuite(s, v), errs)
	errs = cueerrors.Append(errs, outsideFiles(insts[0]))
	errs = cueerrors.Append(errs, checkDuplicateCases(insts))
	errs = cueerrors.Append(errs, checks)
	if errs != nil {
		return nil, errs
	}
	return s, nil
}

// buildSuite loads the package in dir with the embedded schema overlaid
// under its module's cue.mod/pkg, and returns the suite closed by #Suite
// and validated.
//
// When every file is a single root expression `schema.#Suite & {...}`, the
// package value is already closed at every level and is used as it is;
// otherwise (a file embedding the definition beside other fields is not
// closed) the value is unified with #Suite once more, which costs a second
// evaluation but rejects every misspelt field all the same.
func buildSuite(dir, root string) (cue.Value, []*build.Instance, error) {
	modRoot := moduleRoot(dir, root)
	overlay := map[string]load.Source{}
	if _, err := os.Stat(filepath.Join(modRoot, "cue.mod", "module.cue")); err != nil {
		overlay[filepath.Join(modRoot, "cue.mod", "module.cue")] = load.FromString(moduleFile)
	}
	pkgDir := filepath.Join(modRoot, "cue.mod", "pkg", filepath.FromSlash(schema.ImportPath))
	for p, b := range schema.Files() {
		overlay[filepath.Join(pkgDir, filepath.FromSlash(p))] = load.FromBytes(b)
	}
	cfg := &load.Config{Dir: dir, ModuleRoot: modRoot, Overlay: overlay}
	insts := load.Instances([]string{"."}, cfg)
	var multiple *load.MultiplePackageError
	if errors.As(insts[0].Err, &multiple) {
		// Load the suite's package; outsideFiles names every other file.
		cfg.Package = suitePackage(dir)
		insts = load.Instances([]string{"."}, cfg)
	}
	if insts[0].Err != nil {
		return cue.Value{}, nil, insts[0].Err
	}
	closed := true
	for _, f := range insts[0].Files {
		closed = closed && closedForm(f)
	}
	if !closed {
		insts = append(insts, load.Instances([]string{schema.ImportPath}, cfg)...)
		if insts[1].Err != nil {
			return cue.Value{}, nil, insts[1].Err
		}
	}
	vals, err := cuecontext.New().BuildInstances(insts)
	if err != nil {
		return cue.Value{}, nil, err
	}
	v := vals[0]
	if !closed {
		v = v.Unify(vals[1].LookupPath(pathSuite))
	}
	return v, insts[:1], v.Validate(cue.Concrete(true), cue.Final())
}

// closedForm reports whether a file's only expression is `X.#Suite & {...}`
// with X the schema's import.
func closedForm(f *ast.File) bool {
	local := ""
	var exprs []ast.Expr
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.ImportDecl:
			for _, spec := range d.Specs {
				if strings.Trim(spec.Path.Value, `"`) == schema.ImportPath {
					local = "schema"
					if spec.Name != nil {
						local = spec.Name.Name
					}
				}
			}
		case *ast.EmbedDecl:
			exprs = append(exprs, d.Expr)
		case *ast.Package, *ast.CommentGroup, *ast.Attribute:
		default:
			return false
		}
	}
	if local == "" || len(exprs) != 1 {
		return false
	}
	bin, ok := exprs[0].(*ast.BinaryExpr)
	if !ok || bin.Op != token.AND {
		return false
	}
	for _, x := range []ast.Expr{bin.X, bin.Y} {
		if sel, ok := x.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == local {
				if name, _, _ := ast.LabelName(sel.Sel); name == "#Suite" {
					_, isStruct := other(bin, x).(*ast.StructLit)
					return isStruct
				}
			}
		}
	}
	return false
}

func other(b *ast.BinaryExpr, x ast.Expr) ast.Expr {
	if b.X == x {
		return b.Y
	}
	return b.X
}

// moduleRoot is the nearest folder from dir up to root holding a cue.mod,
// else dir itself.
func moduleRoot(dir, root string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if st, err := os.Stat(filepath.Join(d, "cue.mod")); err == nil && st.IsDir() {
			return d
		}
		if d == root || d == filepath.Dir(d) {
			return dir
		}
	}
}

// repositoryRoot is the nearest folder from dir upwards holding .git, else dir.
func repositoryRoot(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if d == filepath.Dir(d) {
			return dir
		}
	}
}

// decodeSuite decodes a validated suite value into s. Cases, the bulk of a
// large suite, are exported concurrently.
//
// When lenient, parts that do not decode (because validation failed) are
// skipped, so that checks can still run on the rest.
func decodeSuite(v cue.Value, s *Suite, lenient bool) error {
	raw := map[string]json.RawMessage{}
	it, err := v.Fields()
	if err != nil {
		return err
	}
	for it.Next() {
		if name := it.Selector().Unquoted(); name != "cases" {
			b, err := it.Value().MarshalJSON()
			if err != nil {
				if lenient {
					continue
				}
				return err
			}
			raw[name] = b
		}
	}
	var ids []string
	var vals []cue.Value
	cit, err := v.LookupPath(pathCases).Fields()
	if err != nil {
		return err
	}
	for cit.Next() {
		ids = append(ids, cit.Selector().Unquoted())
		vals = append(vals, cit.Value())
	}
	cases := make([]Case, len(vals))
	errs := make([]error, len(vals))
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < len(vals); i += workers {
				b, err := vals[i].MarshalJSON()
				if err == nil {
					err = json.Unmarshal(b, &cases[i])
				} else if lenient {
					err = decodeFields(vals[i], &cases[i])
				}
				errs[i] = err
			}
		}(w)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil && !lenient {
		return err
	}
	for name, b := range raw {
		one, _ := json.Marshal(map[string]json.RawMessage{name: b})
		if err := json.Unmarshal(one, s); err != nil && !lenient {
			return err
		}
	}
	s.Cases = make(map[string]Case, len(ids))
	for i, id := range ids {
		if errs[i] != nil {
			continue
		}
		cases[i].ID = id
		s.Cases[id] = cases[i]
		s.CaseOrder = append(s.CaseOrder, id)
	}
	s.ArmOrder = fieldOrder(v.LookupPath(pathArms))
	return nil
}

// decodeFields decodes a struct field by field into out, skipping the
// fields that do not decode, so a case with one bad field is still checked.
func decodeFields(v cue.Value, out any) error {
	it, err := v.Fields()
	if err != nil {
		return err
	}
	for it.Next() {
		b, err := it.Value().MarshalJSON()
		if err != nil {
			continue
		}
		one, _ := json.Marshal(map[string]json.RawMessage{it.Selector().Unquoted(): b})
		_ = json.Unmarshal(one, out)
	}
	return nil
}

// fieldOrder lists the regular field labels of a struct in authored order.
func fieldOrder(v cue.Value) []string {
	var out []string
	it, err := v.Fields()
	if err != nil {
		return nil
	}
	for it.Next() {
		out = append(out, it.Selector().Unquoted())
	}
	return out
}

// PrintError renders an error the way `cue vet` does: each problem's path
// and message, then every position, relative to cwd.
func PrintError(err error, cwd string) string {
	return cueerrors.Details(err, &cueerrors.Config{Cwd: cwd})
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// VetSuites loads every suite folder and returns all their problems as one
// error, or nil when every suite is valid.
func VetSuites(dirs []string) error {
	var errs cueerrors.Error
	for _, d := range dirs {
		if _, err := LoadSuite(d); err != nil {
			errs = cueerrors.Append(errs, cueerrors.Promote(err, ""))
		}
	}
	if errs != nil {
		return errs
	}
	return nil
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
