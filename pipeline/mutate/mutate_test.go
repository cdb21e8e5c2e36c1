package mutate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readSkill reads a skill folder as Derive takes it.
func readSkill(t *testing.T, key, dir string) Skill {
	t.Helper()
	sk := Skill{Key: key, Files: map[string]File{}}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		sk.Files[filepath.ToSlash(rel)] = File{Data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return sk
}

func ids(ms []Mutant) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

// The repository's changelog skill: a title, five sections, one
// reference, one single-line rule.
func TestDeriveChangelogSkill(t *testing.T) {
	sk := readSkill(t, "changelog", "../../skills/changelog")
	ms, err := Derive(sk, Options{Operators: Operators, Others: map[string]string{"release": "Cut a release."}, Budgets: map[string]int{"claude-code": 1024, "tiny": 80}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"section-before-you-edit", "section-where-the-entry-goes", "section-how-the-entry-reads", "section-never", "section-your-answer",
		"reference-references-categories-md", "empty-body", "blank-description", "swap-description-release", "cut-description-80", "invert-line-24",
	}
	if got := ids(ms); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("mutants:\n got %q\nwant %q", got, want)
	}
	for _, m := range ms {
		if m.Tree.Digest == TreeOf(sk.Files).Digest {
			t.Errorf("%s: same tree as the skill", m.ID)
		}
		if m.Operator == Section && !strings.Contains(m.What, m.Section) {
			t.Errorf("%s: what %q does not name its section %q", m.ID, m.What, m.Section)
		}
	}
	never := ms[3]
	md := string(never.Files["SKILL.md"].Data)
	if strings.Contains(md, "## Never") || strings.Contains(md, "Never copy secrets") || !strings.Contains(md, "## Your answer") || !strings.Contains(md, "## How the entry reads") {
		t.Errorf("section-never deletes more or less than its section:\n%s", md)
	}
	inv := string(ms[10].Files["SKILL.md"].Data)
	if !strings.Contains(inv, "- Never under `## [Unreleased]`") {
		t.Errorf("invert-line-24 did not invert the rule:\n%s", inv)
	}
	cut := parseSkillMD(string(ms[9].Files["SKILL.md"].Data)).description()
	if len([]rune(cut)) != 80 || !strings.HasPrefix(parseSkillMD(string(sk.Files["SKILL.md"].Data)).description(), cut) {
		t.Errorf("cut-description-80: %q", cut)
	}
	if _, ok := ms[5].Files["references/categories.md"]; ok {
		t.Error("reference mutant kept its file")
	}
	if d := parseSkillMD(string(ms[7].Files["SKILL.md"].Data)); d.description() != "" || !strings.Contains(string(ms[7].Files["SKILL.md"].Data), "name: changelog") {
		t.Errorf("blank-description: %q", ms[7].Files["SKILL.md"].Data)
	}
}

// Headings in fenced code are not sections; a block-scalar description is
// replaced whole; "must not" inverts to "must"; a multi-line item is no
// single-line rule; no operator, no mutant.
func TestDeriveShapes(t *testing.T) {
	md := "---\nname: x\ndescription: >\n  Does x.\n  Use it.\nlicense: MIT\n---\n# X\n\n## One\n\n```md\n## Not a section\n```\n- You must not push.\n- Always\n  wrap.\n\n## Two\n\ntext\n"
	sk := Skill{Key: "x", Files: map[string]File{"SKILL.md": {Data: []byte(md)}}}
	ms, err := Derive(sk, Options{Operators: []string{Section, BlankDescription, Invert}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ids(ms), " "); got != "section-one section-two blank-description invert-line-15" {
		t.Fatalf("mutants: %s", got)
	}
	if got := string(ms[2].Files["SKILL.md"].Data); !strings.HasPrefix(got, "---\nname: x\ndescription: \"\"\nlicense: MIT\n---\n") {
		t.Errorf("blank-description:\n%s", got)
	}
	if got := string(ms[3].Files["SKILL.md"].Data); !strings.Contains(got, "- You must push.\n") {
		t.Errorf("invert:\n%s", got)
	}
	if got := string(ms[0].Files["SKILL.md"].Data); got != "---\nname: x\ndescription: >\n  Does x.\n  Use it.\nlicense: MIT\n---\n# X\n\n## Two\n\ntext\n" {
		t.Errorf("section-one:\n%s", got)
	}
	if ms, _ := Derive(sk, Options{}); len(ms) != 0 {
		t.Errorf("no operators gave %d mutants", len(ms))
	}
	if _, err := Derive(Skill{Key: "y", Files: map[string]File{}}, Options{Operators: Operators}); err == nil || !strings.Contains(err.Error(), "no SKILL.md") {
		t.Errorf("a skill without SKILL.md: %v", err)
	}
}

func TestDiff(t *testing.T) {
	sk := Skill{Key: "x", Files: map[string]File{"SKILL.md": {Data: []byte("a\nb\nc\nd\ne\nf\ng\n")}, "ref.md": {Data: []byte("r\n")}}}
	m := Mutant{Files: map[string]File{"SKILL.md": {Data: []byte("a\nb\nc\nD\ne\nf\ng\n")}}}
	want := "--- a/SKILL.md\n+++ b/SKILL.md\n@@ -2,5 +2,5 @@\n b\n c\n-d\n+D\n e\n f\n--- a/ref.md\n+++ /dev/null\n@@ -1 +0,0 @@\n-r\n"
	if got := Diff(sk, m); got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
}
