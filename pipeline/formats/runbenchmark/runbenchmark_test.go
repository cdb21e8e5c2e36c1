package runbenchmark_test

import (
	"path/filepath"
	"strings"
	"testing"

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
