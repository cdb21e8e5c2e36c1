package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/load"

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
	return LoadSuiteIn(abs, repositoryRoot(abs))
}

// LoadSuiteIn is LoadSuite for a suite inside the repository at root, which
// its paths must not leave.
func LoadSuiteIn(dir, root string) (*Suite, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("load suite %s: %w", dir, err)
	}
	if st, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("load suite %s: %w", dir, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("load suite %s: not a folder", dir)
	}
	v, insts, err := buildSuite(abs, root)
	if err != nil {
		return nil, err
	}
	s := &Suite{Dir: abs, Root: root}
	if err := v.Decode(s); err != nil {
		return nil, cueerrors.Promote(err, "decode suite")
	}
	var errs cueerrors.Error
	for i, c := range s.Cases {
		c.ID = i
		s.Cases[i] = c
	}
	s.CaseOrder = fieldOrder(v.LookupPath(pathCases))
	s.ArmOrder = fieldOrder(v.LookupPath(pathArms))
	errs = cueerrors.Append(errs, checkDuplicateCases(insts))
	errs = cueerrors.Append(errs, checkSuite(s, v))
	if errs != nil {
		return nil, errs
	}
	return s, nil
}

// buildSuite loads the package in dir with the embedded schema overlaid
// under its module's cue.mod/pkg, and returns the suite unified with #Suite
// and validated.
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
	insts := load.Instances([]string{".", schema.ImportPath}, cfg)
	for _, inst := range insts {
		if inst.Err != nil {
			return cue.Value{}, nil, inst.Err
		}
	}
	ctx := cuecontext.New()
	vals, err := ctx.BuildInstances(insts)
	if err != nil {
		return cue.Value{}, nil, err
	}
	def := vals[1].LookupPath(pathSuite)
	v := vals[0].Unify(def)
	if err := v.Validate(cue.Concrete(true), cue.Final()); err != nil {
		return cue.Value{}, nil, err
	}
	return v, insts[:1], nil
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
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
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
