package benchmarkskill

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"
)

// Names in the repository layout benchmark-skill reads.
const (
	// SkillsDir and TestsDir are the two trees at the repository top:
	// tests/ mirrors skills/ by full path.
	SkillsDir = "skills"
	TestsDir  = "tests"
	// CaseFile is the file that makes a folder under tests/ a case.
	CaseFile = "case.md"
	// FixtureDir is a case folder's optional fixture, copied fresh into
	// every cell.
	FixtureDir = "fixture"
	// ReportsDir is the git-ignored folder under tests/ that holds the
	// reports; the reader never descends into it (nor any hidden folder).
	ReportsDir = ".reports"
)

// Field paths of formats.benchmarkSkill that the reader reads.
var (
	pathRoot   = cue.ParsePath("root")
	pathSkills = cue.ParsePath("skills")
)

// Folder names that become names in the suite: a skill's is its key (the
// Agent Skills rule, as #SkillName says), a case folder's the end of its case
// ID (#Name). The schema checks them again; here they are reported at the
// SKILL.md or case.md of the folder, not in the format package.
var (
	skillName  = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	caseFolder = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
)

// skill is a folder under skills/ holding a SKILL.md.
type skill struct {
	key string
	// rel is the folder relative to the repository top, as tests/
	// mirrors it ("skills/review/axi-review").
	rel  string
	abs  string
	file *token.File // its SKILL.md, for positions
	// cases are its case folders, by path.
	cases []*caseDir
}

// caseDir is a folder under tests/ holding a case.md.
type caseDir struct {
	id   string
	abs  string
	file *token.File
	c    *caseFile
	// fixture is the case's fixture folder, absolute; "" when it has none.
	fixture string
}

// Read reads the benchmark-skill tree that formats.benchmarkSkill names
// (in) for the suite in dir: every skill under skills/ (a folder with a
// SKILL.md) and every case folder under tests/ (a folder with a case.md,
// at the skill's path mirrored), and returns them as the CUE value the
// loader fills at formats.benchmarkSkill.read. Every literal carries its
// position in the case.md or SKILL.md it comes from, so the schema's
// conflicts and plan diffs name those files. Problems (a case.md that does
// not parse, a case folder that maps to no skill, a selected skill with no
// tests) are returned together as one cue errors.Error, each at its
// position.
func Read(dir string, in cue.Value) (ast.Expr, error) {
	root := "."
	rootPos := userPos(in)
	if v := in.LookupPath(pathRoot); v.Exists() {
		d, _ := v.Default()
		s, err := d.String()
		if err != nil {
			return nil, cueerrors.Newf(v.Pos(), "read benchmark-skill tree: root is not a folder path")
		}
		root = s
		if p := userPos(v); p.IsValid() {
			rootPos = p
		}
	}
	top := filepath.Join(dir, filepath.FromSlash(root))
	skills, err := readSkills(top)
	if err != nil {
		return nil, cueerrors.Newf(rootPos, "read benchmark-skill tree: %v", err)
	}
	cases, errs := readCases(top, skills)
	if errs != nil {
		// A skill whose case.md does not parse has tests all the same.
		return nil, errs
	}
	selected, errs := selectSkills(in, rootPos, skills, cases)
	if errs != nil {
		return nil, errs
	}

	skillFields := []ast.Decl{}
	caseFields := []ast.Decl{}
	for _, s := range selected {
		pos := s.file.Pos(0, token.NoRelPos)
		skillFields = append(skillFields, field(s.key, pos, ast.NewStruct(
			fieldAt("path", pos, str(rel(dir, s.abs), pos)),
			fieldAt("tests", pos, str(rel(dir, filepath.Join(top, TestsDir, filepath.FromSlash(s.rel))), pos)),
		)))
		for _, cd := range s.cases {
			caseFields = append(caseFields, field(cd.id, cd.file.Pos(0, token.NoRelPos), caseValue(dir, s, cd)))
		}
	}
	return ast.NewStruct(
		&ast.Field{Label: ast.NewIdent("skills"), Value: &ast.StructLit{Elts: skillFields}},
		&ast.Field{Label: ast.NewIdent("cases"), Value: &ast.StructLit{Elts: caseFields}},
	), nil
}

// userPos is where the user wrote v or, for a struct, its first field, so
// a problem of the tree is reported in the suite rather than at the
// schema's default; NoPos when v is all the schema's.
func userPos(v cue.Value) token.Pos {
	inUser := func(p token.Pos) bool {
		return p.IsValid() && !strings.Contains(filepath.ToSlash(p.Filename()), "/cue.mod/")
	}
	if p := v.Pos(); inUser(p) {
		return p
	}
	if it, err := v.Fields(); err == nil {
		for it.Next() {
			if p := it.Value().Pos(); inUser(p) {
				return p
			}
		}
	}
	return token.NoPos
}

// readSkills finds every skill under top/skills, sorted by path. A skill
// folder's own subfolders are its files, never other skills.
func readSkills(top string) ([]*skill, error) {
	base := filepath.Join(top, SkillsDir)
	if st, err := os.Stat(base); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("no %s/ folder at %s", SkillsDir, top)
	}
	var out []*skill
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if p != base && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		src, err := os.ReadFile(filepath.Join(p, "SKILL.md"))
		if err != nil {
			return nil
		}
		r, _ := filepath.Rel(top, p)
		out = append(out, &skill{key: d.Name(), rel: filepath.ToSlash(r), abs: p, file: tokenFile(filepath.Join(p, "SKILL.md"), src)})
		return filepath.SkipDir
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", base, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out, nil
}

// readCases finds and parses every case.md under top/tests and gives each
// case to the skill its folder mirrors. Case folders are taken in path
// order, which is the order the reports show them in.
func readCases(top string, skills []*skill) (map[string][]*caseDir, cueerrors.Error) {
	base := filepath.Join(top, TestsDir)
	byRel := map[string]*skill{}
	for _, s := range skills {
		byRel[s.rel] = s
	}
	var errs cueerrors.Error
	if st, err := os.Stat(base); err != nil || !st.IsDir() {
		return nil, nil
	}
	var dirs []string
	_ = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = cueerrors.Append(errs, cueerrors.Promote(fmt.Errorf("read %s: %w", p, err), ""))
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		if p != base && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(p, CaseFile)); err == nil {
			dirs = append(dirs, p)
			return filepath.SkipDir
		}
		return nil
	})
	sort.Strings(dirs)
	out := map[string][]*caseDir{}
	for _, p := range dirs {
		name := filepath.Join(p, CaseFile)
		src, err := os.ReadFile(name)
		if err != nil {
			errs = cueerrors.Append(errs, cueerrors.Promote(fmt.Errorf("read %s: %w", name, err), ""))
			continue
		}
		f := tokenFile(name, src)
		mirror, _ := filepath.Rel(base, filepath.Dir(p))
		mirror = filepath.ToSlash(mirror)
		s := byRel[mirror]
		if s == nil {
			errs = cueerrors.Append(errs, cueerrors.Newf(f.Pos(0, token.NoRelPos),
				"case folder %s maps to no skill: tests/ mirrors skills/ by path, and %s holds no SKILL.md", filepath.Base(p), mirror))
			continue
		}
		if name := filepath.Base(p); !caseFolder.MatchString(name) {
			errs = cueerrors.Append(errs, cueerrors.Newf(f.Pos(0, token.NoRelPos),
				"case folder name %q is not a case name: lower case letters, digits, '.', '_' and '-'", name))
			continue
		}
		c, perrs := parseCase(f, src)
		if perrs != nil {
			errs = cueerrors.Append(errs, perrs)
			continue
		}
		cd := &caseDir{id: s.key + "." + filepath.Base(p), abs: p, file: f, c: c}
		if st, err := os.Stat(filepath.Join(p, FixtureDir)); err == nil {
			if !st.IsDir() {
				errs = cueerrors.Append(errs, cueerrors.Newf(f.Pos(0, token.NoRelPos), "%s beside case.md is a file: a case's fixture is a folder", FixtureDir))
				continue
			}
			cd.fixture = filepath.Join(p, FixtureDir)
		}
		out[s.key] = append(out[s.key], cd)
		s.cases = append(s.cases, cd)
	}
	return out, errs
}

// selectSkills is the skills the suite benchmarks: those formats.benchmarkSkill.skills
// names, or else every skill that has tests. A named skill with no tests, or
// no tests at all, is reported.
func selectSkills(in cue.Value, rootPos token.Pos, skills []*skill, cases map[string][]*caseDir) ([]*skill, cueerrors.Error) {
	var errs cueerrors.Error
	byKey := map[string]*skill{}
	for _, s := range skills {
		if !skillName.MatchString(s.key) {
			if len(s.cases) > 0 {
				errs = cueerrors.Append(errs, cueerrors.Newf(s.file.Pos(0, token.NoRelPos),
					"skill folder name %q is not a skill name: lower case letters, digits and '-'", s.key))
			}
			continue
		}
		if prev := byKey[s.key]; prev != nil {
			errs = cueerrors.Append(errs, cueerrors.Newf(s.file.Pos(0, token.NoRelPos),
				"two skills are named %s: %s and %s; skill folder names must differ", s.key, prev.rel, s.rel))
			continue
		}
		byKey[s.key] = s
	}
	var out []*skill
	names := in.LookupPath(pathSkills)
	if !names.Exists() {
		for _, s := range skills {
			if len(s.cases) > 0 && byKey[s.key] == s {
				out = append(out, s)
			}
		}
		if len(out) == 0 && errs == nil && len(cases) == 0 {
			errs = cueerrors.Append(errs, cueerrors.Newf(rootPos, "no tests: no case folder with a %s under %s/", CaseFile, TestsDir))
		}
		return out, errs
	}
	list, err := names.List()
	if err != nil {
		return nil, cueerrors.Append(errs, cueerrors.Newf(names.Pos(), "skills is a list of skill names"))
	}
	seen := map[string]bool{}
	for list.Next() {
		v := list.Value()
		name, err := v.String()
		if err != nil {
			errs = cueerrors.Append(errs, cueerrors.Newf(v.Pos(), "skills lists skill names (folder names under %s/)", SkillsDir))
			continue
		}
		s := byKey[name]
		switch {
		case s == nil:
			errs = cueerrors.Append(errs, cueerrors.Newf(v.Pos(), "no skill named %s: no folder %s with a SKILL.md under %s/", name, name, SkillsDir))
		case len(s.cases) == 0:
			errs = cueerrors.Append(errs, cueerrors.Newf(v.Pos(), "skill %s has no tests: no case folder with a %s under %s/%s/", name, CaseFile, TestsDir, s.rel))
		case !seen[name]:
			seen[name] = true
			out = append(out, s)
		}
	}
	return out, errs
}

// caseValue is one case as the format package reads it.
func caseValue(dir string, s *skill, cd *caseDir) ast.Expr {
	c := cd.c
	at := func(t text) token.Pos { return cd.file.Pos(t.off, token.NoRelPos) }
	top := cd.file.Pos(0, token.NoRelPos)
	fields := []any{
		fieldAt("skill", top, str(s.key, top)),
		fieldAt("file", top, str(rel(dir, filepath.Join(cd.abs, CaseFile)), top)),
		fieldAt("description", at(c.description), str(c.description.s, at(c.description))),
		fieldAt("prompt", at(c.prompt), str(c.prompt.s, at(c.prompt))),
	}
	if c.seed != nil {
		var turns []ast.Expr
		for _, t := range c.seed {
			turns = append(turns, ast.NewStruct(
				fieldAt("role", at(t.role), str(t.role.s, at(t.role))),
				fieldAt("content", at(t.content), str(t.content.s, at(t.content))),
			))
		}
		fields = append(fields, fieldAt("seed", at(c.seed[0].role), ast.NewList(turns...)))
	}
	if h := c.hard; h != nil {
		fields = append(fields, fieldAt("hardAssertions", at(h.shell), ast.NewStruct(
			fieldAt("shell", at(h.shell), str(h.shell.s, at(h.shell))),
			fieldAt("script", at(h.script), str(h.script.s, at(h.script))),
			fieldAt("predicates", at(h.script), ast.NewList(predicateList(h.predicates, at)...)),
		)))
	}
	var soft []ast.Expr
	for _, t := range c.soft {
		soft = append(soft, str(t.s, at(t)))
	}
	fields = append(fields, fieldAt("softCriteria", at(c.soft[0]), ast.NewList(soft...)))
	if cd.fixture != "" {
		fields = append(fields, fieldAt("fixture", top, str(rel(dir, cd.fixture), top)))
	}
	return ast.NewStruct(fields...)
}

// HardAssertionName is the name of a case's hard-assertion checks: one per
// predicate, "hard assertion: PREDICATE", or the whole block's, "hard
// assertions"; reports find the gate by it.
const HardAssertionName = "hard assertion"

// predicateList is the hard assertions' predicates, each at its line and
// named for reports.
func predicateList(ps []text, at func(text) token.Pos) []ast.Expr {
	out := make([]ast.Expr, len(ps))
	for i, p := range ps {
		name := HardAssertionName + ": " + p.s
		if strings.Contains(p.s, "\n") {
			name = HardAssertionName + "s"
		}
		out[i] = ast.NewStruct(
			fieldAt("name", at(p), str(name, at(p))),
			fieldAt("run", at(p), str(p.s, at(p))),
		)
	}
	return out
}

// tokenFile is a file for positions in src, named by its absolute path.
func tokenFile(name string, src []byte) *token.File {
	f := token.NewFile(name, -1, len(src))
	f.SetLinesForContent(src)
	return f
}

// rel is p relative to the suite folder, slash-separated, as a suite's
// paths are written.
func rel(dir, p string) string {
	r, err := filepath.Rel(dir, p)
	if err != nil {
		return filepath.ToSlash(p)
	}
	return filepath.ToSlash(r)
}

// str is a string literal at pos.
func str(s string, pos token.Pos) ast.Expr {
	l := ast.NewString(s)
	l.ValuePos = pos
	return l
}

// field is a field with a quoted label at pos.
func field(label string, pos token.Pos, v ast.Expr) *ast.Field {
	l := ast.NewString(label)
	l.ValuePos = pos
	return &ast.Field{Label: l, Value: v}
}

// fieldAt is a field with an identifier label at pos.
func fieldAt(label string, pos token.Pos, v ast.Expr) *ast.Field {
	id := ast.NewIdent(label)
	id.NamePos = pos
	return &ast.Field{Label: id, Value: v}
}
