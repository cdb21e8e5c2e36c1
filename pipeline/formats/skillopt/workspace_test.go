package skillopt

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestTreeRevisionIsSkillOpts: the example skill's revision is the one
// SkillOpt's tree digest gives (computed with its algorithm under Node:
// localeCompare order, "path\0sha256" records), and names sort as
// localeCompare sorts them, not byte-wise.
func TestTreeRevisionIsSkillOpts(t *testing.T) {
	got, err := TreeRevision(filepath.Join(example, ".skillopt/changelog/evaluate/candidate/skills/changelog"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "4243998513c0177bba86f68f720e25815dead7dc492fce51d346a4bba198680a"; got != want {
		t.Errorf("revision %s, SkillOpt's is %s", got, want)
	}
	names := []string{"SKILL.md", "references/x.md", "_a", "-b", "a-b", "a_b", "A", "a", "10", "9", "a.md", "a/b"}
	sort.SliceStable(names, func(i, j int) bool { return localeOrder.CompareString(names[i], names[j]) < 0 })
	// Node: [...].sort((a, b) => a.localeCompare(b))
	if want := []string{"_a", "-b", "10", "9", "a", "A", "a_b", "a-b", "a.md", "a/b", "references/x.md", "SKILL.md"}; !slices.Equal(names, want) {
		t.Errorf("order %v, localeCompare's is %v", names, want)
	}
}

// TestCaseDigestIgnoresLayout: a case's digest is that of SkillOpt's
// serialization, so a line reformatted or missing defaults keeps it.
func TestCaseDigestIgnoresLayout(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(example, ".skillopt/changelog/release/data/test-frozen.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	line := b[:len(b)-1]
	want := sha256Hex(line)
	got, err := CaseDigest(line)
	if err != nil || got != want {
		t.Fatalf("digest %s (%v), the line's is %s", got, err, want)
	}
	short := []byte(`{ "id": "changelog-frozen-fix", "title": "Record the fix once more, frozen", "skill": "changelog",
		"kind": "artifact", "split": "test-frozen", "prompt": "Write the changelog entry for NOTES.md's change.", "fixture": "retry-fix",
		"expectedSkills": ["changelog"], "assertions": [{"kind": "contains", "value": "Unreleased", "caseSensitive": true}, {"kind": "file-exists", "value": "CHANGELOG.md"}],
		"oracleStrength": "deterministic-output", "evidenceStatus": "executable", "tags": ["markdown"], "rationale": "The frozen release check of the fix entry." }`)
	if got, err := CaseDigest(short); err != nil || got != want {
		t.Errorf("reformatted line: digest %s (%v), want %s", got, err, want)
	}
}

// TestTranslateRegex: what RE2 can say is translated, the rest refused.
func TestTranslateRegex(t *testing.T) {
	for _, tc := range []struct{ in, flags, want, err string }{
		{`^Summary: .{1,80}$`, "m", `(?m)^Summary: .{1,80}$`, ""},
		{`a\/b`, "i", `(?i)a/b`, ""},
		{`caf\u00e9`, "", `caf\x{00e9}`, ""},
		{`x[^]y`, "is", `(?is)x[\s\S]y`, ""},
		{`(?<year>\d{4})`, "", `(?<year>\d{4})`, ""},
		{`foo(?=bar)`, "", "", "look-around"},
		{`(?<!x)y`, "", "", "look-around"},
		{`(a)\1`, "", "", "back-reference"},
		{`a`, "v", "", "no RE2 equivalent"},
	} {
		got, err := TranslateRegex(tc.in, tc.flags)
		if tc.err != "" {
			if err == nil || !contains(err.Error(), tc.err) {
				t.Errorf("%s: %q, %v; want an error about %s", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s /%s: %q, %v; want %q", tc.in, tc.flags, got, err, tc.want)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
