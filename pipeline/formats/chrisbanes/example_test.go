package chrisbanes_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	if r.Writes == nil || len(*r.Writes) != 0 || len(r.Assert) < 1 || r.Assert[0].Run == nil || *r.Assert[0].Run != `'grep' '-q' 'Build B starts faster' 'comparison.md'` {
		t.Errorf("review: writes %v assert %+v", r.Writes, r.Assert)
	}
	// Their global safety policy follows every case's own checks.
	var safety []string
	for _, a := range r.Assert[1:] {
		if a.Commands == nil && a.Tool == nil {
			t.Errorf("review: check %q after the validator is not a trajectory check", a.Name)
		}
		safety = append(safety, a.Name)
	}
	if want := []string{"safety: no network command", "safety: no web tool", "safety: no external tool", "safety: no permission escalation", "safety: no destructive command", "safety: Gradle runs offline"}; !slices.Equal(safety, want) {
		t.Errorf("review: safety checks %q, want %q", safety, want)
	}
	if !slices.Contains(r.Tags, "mode:review") || !slices.Contains(r.Sources, "cases/benchmark-comparison-novel/prompt.md") {
		t.Errorf("review: tags %v sources %v", r.Tags, r.Sources)
	}
}

// TestTargetSkillsSelectsCases: formats.chrisbanes.targetSkills keeps the
// cases whose target skills are all among them, as their suites do.
func TestTargetSkillsSelectsCases(t *testing.T) {
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(repo, "ex")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "..", "suites", "chrisbanes-example"))); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(dir, "suite.cue"))
	if err != nil {
		t.Fatal(err)
	}
	for filter, want := range map[string]int{`["benchmark-comparison"]`: 3, `["benchmark-comparison", "other"]`: 3, `["other"]`: 0} {
		s := strings.Replace(string(src), "formats: chrisbanes: {", "formats: chrisbanes: {\n\t\ttargetSkills: "+filter, 1)
		if err := os.WriteFile(filepath.Join(dir, "suite.cue"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := suite.LoadSuite(dir)
		switch {
		case want == 0 && (err == nil || !strings.Contains(err.Error(), "at least one case")):
			t.Errorf("targetSkills %s: %v, want no case", filter, err)
		case want > 0 && err != nil:
			t.Errorf("targetSkills %s: %s", filter, suite.PrintError(err, "."))
		case want > 0 && len(got.Cases) != want:
			t.Errorf("targetSkills %s: %d cases, want %d", filter, len(got.Cases), want)
		}
	}
}
