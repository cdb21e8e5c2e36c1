package chrisbanes_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// plan is a to-plan plan that meets to-plan-specificity-calibration's
// expectations: slice T2 depends on T1.
const plan = `<!-- to-plan:conversation-plan:v1 id=123e4567-e89b-42d3-a456-426614174000 -->
# Quote missing paths

## Implementation context

Existing: manifest_reader.py defines missing_manifest_error; profile_loader.py
defines invalid_profile_error. New: path_diagnostics.py with quote_path.

## Implementation slices

### 1. Quote the missing-manifest path

**Task ID:** ` + "`T1`" + `
**Depends on:** ` + "`none`" + `

**Files and symbols:** path_diagnostics.py quote_path, manifest_reader.py.
**Test:** expect "manifest not found: 'configs/team manifest.json'".
**Validate:** python3 -m unittest tests.test_manifest_reader
**Complete when:** the test passes.

### 2. Quote the invalid-profile path

**Task ID:** ` + "`T2`" + `
**Depends on:** ` + "`T1`" + `

**Files and symbols:** profile_loader.py invalid_profile_error.
**Test:** expect "invalid profile at 'configs/team manifest.json'".
**Validate:** python3 -m unittest tests.test_profile_loader
**Complete when:** the test passes.

## Acceptance coverage

| Quoted diagnostics | 1, 2 | focused tests |
`

// TestRealCaseFileGlobs: to-plan-specificity-calibration's file_globs and
// task_graph become glob checks (count, each rule, the task graph), which
// pass on a plan that meets them and fail, naming the file, when the
// required T2 -> T1 edge is gone, or when there are two plans.
func TestRealCaseFileGlobs(t *testing.T) {
	dir := corpusCopy(t)
	s, err := suite.LoadSuite(dir)
	if err != nil {
		t.Fatalf("vet: %s", suite.PrintError(err, dir))
	}
	var globs []suite.Assertion
	for _, a := range s.Cases["to-plan-specificity-calibration"].Assert {
		if a.Glob != nil {
			globs = append(globs, a)
		}
	}
	// count, one must_match, 16 must_contain, the task graph
	if len(globs) != 19 || *globs[0].Glob != ".scratch/to-plan/*.md" || globs[0].Count == nil || *globs[0].Count != 1 {
		t.Fatalf("glob checks: %d, first %+v", len(globs), globs[0])
	}
	tg := globs[len(globs)-1].TaskGraph
	if tg == nil || len(tg.RequiredEdges) != 1 || tg.RequiredEdges[0] != [2]string{"T2", "T1"} || !tg.Acyclic {
		t.Fatalf("task graph check: %+v", tg)
	}

	run := func(files map[string]string) (failed []string) {
		t.Helper()
		ws := t.TempDir()
		for name, text := range files {
			p := filepath.Join(ws, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, a := range globs {
			checks, err := grade.GlobChecks(a, grade.World{Fixture: ws})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range checks {
				if !c.Passed {
					failed = append(failed, c.Name+": "+c.Detail)
				}
			}
		}
		return failed
	}
	if failed := run(map[string]string{".scratch/to-plan/quote-paths.md": plan, "notes.md": "x"}); len(failed) != 0 {
		t.Errorf("a plan that meets them fails: %q", failed)
	}
	noEdge := strings.Replace(plan, "**Depends on:** `T1`", "**Depends on:** `none`", 1)
	failed := run(map[string]string{".scratch/to-plan/quote-paths.md": noEdge})
	if len(failed) != 1 || !strings.Contains(failed[0], ".scratch/to-plan/quote-paths.md: missing required dependency edge 'T2' -> 'T1'") {
		t.Errorf("without the T2 -> T1 edge: %q", failed)
	}
	failed = run(map[string]string{".scratch/to-plan/a.md": plan, ".scratch/to-plan/b.md": plan})
	if len(failed) != 1 || !strings.HasSuffix(failed[0], "count: 1: 2 files match") {
		t.Errorf("two plans: %q", failed)
	}
}

// TestRealCaseMissingFile: a real case folder of theirs whose prompt.md and
// expectations.json the index does not hold fails vet with one error each,
// naming the missing file; the other cases add none.
func TestRealCaseMissingFile(t *testing.T) {
	dir := corpusCopy(t)
	if err := os.CopyFS(filepath.Join(dir, "cases"), os.DirFS(filepath.Join("testdata", "missing"))); err != nil {
		t.Fatal(err)
	}
	skill := filepath.Join(dir, "skills", "compose-animations")
	if err := os.MkdirAll(skill, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: compose-animations\ndescription: Stand-in.\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cue, err := os.ReadFile(filepath.Join(dir, "suite.cue"))
	if err != nil {
		t.Fatal(err)
	}
	cue = []byte(strings.Replace(string(cue), "\tskills: {\n", "\tskills: {\n\t\t\"compose-animations\": path: \"skills/compose-animations\"\n", 1))
	if err := os.WriteFile(filepath.Join(dir, "suite.cue"), cue, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = suite.LoadSuite(dir)
	if err == nil {
		t.Fatal("vet passed with a case missing its prompt.md")
	}
	out := suite.PrintError(err, dir)
	for _, want := range []string{"compose-animations-direct/prompt.md", "reads cases/compose-animations-direct/expectations.json, which is missing"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	for _, id := range corpusCases {
		if strings.Contains(out, id) {
			t.Errorf("the error names case %s, which has no mistake:\n%s", id, out)
		}
	}
	t.Logf("%s", out)
}

// TestMarkdownBulletsMapping: markdown_bullets, at the top of an
// expectations.json and in a file_globs entry, becomes one bullets check
// a requirement, its Python patterns translated and searched ignoring
// case, as their validator does; a pattern RE2 cannot express is an
// error at its position.
func TestMarkdownBulletsMapping(t *testing.T) {
	dir := corpusCopy(t)
	exp := filepath.Join(dir, "cases", "release-kotlin-library-direct", "expectations.json")
	write := func(text string) {
		if err := os.WriteFile(exp, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{
  "files": ["CHANGELOG.md"],
  "markdown_bullets": {"heading": "Unreleased", "required": [
    {"text": ["cancell?ation\\Z"], "links": ["\\[#812\\]"]},
    {"text": ["curated"], "links": []}
  ]},
  "file_globs": [{"pattern": "docs/*.md", "count": 2, "markdown_bullets": {"heading": "Notes", "required": [{"text": ["x"], "links": ["y"]}]}}]
}`)
	s, err := suite.LoadSuite(dir)
	if err != nil {
		t.Fatalf("vet: %s", suite.PrintError(err, dir))
	}
	var got []string
	for _, a := range s.Cases["release-kotlin-library-direct"].Assert {
		if a.Bullets == nil {
			continue
		}
		subject := ""
		if a.Glob != nil {
			subject = "glob " + *a.Glob
		} else {
			subject = "file " + *a.File
		}
		got = append(got, subject+" "+a.Bullets.Heading+" "+strings.Join(a.Bullets.Matches, ",")+" "+strings.Join(a.Bullets.Links, ","))
	}
	want := []string{
		`file CHANGELOG.md Unreleased (?i)cancell?ation\z (?i)\[#812\]`,
		`file CHANGELOG.md Unreleased (?i)curated `,
		`glob docs/*.md Notes (?i)x (?i)y`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("bullets checks:\n got %q\nwant %q", got, want)
	}

	write(`{"files": ["CHANGELOG.md"], "markdown_bullets": {"heading": "Unreleased", "required": [{"text": ["(?<=a)b"], "links": []}]}}`)
	_, err = suite.LoadSuite(dir)
	if err == nil {
		t.Fatal("vet passed a lookbehind")
	}
	if out := suite.PrintError(err, dir); !strings.Contains(out, "markdown_bullets text: Python pattern \"(?<=a)b\"") || !strings.Contains(out, "expectations.json:1:") || strings.Count(out, "\n    ") != 1 {
		t.Errorf("error:\n%s", out)
	}
}

// TestRealCaseSeparateSlices: to-plan-specificity-calibration's later
// expectations.json (testdata/later, see the corpus NOTICE), whose
// task_graph has separate_slice_requirements, vets; its task graph check
// passes a plan with one slice per behaviour and fails, naming the file,
// a plan that puts both behaviours in one slice.
func TestRealCaseSeparateSlices(t *testing.T) {
	dir := corpusCopy(t)
	later, err := os.ReadFile(filepath.Join("testdata", "later", "to-plan-specificity-calibration", "expectations.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cases", "to-plan-specificity-calibration", "expectations.json"), later, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := suite.LoadSuite(dir)
	if err != nil {
		t.Fatalf("vet: %s", suite.PrintError(err, dir))
	}
	var graph *suite.Assertion
	for _, a := range s.Cases["to-plan-specificity-calibration"].Assert {
		if a.TaskGraph != nil {
			graph = &a
		}
	}
	want := []suite.SeparateSlice{
		{ID: "missing-manifest", Files: []string{"manifest_reader.py", "tests/test_manifest_reader.py"}},
		{ID: "invalid-profile", Files: []string{"profile_loader.py", "tests/test_profile_loader.py"}},
	}
	if graph == nil || !slices.EqualFunc(graph.TaskGraph.SeparateSlices, want, func(a, b suite.SeparateSlice) bool {
		return a.ID == b.ID && slices.Equal(a.Files, b.Files) && len(a.Symbols) == 0
	}) {
		t.Fatalf("task graph check %+v, want separate slices %+v", graph, want)
	}
	separated := strings.NewReplacer(
		"**Depends on:** `T1`", "**Depends on:** `none`",
		"**Files and symbols:** path_diagnostics.py quote_path, manifest_reader.py.",
		"**Files and symbols:** Edit `manifest_reader.py` and `tests/test_manifest_reader.py`.",
		"**Files and symbols:** profile_loader.py invalid_profile_error.",
		"**Files and symbols:** Edit `profile_loader.py` and `tests/test_profile_loader.py`.",
	).Replace(plan)
	grouped := strings.Replace(separated, "**Files and symbols:** Edit `manifest_reader.py` and `tests/test_manifest_reader.py`.",
		"**Files and symbols:** Edit `manifest_reader.py` and `tests/test_manifest_reader.py`; edit `profile_loader.py` and `tests/test_profile_loader.py`.", 1)
	for _, tc := range []struct {
		plan string
		want []string
	}{
		{separated, nil},
		{grouped, []string{".scratch/to-plan/p.md: independent behavior 'invalid-profile' must be contained in exactly one slice; found 2"}},
	} {
		ws := t.TempDir()
		p := filepath.Join(ws, ".scratch", "to-plan", "p.md")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(tc.plan), 0o644); err != nil {
			t.Fatal(err)
		}
		checks, err := grade.GlobChecks(*graph, grade.World{Fixture: ws})
		if err != nil {
			t.Fatal(err)
		}
		var failed []string
		for _, c := range checks {
			if !c.Passed {
				failed = append(failed, c.Detail)
			}
		}
		if !slices.Equal(failed, tc.want) {
			t.Errorf("plan:\n%s\nfailed %q, want %q", tc.plan, failed, tc.want)
		}
	}
}
