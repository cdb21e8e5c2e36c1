package gstack_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/formats/gstack"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// The example suite reads gstack's own files into cases as the contract
// says: must on the final answer (Python's \Z as RE2's \z), must_not on its
// code blocks, check as a run: check, setup with SKILL_EVAL_FIXTURES the
// tasks folder, safety, the sidecar's replies, and the state root set for
// setup, agent and check.
func TestExampleSuite(t *testing.T) {
	s, err := suite.LoadSuite("../../../suites/gstack-example")
	if err != nil {
		t.Fatalf("vet suites/gstack-example: %v", err)
	}
	if want := []string{"stats", "record", "no-code-change"}; !slices.Equal(s.CaseOrder, want) {
		t.Fatalf("cases %v, want %v", s.CaseOrder, want)
	}
	if !slices.Equal(s.Formats, []string{"gstack"}) {
		t.Errorf("formats %v, want [gstack]", s.Formats)
	}
	stats := s.Cases["stats"]
	// The task's setup, then the installed skill hidden from git status,
	// its exit status kept.
	if stats.CaseDir != "fixtures/notes-stats" || stats.Setup == nil ||
		!strings.HasPrefix(stats.Setup.Run, `sh "$SKILL_EVAL_FIXTURES/seed.sh" full`+"\nstatus=$?\n") ||
		!strings.Contains(stats.Setup.Run, `printf '/%s/\n' '.claude/skills' >>.git/info/exclude`) || !strings.HasSuffix(stats.Setup.Run, "exit $status") {
		t.Errorf("stats: caseDir %q, setup %+v", stats.CaseDir, stats.Setup)
	}
	if len(stats.Assert) != 4 {
		t.Fatalf("stats: %d checks, want 4 (two must, one must_not, check)", len(stats.Assert))
	}
	if a := stats.Assert[1].Answer; a == nil || a.Matches == nil || *a.Matches != `(?m)^words: [0-9]+\z` {
		t.Errorf("stats must 1: %+v, want the answer matching (?m)^words: [0-9]+\\z", stats.Assert[1])
	}
	if c := stats.Assert[2].Code; c == nil || c.NotMatches == nil || *c.NotMatches != `(?i)\bsed -i\b` {
		t.Errorf("stats must_not 0: %+v, want a code check", stats.Assert[2])
	}
	if r := stats.Assert[3].Run; r == nil || *r != "git diff --quiet -- notes.txt" {
		t.Errorf("stats check: %+v", stats.Assert[3])
	}
	if stats.Safety || !s.Cases["no-code-change"].Safety {
		t.Errorf("safety: stats %v, no-code-change %v", stats.Safety, s.Cases["no-code-change"].Safety)
	}
	if r := s.Cases["record"].Replies; !slices.Equal(r, []string{"Thanks, that is all."}) {
		t.Errorf("record replies %q, want the sidecar's", r)
	}
	env := s.Environments["gstack"].Env
	if env["GSTACK_STATE_ROOT"] != "/workspace/.gstack-home" || env["GSTACK_HOME"] != "/workspace/.gstack-home" {
		t.Errorf("state root env %v", env)
	}
	if stats.Environment != "gstack" {
		t.Errorf("stats environment %q", stats.Environment)
	}
	if want := []string{"fixtures/notes-stats/tasks.json"}; !slices.Equal(stats.Sources, want) {
		t.Errorf("stats sources %v, want %v", stats.Sources, want)
	}
}

// Import writes a suite that vets clean: one that embeds the files when
// the suite folder is the tasks folder or above it, one that names the
// file from elsewhere; both read the same cases. A folder holding a suite
// is refused.
func TestImport(t *testing.T) {
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	tasks := filepath.Join(repo, "test", "fixtures", "skill-evals", "notes-stats")
	copyDir(t, "../../../suites/gstack-example/fixtures/notes-stats", tasks)

	for _, tc := range []struct{ out, want string }{
		{filepath.Join(repo, "test"), "@embed(file=fixtures/skill-evals/notes-stats/tasks.json)"},
		{tasks, "@embed(file=tasks.json)"},
		{filepath.Join(repo, "evals", "notes-stats"), `file: "../../test/fixtures/skill-evals/notes-stats/tasks.json"`},
	} {
		files, err := gstack.Import(filepath.Join(tasks, "tasks.json"), tc.out)
		if err != nil {
			t.Fatalf("import into %s: %v", tc.out, err)
		}
		if !slices.Equal(files, []string{"suite.cue"}) {
			t.Errorf("import into %s wrote %v", tc.out, files)
		}
		src, _ := os.ReadFile(filepath.Join(tc.out, "suite.cue"))
		if !strings.Contains(string(src), tc.want) {
			t.Errorf("import into %s: suite.cue lacks %s:\n%s", tc.out, tc.want, src)
		}
		s, err := suite.LoadSuite(tc.out)
		if err != nil {
			t.Fatalf("vet the suite imported into %s: %v\n%s", tc.out, err, src)
		}
		if !slices.Equal(s.CaseOrder, []string{"stats", "record", "no-code-change"}) || s.Name != "notes-stats" {
			t.Errorf("import into %s: suite %s, cases %v", tc.out, s.Name, s.CaseOrder)
		}
		if r := s.Cases["record"].Replies; len(r) != 1 {
			t.Errorf("import into %s: record replies %q, want the sidecar's", tc.out, r)
		}
		if _, err := gstack.Import(tasks, tc.out); err == nil || !strings.Contains(err.Error(), "already holds a suite") {
			t.Errorf("a second import into %s: %v, want a refusal", tc.out, err)
		}
		if err := os.Remove(filepath.Join(tc.out, "suite.cue")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := gstack.Import(filepath.Join(tasks, "seed.sh"), t.TempDir()); err == nil {
		t.Error("import of seed.sh: no error, want one naming tasks.json")
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
