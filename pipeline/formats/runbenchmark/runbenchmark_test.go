package runbenchmark_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/formats/runbenchmark"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// TestExampleVets loads suites/runbenchmark-example: its definition's three
// scenarios are cases of both arms, with the source's grader semantics.
func TestExampleVets(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "suites", "runbenchmark-example")
	s, err := suite.LoadSuite(dir)
	if err != nil {
		t.Fatalf("vet %s: %s", dir, suite.PrintError(err, "."))
	}
	if len(s.Cases) != 3 || len(s.Arms) != 2 || s.Trials != 2 {
		t.Fatalf("%d cases, %d arms, %d trials; want 3, 2, 2", len(s.Cases), len(s.Arms), s.Trials)
	}
	code, rubric := s.Cases["changelog.s02"], s.Cases["changelog.s03"]
	if code.Split != "validation" || code.Weight != 2 || len(code.Assert) != 1 || code.Assert[0].Shell != "bash" || code.Assert[0].Timeout != "15s" {
		t.Errorf("code grader case: split %s, weight %v, assert %+v", code.Split, code.Weight, code.Assert)
	}
	if len(rubric.Rubric) != 1 || rubric.RubricPass != 0.8 {
		t.Errorf("rubric grader case: rubric %q, rubricPass %v", rubric.Rubric, rubric.RubricPass)
	}
	if got := strings.Join(code.Sources, ","); got != "specs/benchmarks/changelog.yaml" {
		t.Errorf("case sources %q", got)
	}
	if p := s.Policy.PassAtK; p == nil || p.With != "with_skill" || p.Without != "without_skill" || p.Split != "validation" {
		t.Errorf("passAtK rule %+v", p)
	}
}

// TestImportOneDefinition imports one definition file of a repository
// whose skills are under .claude/skills: the suite names that file alone,
// finds the skill, and vets.
func TestImportOneDefinition(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		p = filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".git/HEAD", "ref: refs/heads/main\n")
	write(".claude/skills/lint/SKILL.md", "---\nname: lint\ndescription: Lint.\n---\nRun the linter.\n")
	write("specs/benchmarks/lint.yaml", "skill: lint\nscenarios:\n  - id: l01\n    prompt: Lint it.\n    grader:\n      command: \"bash -c 'true'\"\n")
	write("specs/benchmarks/other.yaml", "skill: other\nscenarios:\n  - id: o01\n    prompt: Other.\n    grader:\n      command: \"true\"\n")
	files, err := runbenchmark.Import(filepath.Join(root, "specs/benchmarks/lint.yaml"), root)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`@embed(file="specs/benchmarks/lint.yaml")`, `skillsDir: ".claude/skills"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("suite.cue lacks %s:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "judge") {
		t.Errorf("suite.cue has a judge with no rubric grader:\n%s", b)
	}
	s, err := suite.LoadSuite(root)
	if err != nil {
		t.Fatalf("vet the imported suite: %s", suite.PrintError(err, root))
	}
	if len(s.Cases) != 1 || s.Cases["lint.l01"].Split != "validation" || s.Trials != 3 {
		t.Errorf("cases %v, trials %d", s.Cases, s.Trials)
	}
}
