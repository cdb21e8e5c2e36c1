package suitetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// baseSuite is a valid two-file suite with a skill and a fixture; each test
// case edits it.
var BaseSuite = map[string]string{
	"skills/cl/SKILL.md":               "---\nname: cl\ndescription: Writes changelog entries.\n---\n# cl\nSee references/format.md.\n",
	"skills/cl/references/format.md":   "# Format\n",
	"suite/fixtures/repo/CHANGELOG.md": "# Changelog\n",
	"suite/suite.cue": `package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/policies"
)

schema.#Suite & {
	name: "cl"
	skills: cl: path: "../skills/cl"
	agent: agents.command & {command: ["sh", "-c", "echo hi"]}
	judge: provider: *"scripted" | _
	limits: timeout: "2m"
	arms: {
		none: {}
		forced: {skills: ["cl"], activation: "forced"}
	}
	policy: policies.advisory & {uplift: minPoints: 15}
}
`,
	"suite/cases.cue": `package s

import "skillgate.dev/schema"

schema.#Suite & {
	cases: a: {
		prompt:  "Add an entry."
		fixture: "fixtures/repo"
		split:   "validation"
		routing: skills: required: ["cl"]
		routing: references: required: ["cl/references/format.md"]
		writes: ["CHANGELOG.md"]
		assert: [
			{file: "CHANGELOG.md", contains: "retry"},
			{answer: {notMatches: "(?i)I cannot"}},
			{code: {notMatches: "rm -rf"}},
			{run: "test -f \"$WORLD/CHANGELOG.md\""},
		]
		rubric: ["The entry is under Unreleased."]
	}
}
`,
}

// writeSuite lays out files under a fresh repository and returns its root.
func WriteSuite(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, body := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// edit returns a copy of baseSuite with one replacement in one file, failing
// the test if the text to replace is absent (so a test cannot silently test
// the unedited suite).
func Edit(t *testing.T, file, old, new string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for k, v := range BaseSuite {
		out[k] = v
	}
	if !strings.Contains(out[file], old) {
		t.Fatalf("%s does not contain %q", file, old)
	}
	out[file] = strings.Replace(out[file], old, new, 1)
	return out
}
