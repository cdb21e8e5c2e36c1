package suite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/load"
	"cuelang.org/go/cue/token"

	"github.com/skillgate/skillgate/schema"
)

// Selector paths into a suite value, kept as typed constants.
var (
	pathSuite  = cue.ParsePath("#Suite")
	pathCases  = cue.ParsePath("cases")
	pathArms   = cue.ParsePath("arms")
	pathAgents = cue.ParsePath("agentSet")
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
	return loadSuite(dir, abs, RepositoryRoot(abs), nil)
}

// LoadSuiteIn is LoadSuite for a suite inside the repository at root, which
// its paths must not leave.
func LoadSuiteIn(dir, root string) (*Suite, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("load suite %s: %w", dir, err)
	}
	return loadSuite(dir, abs, root, nil)
}

// LoadSuiteSource loads a suite that exists only as CUE source: src is
// the file suite.cue of the folder dir, which need not exist on disk (the
// suite's relative paths resolve from it all the same), inside the
// repository root, which its paths must not leave. skillgate skill-eval
// builds gstack's suite so, from the tasks file and the arms it is named.
func LoadSuiteSource(dir, root string, src []byte) (*Suite, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("load suite %s: %w", dir, err)
	}
	return loadSuite(dir, abs, root, src)
}

// loadSuite loads the suite at abs, or the suite.cue src there when src is
// not nil; name is the folder as the user gave it.
func loadSuite(name, abs, root string, src []byte) (*Suite, error) {
	if src == nil { // with src, the folder need not exist
		if st, err := os.Stat(abs); err != nil {
			return nil, fmt.Errorf("load suite %s: %w", name, unwrapPathError(err))
		} else if !st.IsDir() {
			return nil, fmt.Errorf("load suite %s: not a folder", name)
		}
	}
	v, insts, readFailed, err := buildSuite(abs, root, src)
	if insts == nil {
		if err != nil && strings.Contains(err.Error(), "matched no packages") || strings.Contains(fmt.Sprint(err), "no CUE files") {
			return nil, fmt.Errorf("load suite %s: no CUE package in the folder", name)
		}
		var cerr cueerrors.Error
		if errors.As(err, &cerr) {
			// A file of another system that does not decode: at its line.
			return nil, atUserFiles(cerr, cue.Value{})
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
	if derr := decodeSuite(v, s, errs != nil, insts[0].Files); derr != nil && errs == nil {
		return nil, cueerrors.Promote(derr, "decode suite")
	}
	checks := withoutFollowOns(checkSuite(s, v), errs)
	if readFailed || underFormats(errs) {
		// The cases and arms a failed reader, or another system's file CUE
		// refused, would have given are missing: that is the error, not
		// their absence.
		checks = withoutPaths(checks, "cases", "arms")
	}
	errs = atUserFiles(errs, v)
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
func buildSuite(dir, root string, src []byte) (v cue.Value, insts []*build.Instance, readFailed bool, err error) {
	modRoot := moduleRoot(dir, root)
	overlay := map[string]load.Source{}
	if src != nil {
		overlay[filepath.Join(dir, "suite.cue")] = load.FromBytes(src)
	}
	if _, err := os.Stat(filepath.Join(modRoot, "cue.mod", "module.cue")); err != nil {
		overlay[filepath.Join(modRoot, "cue.mod", "module.cue")] = load.FromString(moduleFile)
	}
	pkgDir := filepath.Join(modRoot, "cue.mod", "pkg", filepath.FromSlash(schema.ImportPath))
	for p, b := range schemaFiles() {
		overlay[filepath.Join(pkgDir, filepath.FromSlash(p))] = load.FromBytes(b)
	}
	cfg := &load.Config{Dir: dir, ModuleRoot: modRoot, Overlay: overlay}
	insts = load.Instances([]string{"."}, cfg)
	var multiple *load.MultiplePackageError
	if errors.As(insts[0].Err, &multiple) {
		// Load the suite's package; outsideFiles names every other file.
		cfg.Package = suitePackage(dir)
		insts = load.Instances([]string{"."}, cfg)
	}
	if insts[0].Err != nil {
		return cue.Value{}, nil, false, insts[0].Err
	}
	closed := true
	for _, f := range insts[0].Files {
		closed = closed && closedForm(f)
	}
	if !closed {
		insts = append(insts, load.Instances([]string{schema.ImportPath}, cfg)...)
		if insts[1].Err != nil {
			return cue.Value{}, nil, false, insts[1].Err
		}
	}
	vals, err := cuecontext.New().BuildInstances(insts)
	if err != nil {
		return cue.Value{}, nil, false, err
	}
	v, rerr := readFormats(vals[0], dir)
	if !closed {
		v = v.Unify(vals[1].LookupPath(pathSuite))
	}
	verr := v.Validate(cue.Concrete(true), cue.Final())
	if rerr == nil {
		return v, insts[:1], false, verr
	}
	if verr == nil {
		return v, insts[:1], true, rerr
	}
	// A reader that failed filled nothing: drop the follow-on errors of the
	// format packages that read its data.
	out := rerr
	for _, e := range cueerrors.Errors(verr) {
		if !strings.Contains(e.Error(), "undefined field: read") {
			out = cueerrors.Append(out, e)
		}
	}
	return v, insts[:1], true, out
}

// closedForm reports whether a file's only expression is `X.#Suite & {...}`
// with X the schema's import, or such a conjunction with other imported
// definitions, as `schema.#Suite & gstack.#Suite & {...}`: a conjunction with
// a definition is closed, so a second unification with #Suite (a second
// evaluation of every case) would find nothing more.
func closedForm(f *ast.File) bool {
	local := ""
	imported := map[string]bool{}
	var exprs []ast.Expr
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.ImportDecl:
			for _, spec := range d.Specs {
				path := strings.Trim(spec.Path.Value, `"`)
				name := path[strings.LastIndex(path, "/")+1:]
				if spec.Name != nil {
					name = spec.Name.Name
				}
				imported[name] = true
				if path == schema.ImportPath {
					local = name
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
	suite, structs := false, 0
	for _, x := range conjuncts(exprs[0]) {
		switch x := x.(type) {
		case *ast.StructLit:
			structs++
		case *ast.SelectorExpr:
			id, ok := x.X.(*ast.Ident)
			name, _, _ := ast.LabelName(x.Sel)
			if !ok || !imported[id.Name] || !strings.HasPrefix(name, "#") {
				return false // not an imported definition
			}
			suite = suite || id.Name == local && name == "#Suite"
		default:
			return false
		}
	}
	return suite && structs == 1
}

// conjuncts are the terms of a chain of &, in order.
func conjuncts(x ast.Expr) []ast.Expr {
	if bin, ok := x.(*ast.BinaryExpr); ok && bin.Op == token.AND {
		return append(conjuncts(bin.X), conjuncts(bin.Y)...)
	}
	return []ast.Expr{x}
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
func RepositoryRoot(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if d == filepath.Dir(d) {
			return dir
		}
	}
}

// schemaFiles are the schema a suite is loaded against; a test swaps it to check that Go
// refuses what the schema declares and Go does not mirror.
var schemaFiles = schema.Files

// decodeSuite decodes a validated suite value into s. Cases, the bulk of a
// large suite, are decoded concurrently, by lookup (decode.go) when the
// schema's #Case has no field Go lacks, else through JSON; files are the
// suite's own, whose literals tell which fields a case has.
//
// When lenient, parts that do not decode (because validation failed) are
// skipped, so that checks can still run on the rest.
func decodeSuite(v cue.Value, s *Suite, lenient bool, files []*ast.File) error {
	raw := map[string]json.RawMessage{}
	it, err := v.Fields()
	if err != nil {
		return err
	}
	for it.Next() {
		name := it.Selector().Unquoted()
		if name == "formats" {
			// Other systems' inputs: their cases are in `cases`.
			s.Formats = fieldOrder(it.Value())
			slices.Sort(s.Formats)
			continue
		}
		if name != "cases" {
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
	cit, err := v.LookupPath(pathCases).Fields(cue.Patterns(true))
	if err != nil {
		return err
	}
	byLookup, patterns := !lenient, 0
	var caseShape *shape
	for cit.Next() {
		if cit.Selector().ConstraintType() == cue.PatternConstraint {
			// #Case, the constraint every case meets.
			patterns++
			byLookup = byLookup && mirrored(cit.Value(), caseType)
			caseShape = shapeOf(cit.Value(), caseType)
			continue
		}
		ids = append(ids, cit.Selector().Unquoted())
		vals = append(vals, cit.Value())
	}
	byLookup = byLookup && patterns > 0
	var lits map[string][]*ast.StructLit
	if byLookup && patterns == 1 && caseShape != nil && len(s.Formats) == 0 {
		// Cases read from other systems' files have no literal to go by.
		lits, _ = caseLiterals(files)
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
				if byLookup {
					var src *sourceSet
					if len(s.Formats) > 0 {
						src = newSourceSet(s.Dir)
					}
					c, err := decodeCase(vals[i], lits[ids[i]], caseShape, src)
					if err == nil {
						if src != nil && lits[ids[i]] != nil {
							c.Sources = caseSources(vals[i], s.Dir)
						} else {
							c.Sources = src.list()
						}
						cases[i] = c
						continue
					}
					if errors.Is(err, errLookupDiffers) {
						errs[i] = fmt.Errorf("decode case %s: %w", ids[i], err)
						continue
					}
					// Decoded through JSON, whose error names what went wrong.
				}
				b, err := vals[i].MarshalJSON()
				if err == nil {
					err = decodeStrict(b, &cases[i])
					if err != nil {
						err = fmt.Errorf("decode case %s: %w", ids[i], err)
					} else if len(s.Formats) > 0 {
						cases[i].Sources = caseSources(vals[i], s.Dir)
					}
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
		if err := decodeStrict(one, s); err != nil && !lenient {
			return fmt.Errorf("decode suite field %s: %w", name, err)
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
	s.AgentOrder = fieldOrder(v.LookupPath(pathAgents))
	return nil
}

// decodeStrict decodes JSON exported from a validated suite into out and refuses a field
// out lacks. The schema's definitions are closed, so a user's stray field fails CUE's
// validation first; a field that gets here unknown is one the schema declares and the Go
// mirror does not, and would otherwise be dropped without a word.
func decodeStrict(b []byte, out any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("the schema and skillgate's Go mirror of it disagree: %w", err)
	}
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
