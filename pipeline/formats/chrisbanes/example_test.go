package chrisbanes_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/skillgate/skillgate/pipeline/suite"
)

// TestExampleSuite vets suites/chrisbanes-example and checks what its case
// folders became: their arms, kinds, overlays, allowed writes and the
// checks from expectations.json, with \Z translated.
func TestExampleSuite(t *testing.T) {
	s, err := suite.LoadSuite(filepath.Join("..", "..", "..", "suites", "chrisbanes-example"))
	if err != nil {
		t.Fatalf("vet: %s", suite.PrintError(err, "."))
	}
	if got := s.ArmOrder; !slices.Equal(got, []string{"none", "forced", "automatic"}) {
		t.Errorf("arms = %v", got)
	}
	if a := s.Arms["automatic"]; !slices.Equal(a.Skills, []string{"benchmark-comparison"}) || a.Activation != "automatic" {
		t.Errorf("automatic = %+v, want every suite skill, automatic", a)
	}
	if a := s.Arms["forced"]; !a.Targets || a.Activation != "forced" || len(a.Skills) != 0 {
		t.Errorf("forced = %+v, want the case targets, forced", a)
	}
	d := s.Cases["benchmark-comparison-direct"]
	if d.Kind != "task" || d.Overlay != "cases/benchmark-comparison-direct/overlay" || d.Fixture != "fixtures/text" {
		t.Errorf("direct: kind %q overlay %q fixture %q", d.Kind, d.Overlay, d.Fixture)
	}
	if d.Writes == nil || !slices.Equal(*d.Writes, []string{"comparison.md", "comparison.md/**"}) {
		t.Errorf("direct writes = %v", d.Writes)
	}
	var matches []string
	for _, a := range d.Assert {
		if a.Matches != nil {
			matches = append(matches, *a.Matches)
		}
	}
	if !slices.Contains(matches, `(?ms)(?i)^conclusion:.*\z`) {
		t.Errorf("direct matches = %q, want the \\Z pattern translated", matches)
	}
	n := s.Cases["benchmark-comparison-negative"]
	if n.Kind != "no-change" || n.Writes == nil || len(*n.Writes) != 0 {
		t.Errorf("negative: kind %q writes %v, want a no-change control", n.Kind, n.Writes)
	}
	r := s.Cases["benchmark-comparison-novel"]
	if r.Writes == nil || len(*r.Writes) != 0 || len(r.Assert) != 1 || r.Assert[0].Run == nil || *r.Assert[0].Run != `'grep' '-q' 'Build B starts faster' 'comparison.md'` {
		t.Errorf("review: writes %v assert %+v", r.Writes, r.Assert)
	}
	if !slices.Contains(r.Tags, "mode:review") || !slices.Contains(r.Sources, "cases/benchmark-comparison-novel/prompt.md") {
		t.Errorf("review: tags %v sources %v", r.Tags, r.Sources)
	}
}
