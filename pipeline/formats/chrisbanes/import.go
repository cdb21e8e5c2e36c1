package chrisbanes

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// routerSkill is their router: a skill whose job is to send the agent to
// the others, never counted in routing precision or recall.
const routerSkill = "using-chrisbanes-skills"

// Import writes into folder out the suite that reads the chrisbanes/skills
// evals tree at src (the repository, or its evals folder): its cases, with
// every skill of the repository's skills folder, their arms and the
// advisory policy, and returns the files written. CUE's @embed reads no
// file above the suite's folder, so out must be the evals folder or one
// above it; a folder already holding a suite is refused.
func Import(src, out string) ([]string, error) {
	evals, err := evalsFolder(src)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", src, err)
	}
	absOut, err := filepath.Abs(out)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", src, err)
	}
	rel, err := filepath.Rel(absOut, evals)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("import %s: the suite folder %s must hold the cases folder (CUE's @embed reads no file above its suite): write it into %s or a folder above it", src, out, evals)
	}
	if cues, _ := filepath.Glob(filepath.Join(absOut, "*.cue")); len(cues) > 0 {
		return nil, fmt.Errorf("import %s: %s already holds a suite (%s): not overwriting it", src, out, filepath.Base(cues[0]))
	}
	skills, router, err := repositorySkills(filepath.Dir(evals), absOut)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", src, err)
	}
	if err := os.MkdirAll(absOut, 0o755); err != nil {
		return nil, fmt.Errorf("import %s: %w", src, err)
	}
	prefix := filepath.ToSlash(rel) + "/"
	if rel == "." {
		prefix = ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, `@extern(embed)

package evals

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/formats/chrisbanes"
	"skillgate.dev/schema/policies"
)

// The chrisbanes/skills evals tree in %[1]s, read as it is: every
// cases/ID/case.json with its prompt.md, expectations.json and overlay/,
// over fixtures/FIXTURE; arms none, forced and automatic. Edit those
// files, not this one.
schema.#Suite & chrisbanes.#Suite & {
	name: %[2]q

	formats: chrisbanes: {
		cases:        _ @embed(glob="%[3]scases/*/case.json")
		expectations: _ @embed(glob="%[3]scases/*/expectations.json", allowEmptyGlob)
	}

	skills: {
`, filepath.ToSlash(rel), suiteName(filepath.Dir(evals)), prefix)
	for _, s := range skills {
		fmt.Fprintf(&b, "\t\t%q: path: %q\n", s.name, s.path)
	}
	b.WriteString("\t}\n")
	if router {
		fmt.Fprintf(&b, "\trouter: %q\n", routerSkill)
	}
	b.WriteString(`
	// Their recommended subject and judge; keep them unchanged across arms.
	agent: agents.codex & {model: "gpt-5.6-terra", effort: "medium"}
	judge: {provider: "openai", model: "gpt-5.6-sol"}

	trials: 3
	policy: policies.advisory
}
`)
	path := filepath.Join(absOut, "suite.cue")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return nil, fmt.Errorf("import %s: %w", src, err)
	}
	return []string{"suite.cue"}, nil
}

// evalsFolder finds the evals folder (the one holding cases/) at src.
func evalsFolder(src string) (string, error) {
	abs, err := filepath.Abs(src)
	if err != nil {
		return "", err
	}
	for _, dir := range []string{abs, filepath.Join(abs, "evals")} {
		if m, _ := filepath.Glob(filepath.Join(dir, "cases", "*", "case.json")); len(m) > 0 {
			return dir, nil
		}
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("read evals: %w", unwrap(err))
	}
	return "", fmt.Errorf("no cases/*/case.json in %s or in its evals folder", src)
}

type skillDir struct{ name, path string }

// repositorySkills lists the skills folder of the repository root, with
// paths relative to the suite folder out, and whether the router is one.
func repositorySkills(root, out string) ([]skillDir, bool, error) {
	dirs, err := filepath.Glob(filepath.Join(root, "skills", "*", "SKILL.md"))
	if err != nil {
		return nil, false, err
	}
	if len(dirs) == 0 {
		return nil, false, fmt.Errorf("no skills/*/SKILL.md in %s", root)
	}
	sort.Strings(dirs)
	var out2 []skillDir
	router := false
	for _, d := range dirs {
		name := filepath.Base(filepath.Dir(d))
		rel, err := filepath.Rel(out, filepath.Dir(d))
		if err != nil {
			return nil, false, err
		}
		out2 = append(out2, skillDir{name: name, path: filepath.ToSlash(rel)})
		router = router || name == routerSkill
	}
	return out2, router, nil
}

var nonName = regexp.MustCompile(`[^a-z0-9._-]+`)

// suiteName is the repository folder's name as a suite name.
func suiteName(root string) string {
	n := strings.Trim(nonName.ReplaceAllString(strings.ToLower(filepath.Base(root)), "-"), "-._")
	if n == "" {
		return "evals"
	}
	return n
}
