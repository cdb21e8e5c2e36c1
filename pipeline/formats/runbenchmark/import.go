package runbenchmark

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/encoding/yaml"

	"github.com/skillgate/skillgate/pipeline"
)

// DefinitionsDir is where run-benchmark keeps its definitions, from the
// repository root.
const DefinitionsDir = "specs/benchmarks"

// skillsDirs are the folders, from a repository root, where a definition's
// skill is looked for when importing.
var skillsDirs = []string{"skills", ".claude/skills", ".agents/skills"}

// definitionFile is what Import reads of a definition.
type definitionFile struct {
	path   string // absolute
	skill  string
	rubric bool
}

// Import writes into out a suite.cue that reads run-benchmark's
// definitions at src as they are: src is a repository holding
// specs/benchmarks/, that folder, or one definition file. CUE's @embed
// reads no file above the suite's folder, so out must be src's folder or
// one above it. It refuses to overwrite a suite.cue and returns the files
// written.
func Import(src, out string) ([]string, error) {
	defsDir, single, err := locate(src)
	if err != nil {
		return nil, fmt.Errorf("import run-benchmark %s: %w", src, err)
	}
	outAbs, err := filepath.Abs(out)
	if err != nil {
		return nil, fmt.Errorf("import run-benchmark: %w", err)
	}
	rel, err := filepath.Rel(outAbs, defsDir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("import run-benchmark %s: the suite folder %s must hold the definitions (CUE's @embed reads no file above the suite's folder): write it in %s or a folder above", src, out, defsDir)
	}
	defs, err := readDefinitions(defsDir, single)
	if err != nil {
		return nil, fmt.Errorf("import run-benchmark %s: %w", src, err)
	}
	if len(defs) == 0 {
		return nil, fmt.Errorf("import run-benchmark %s: no benchmark definition (a YAML file with skill and scenarios) in %s", src, defsDir)
	}
	target := filepath.Join(out, "suite.cue")
	if _, err := os.Stat(target); err == nil {
		return nil, fmt.Errorf("import run-benchmark: %s exists; not overwriting it", target)
	}
	src2, err := suiteSource(outAbs, defsDir, single, defs)
	if err != nil {
		return nil, fmt.Errorf("import run-benchmark %s: %w", src, err)
	}
	if err := pipeline.WriteFile(target, src2); err != nil {
		return nil, fmt.Errorf("import run-benchmark: %w", err)
	}
	return []string{target}, nil
}

// locate finds the definitions' folder of src, and the one definition file
// when src is a file.
func locate(src string) (dir, single string, err error) {
	abs, err := filepath.Abs(src)
	if err != nil {
		return "", "", err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", "", err
	}
	if !st.IsDir() {
		return filepath.Dir(abs), abs, nil
	}
	if st, err := os.Stat(filepath.Join(abs, filepath.FromSlash(DefinitionsDir))); err == nil && st.IsDir() {
		return filepath.Join(abs, filepath.FromSlash(DefinitionsDir)), "", nil
	}
	return abs, "", nil
}

// readDefinitions reads the definitions of dir (or the single file), in
// name order; YAML files that are no definition (no skill or no
// scenarios) are left out.
func readDefinitions(dir, single string) ([]definitionFile, error) {
	files := []string{single}
	if single == "" {
		var err error
		if files, err = filepath.Glob(filepath.Join(dir, "*.yaml")); err != nil {
			return nil, err
		}
	}
	ctx := cuecontext.New()
	var defs []definitionFile
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		f, err := yaml.Extract(p, b)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
		v := ctx.BuildFile(f)
		skill, err := v.LookupPath(cue.ParsePath("skill")).String()
		if err != nil || !v.LookupPath(cue.ParsePath("scenarios")).Exists() {
			if single != "" {
				return nil, fmt.Errorf("read %s: no skill and scenarios: not a benchmark definition", p)
			}
			continue
		}
		d := definitionFile{path: p, skill: skill}
		if it, err := v.LookupPath(cue.ParsePath("scenarios")).List(); err == nil {
			for it.Next() {
				t, _ := it.Value().LookupPath(cue.ParsePath("grader.type")).String()
				d.rubric = d.rubric || t == "rubric"
			}
		}
		defs = append(defs, d)
	}
	return defs, nil
}

// identifier is what a folder name becomes as a CUE package and suite name.
var nonName = regexp.MustCompile(`[^a-z0-9]+`)

// suiteSource is the suite.cue Import writes.
func suiteSource(out, defsDir, single string, defs []definitionFile) ([]byte, error) {
	slash := func(p string) string {
		r, _ := filepath.Rel(out, p)
		return filepath.ToSlash(r)
	}
	name := strings.Trim(nonName.ReplaceAllString(strings.ToLower(filepath.Base(out)), "-"), "-")
	if name == "" || name == "benchmarks" || name == "evals" || name == "specs" {
		name = "run-benchmark"
	}
	pkg := "benchmarks"
	var b strings.Builder
	fmt.Fprintf(&b, "@extern(embed)\n\npackage %s\n\n", pkg)
	b.WriteString("import (\n\t\"skillgate.dev/schema\"\n\t\"skillgate.dev/schema/agents\"\n\t\"skillgate.dev/schema/formats/runbenchmark\"\n)\n\n")
	b.WriteString("// run-benchmark's definitions, read as they are: edit them, not this file.\n")
	b.WriteString("// `skillgate run-benchmark SKILL` (or --all) runs them and writes the\n")
	b.WriteString("// reports beside them, in reports/.\n")
	b.WriteString("schema.#Suite & runbenchmark.#Suite & {\n")
	fmt.Fprintf(&b, "\tname: %q\n", name)
	b.WriteString("\tformats: runBenchmark: {\n")
	switch {
	case single != "":
		fmt.Fprintf(&b, "\t\tdefinitions: %q: _ @embed(file=%q)\n", slash(single), slash(single))
	case len(defs) < countYAML(defsDir):
		// Some YAML files there are no definitions: name each one.
		for _, d := range defs {
			fmt.Fprintf(&b, "\t\tdefinitions: %q: _ @embed(file=%q)\n", slash(d.path), slash(d.path))
		}
	default:
		glob := "*.yaml"
		if r := slash(defsDir); r != "." {
			glob = r + "/*.yaml"
		}
		fmt.Fprintf(&b, "\t\tdefinitions: _ @embed(glob=%q)\n", glob)
	}
	skillsDir := findSkillsDir(defsDir, defs)
	if skillsDir != "" {
		fmt.Fprintf(&b, "\t\tskillsDir: %q\n", slash(skillsDir))
	}
	b.WriteString("\t}\n")
	if skillsDir == "" {
		b.WriteString("\t// No folder holds the definitions' skills as <folder>/<skill>/SKILL.md:\n\t// name each skill's folder.\n")
		for _, d := range defs {
			fmt.Fprintf(&b, "\tskills: %q: path: \"TODO/%s\"\n", d.skill, d.skill)
		}
	}
	b.WriteString("\t// The agent with and without the skill; a real provider needs its key\n\t// (ANTHROPIC_API_KEY) on the host.\n")
	b.WriteString("\tagent: agents.claudeCode\n")
	if slices.ContainsFunc(defs, func(d definitionFile) bool { return d.rubric }) {
		b.WriteString("\t// Rubric graders' criteria are answered by this judge.\n\tjudge: provider: \"anthropic\"\n")
	}
	b.WriteString("}\n")
	return format.Source([]byte(b.String()))
}

// countYAML counts the YAML files of dir.
func countYAML(dir string) int {
	m, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	return len(m)
}

// findSkillsDir is the first folder, from the definitions' folder up to
// the repository root, that holds every definition's skill as
// <dir>/<skill>/SKILL.md under one of skillsDirs.
func findSkillsDir(defsDir string, defs []definitionFile) string {
	root := repositoryRoot(defsDir)
	for d := defsDir; ; d = filepath.Dir(d) {
		for _, sd := range skillsDirs {
			dir := filepath.Join(d, filepath.FromSlash(sd))
			all := true
			for _, def := range defs {
				if _, err := os.Stat(filepath.Join(dir, def.skill, "SKILL.md")); err != nil {
					all = false
					break
				}
			}
			if all {
				return dir
			}
		}
		if d == root || d == filepath.Dir(d) {
			return ""
		}
	}
}

// repositoryRoot is the nearest folder from dir upwards holding .git, else
// dir (the suite loader's own rule, which this package cannot import).
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
