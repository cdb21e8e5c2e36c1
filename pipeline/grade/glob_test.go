package grade_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// TestGlobKnownAnswers holds glob assertions to the files Python 3.11's
// pathlib Path.glob names (is_file) in the same tree: hidden names, **
// at the start, middle and end, classes and their negation, case.
func TestGlobKnownAnswers(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{".scratch/to-plan/plan.md", ".scratch/to-plan/.hidden.md", ".scratch/to-plan/notes.txt", "a/x.md", "a/b/y.md", "a/b/c/z.md", "top.md", "docs/[x].md", "docs/a1.md", "docs/b2.MD"} {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string][]string{
		".scratch/to-plan/*.md": {".scratch/to-plan/.hidden.md", ".scratch/to-plan/plan.md"},
		"*.md":                  {"top.md"},
		"**/*.md":               {".scratch/to-plan/.hidden.md", ".scratch/to-plan/plan.md", "a/b/c/z.md", "a/b/y.md", "a/x.md", "docs/[x].md", "docs/a1.md", "top.md"},
		"a/**/*.md":             {"a/b/c/z.md", "a/b/y.md", "a/x.md"},
		"a/**":                  nil,
		"**":                    nil,
		"docs/[!b]*":            {"docs/[x].md", "docs/a1.md"},
		"docs/[ab]?.md":         {"docs/a1.md"},
		"docs/?[0-9].MD":        {"docs/b2.MD"},
		"a/*/c/*.md":            {"a/b/c/z.md"},
		"*/*/*.md":              {".scratch/to-plan/.hidden.md", ".scratch/to-plan/plan.md", "a/b/y.md"},
		"docs/[x].md":           nil,
		"**/b/**/*.md":          {"a/b/c/z.md", "a/b/y.md"},
		".scratch/**/*":         {".scratch/to-plan/.hidden.md", ".scratch/to-plan/notes.txt", ".scratch/to-plan/plan.md"},
	}
	w := grade.World{Fixture: dir}
	paths, err := w.Paths()
	if err != nil {
		t.Fatal(err)
	}
	for pattern, files := range want {
		var got []string
		for _, p := range paths {
			if grade.GlobMatch(pattern, p) {
				got = append(got, p)
			}
		}
		if !reflect.DeepEqual(got, files) {
			t.Errorf("%s: got %q, want %q", pattern, got, files)
		}
	}

	// The agent's changes count: a file it added, not one it deleted.
	w.Changed = t.TempDir()
	if err := os.WriteFile(filepath.Join(w.Changed, "new.md"), []byte("## Implementation slices\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.Changes = []grade.FileChange{{Path: "new.md", Kind: grade.ChangeAdded}, {Path: "top.md", Kind: grade.ChangeDeleted}}
	glob, count, text := "*.md", 1, "Implementation slices"
	checks, err := grade.GlobChecks(suite.Assertion{Glob: &glob, Count: &count, TextCheck: suite.TextCheck{Contains: &text}}, w)
	if err != nil {
		t.Fatal(err)
	}
	if len(checks) != 2 || !checks[0].Passed || !checks[1].Passed {
		t.Errorf("after the changes: %+v", checks)
	}
	glob = "**/*.md"
	checks, err = grade.GlobChecks(suite.Assertion{Glob: &glob, Count: &count, TextCheck: suite.TextCheck{Contains: &text}}, w)
	if err != nil {
		t.Fatal(err)
	}
	if len(checks) != 2 || checks[0].Passed || checks[0].Detail != "8 files match" || checks[1].Passed || !strings.HasSuffix(checks[1].Detail, ": not found") {
		t.Errorf("over every Markdown file: %+v", checks)
	}
}

// TestFileBullets: a bullets check on a file passes when one bullet of the
// section both names the change and links its pull request, and fails
// when the only link is an image or sits in inline code.
func TestFileBullets(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) {
		if err := os.WriteFile(filepath.Join(dir, "CHANGELOG.md"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := "CHANGELOG.md"
	a := suite.Assertion{File: &file, Bullets: &suite.BulletCheck{Heading: "Unreleased", Matches: []string{"(?i)cancell?ation"}, Links: []string{`(?i)\[#812\]\(https://github\.com/chrisbanes/skills/pull/812\)`}}}
	for _, tc := range []struct {
		text string
		pass bool
	}{
		{"## Unreleased\n\n- Fix Cancellation ([#812](https://github.com/chrisbanes/skills/pull/812))\n", true},
		{"## Unreleased\n\n- Fix cancellation\n- [#812](https://github.com/chrisbanes/skills/pull/812)\n", false},
		{"## Unreleased\n\n- Fix cancellation ![#812](https://github.com/chrisbanes/skills/pull/812)\n", false},
		{"## Unreleased\n\n- Fix cancellation `[#812](https://github.com/chrisbanes/skills/pull/812)`\n", false},
		{"## 1.4.0\n\n- Fix cancellation ([#812](https://github.com/chrisbanes/skills/pull/812))\n", false},
	} {
		write(tc.text)
		checks, err := grade.FileChecks(a, grade.World{Fixture: dir})
		if err != nil {
			t.Fatal(err)
		}
		if len(checks) != 1 || checks[0].Passed != tc.pass {
			t.Errorf("%q: %+v, want passed %v", tc.text, checks, tc.pass)
		}
	}
}
