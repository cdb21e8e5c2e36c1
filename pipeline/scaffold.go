package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

var nonName = regexp.MustCompile(`[^a-z0-9._-]+`)

// SuiteName turns a folder name into a valid suite name.
func SuiteName(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	n := strings.Trim(nonName.ReplaceAllString(strings.ToLower(filepath.Base(abs)), "-"), "-._")
	if n == "" {
		n = "suite"
	}
	return n
}

// Scaffold writes a new suite into dir: a suite file, one case, one fixture
// and a skill stub, that passes vet as it is, plus the vendored schema for
// editors. It refuses a folder that already holds CUE files.
func Scaffold(dir string) ([]string, error) {
	if matches, _ := filepath.Glob(filepath.Join(dir, "*.cue")); len(matches) > 0 {
		return nil, fmt.Errorf("init suite: %s already holds CUE files (%s)", dir, filepath.Base(matches[0]))
	}
	name := SuiteName(dir)
	files := []struct{ path, body string }{
		{"suite.cue", strings.ReplaceAll(scaffoldSuite, "NAME", name)},
		{"cases.cue", scaffoldCases},
		{"skills/example/SKILL.md", scaffoldSkill},
		{"fixtures/example/NOTES.md", "# Notes\n\nThe retry loop now backs off exponentially.\n"},
	}
	var written []string
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.path))
		if _, err := os.Stat(p); err == nil {
			return written, fmt.Errorf("init suite: %s exists", p)
		}
		if err := WriteFile(p, []byte(f.body)); err != nil {
			return written, fmt.Errorf("init suite: %w", err)
		}
		written = append(written, f.path)
	}
	vendored, err := WriteSchema(dir)
	if err != nil {
		return written, fmt.Errorf("init suite: %w", err)
	}
	return append(written, vendored...), nil
}

const scaffoldSuite = `package suite

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/policies"
)

// Every file of a suite is one expression, schema.#Suite & {...}, so a
// misspelt field is an error at every level.
schema.#Suite & {
	name: "NAME"

	skills: example: path: "skills/example"

	// A command agent runs any program; its stdout is the final answer.
	// Swap in agents.claudeCode or agents.codex to evaluate a real agent.
	agent: agents.command & {
		command: ["sh", "-c", "cat \"$SKILLGATE_SKILLS_DIR/example/SKILL.md\" 2>/dev/null | head -n 1; echo done"]
	}

	trials: 3

	arms: {
		none: {}
		forced: {skills: ["example"], activation: "forced"}
		automatic: {skills: ["example"]}
	}

	policy: policies.advisory
}
`

const scaffoldCases = `package suite

import "skillgate.dev/schema"

schema.#Suite & {
	cases: "summarize-notes": {
		prompt:  "Summarize NOTES.md in one sentence."
		fixture: "fixtures/example"
		kind:    "task"
		split:   "train"
		routing: skills: required: ["example"]
		writes: []
		assert: [
			{file: "NOTES.md", unchanged: true},
			{answer: {notMatches: "(?i)I cannot"}},
		]
	}
}
`

const scaffoldSkill = `---
name: example
description: Example skill. Replace this description with when an agent should use the skill.
---

# Example

Write what the agent should do, step by step, and point to any reference
files in this folder that it should read.
`
