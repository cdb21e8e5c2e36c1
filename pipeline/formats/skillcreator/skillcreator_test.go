package skillcreator_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/skillgate/skillgate/pipeline/suite"
)

// TestExampleVets loads suites/skillcreator-example: two evals graded by
// the judge and four trigger queries as routing-only cases, gated on the
// with_skill arm's routing.
func TestExampleVets(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "suites", "skillcreator-example")
	s, err := suite.LoadSuite(dir)
	if err != nil {
		t.Fatalf("vet %s: %s", dir, suite.PrintError(err, "."))
	}
	if len(s.Cases) != 6 || len(s.Arms) != 2 {
		t.Fatalf("%d cases, %d arms; want 6, 2", len(s.Cases), len(s.Arms))
	}
	ev := s.Cases["eval-1"]
	if ev.Fixture != "skills/changelog-entry/evals/files" || len(ev.Rubric) != 1 || len(ev.Assert) != 0 || !slices.Equal(ev.Routing.Skills.Required, []string{"changelog-entry"}) {
		t.Errorf("eval-1: fixture %q, rubric %q, assert %+v, routing %+v", ev.Fixture, ev.Rubric, ev.Assert, ev.Routing.Skills)
	}
	yes, no := s.Cases["trigger-1"], s.Cases["trigger-4"]
	if !slices.Equal(yes.Routing.Skills.Required, []string{"changelog-entry"}) || len(yes.Rubric) != 0 || len(yes.Assert) != 0 {
		t.Errorf("trigger-1: routing %+v, rubric %q", yes.Routing.Skills, yes.Rubric)
	}
	if !slices.Equal(no.Routing.Skills.Forbidden, []string{"changelog-entry"}) || len(no.Routing.Skills.Required) != 0 {
		t.Errorf("trigger-4: routing %+v", no.Routing.Skills)
	}
	if r := s.Policy.Routing; r == nil || r.Arm != "with_skill" || r.MinPrecision != 0.85 {
		t.Errorf("routing rule %+v", r)
	}
}
