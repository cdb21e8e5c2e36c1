// Package skillcreator is the Go side of Anthropic's skill-creator format:
// CUE reads evals/evals.json and trigger eval sets itself
// (schema/formats/skillcreator), so this package only writes the suite
// that names them (Import).
package skillcreator

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"cuelang.org/go/cue/format"

	"github.com/skillgate/skillgate/pipeline"
)

// EvalsFile is where skill-creator keeps a skill's evals, from the skill
// folder.
const EvalsFile = "evals/evals.json"

// triggerSet is one entry of a trigger eval set, as Import recognizes it.
type triggerSet []struct {
	ShouldTrigger *bool `json:"should_trigger"`
}

// Import writes into out a suite.cue that reads the skill-creator evals at
// src as they are: src is a skill folder (SKILL.md, evals/evals.json and,
// when there is one, a trigger eval set under evals/), or its evals.json.
// CUE's @embed reads no file above the suite's folder, and a suite inside
// the skill would be installed with it, so out must be a folder above the
// skill's. It refuses to overwrite a suite.cue and returns the files
// written.
func Import(src, out string) ([]string, error) {
	skill, err := skillFolder(src)
	if err != nil {
		return nil, fmt.Errorf("import skill-creator %s: %w", src, err)
	}
	outAbs, err := filepath.Abs(out)
	if err != nil {
		return nil, fmt.Errorf("import skill-creator: %w", err)
	}
	rel, err := filepath.Rel(outAbs, skill)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("import skill-creator %s: the suite folder %s must be above the skill folder %s (CUE's @embed reads no file above the suite's folder, and a suite inside the skill would be installed with it)", src, out, skill)
	}
	evals := filepath.Join(skill, filepath.FromSlash(EvalsFile))
	var name string
	hasEvals := false
	if b, err := os.ReadFile(evals); err == nil {
		var doc struct {
			SkillName string            `json:"skill_name"`
			Evals     []json.RawMessage `json:"evals"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("import skill-creator: read %s: %w", evals, err)
		}
		name, hasEvals = doc.SkillName, true
	} else if !os.IsNotExist(err) {
		return nil, fmt.Errorf("import skill-creator: %w", err)
	}
	triggers := findTriggerSet(filepath.Join(skill, "evals"))
	if !hasEvals && triggers == "" {
		return nil, fmt.Errorf("import skill-creator %s: no %s and no trigger eval set (a JSON list of {query, should_trigger}) in %s", src, EvalsFile, filepath.Join(skill, "evals"))
	}
	if name == "" {
		name = filepath.Base(skill)
	}
	target := filepath.Join(out, "suite.cue")
	if _, err := os.Stat(target); err == nil {
		return nil, fmt.Errorf("import skill-creator: %s exists; not overwriting it", target)
	}
	slash := func(p string) string {
		r, _ := filepath.Rel(outAbs, p)
		return filepath.ToSlash(r)
	}
	var b strings.Builder
	b.WriteString("@extern(embed)\n\npackage evals\n\nimport (\n\t\"skillgate.dev/schema\"\n\t\"skillgate.dev/schema/agents\"\n\t\"skillgate.dev/schema/formats/skillcreator\"\n)\n\n")
	b.WriteString("// skill-creator's evals, read as they are: edit them, not this file.\n")
	b.WriteString("schema.#Suite & skillcreator.#Suite & {\n")
	fmt.Fprintf(&b, "\tname: %q\n", suiteName(name))
	b.WriteString("\tformats: skillCreator: {\n")
	fmt.Fprintf(&b, "\t\tskill: %q\n", slash(skill))
	if hasEvals {
		fmt.Fprintf(&b, "\t\tevals: _ @embed(file=%q)\n", slash(evals))
	}
	if triggers != "" {
		fmt.Fprintf(&b, "\t\ttriggers: _ @embed(file=%q)\n", slash(triggers))
	}
	b.WriteString("\t}\n")
	b.WriteString("\t// The agent with and without the skill; a real provider needs its key\n\t// (ANTHROPIC_API_KEY) on the host.\n\tagent: agents.claudeCode\n")
	if hasEvals {
		b.WriteString("\t// The evals' expectations are graded by this judge.\n\tjudge: provider: \"anthropic\"\n")
	}
	b.WriteString("}\n")
	src2, err := format.Source([]byte(b.String()))
	if err != nil {
		return nil, fmt.Errorf("import skill-creator: %w", err)
	}
	if err := pipeline.WriteFile(target, src2); err != nil {
		return nil, fmt.Errorf("import skill-creator: %w", err)
	}
	return []string{target}, nil
}

// skillFolder is the skill folder of src: src itself, or the folder above
// the evals/ folder of an evals.json.
func skillFolder(src string) (string, error) {
	abs, err := filepath.Abs(src)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		abs = filepath.Dir(filepath.Dir(abs))
	}
	if _, err := os.Stat(filepath.Join(abs, "SKILL.md")); err != nil {
		return "", fmt.Errorf("no SKILL.md in %s", abs)
	}
	return abs, nil
}

// findTriggerSet is the first JSON file of dir, in name order, other than
// evals.json, that is a list of entries each with should_trigger; "" when
// there is none.
func findTriggerSet(dir string) string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, f := range files {
		if filepath.Base(f) == filepath.Base(EvalsFile) {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var set triggerSet
		if json.Unmarshal(b, &set) != nil || len(set) == 0 {
			continue
		}
		ok := true
		for _, e := range set {
			ok = ok && e.ShouldTrigger != nil
		}
		if ok {
			return f
		}
	}
	return ""
}

// nonName runs of characters a suite name cannot hold.
var nonName = regexp.MustCompile(`[^a-z0-9._-]+`)

// suiteName is a skill name as a suite name.
func suiteName(skill string) string {
	n := strings.Trim(nonName.ReplaceAllString(strings.ToLower(skill), "-"), "-._")
	if n == "" {
		return "skill-creator"
	}
	return n
}
