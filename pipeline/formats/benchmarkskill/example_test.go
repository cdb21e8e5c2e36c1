package benchmarkskill_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	cueerrors "cuelang.org/go/cue/errors"

	"github.com/skillgate/skillgate/pipeline/formats/benchmarkskill"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// TestExampleSuite vets suites/benchmarkskill-example and checks what its
// plan holds: the tree's two cases (one with a seed), each with its
// case.md as its source, the two arms, 5 paired trials, the pairwise judge
// and the efficacy policy.
func TestExampleSuite(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "suites", "benchmarkskill-example")
	s, err := suite.LoadSuite(dir)
	if err != nil {
		t.Fatal(cueerrors.Details(err, nil))
	}
	p, err := plan.Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Cells) != 20 || p.Suite.Trials != 5 || len(p.Cases) != 2 || strings.Join(p.Formats, ",") != "benchmarkSkill" {
		t.Fatalf("plan: %d cells, %d trials, %d cases, formats %v", len(p.Cells), p.Suite.Trials, len(p.Cases), p.Formats)
	}
	basic, follow := p.Cases[0], p.Cases[1]
	if basic.ID != "axi-review.basic-cli-review" || follow.ID != "axi-review.follow-up-review" {
		t.Fatalf("cases %s, %s", basic.ID, follow.ID)
	}
	if got := strings.Join(basic.Sources, ","); got != "tests/skills/axi-review/basic-cli-review/case.md" {
		t.Errorf("sources %s", got)
	}
	if basic.Fixture != "tests/skills/axi-review/basic-cli-review/fixture" || len(basic.Seed) != 0 || len(basic.Rubric) != 3 ||
		len(basic.Assert) != 1 || basic.Assert[0].Name != "hard assertions" || basic.Assert[0].Run == nil || !strings.HasPrefix(*basic.Assert[0].Run, "set -e\ntest -f \"$WORLD/review.md\"\n") {
		t.Errorf("basic-cli-review %+v", basic.Case)
	}
	if len(follow.Seed) != 3 || follow.Seed[1].Role != "assistant" || follow.Seed[1].Content != "Sure. A general code review, or a review of how well an agent\ncan drive it from a shell?" {
		t.Errorf("follow-up-review seed %+v", follow.Seed)
	}
	if !slices.Equal(basic.Targets, []string{"axi-review"}) {
		t.Errorf("targets %v", basic.Targets)
	}
	arms := p.ArmsByName()
	if a := arms["new-skill"]; a.Activation != "forced" || !a.Targets || len(a.Skills) != 0 {
		t.Errorf("new-skill %+v", a)
	}
	if a := arms["no-skill"]; a.Targets || len(a.Skills) != 0 {
		t.Errorf("no-skill %+v", a)
	}
	if p.Judge == nil || p.Judge.Mode != "pairwise" || len(p.Judge.Pairs) != 1 || p.Judge.Pairs[0].Candidate != "new-skill" || p.Judge.Pairs[0].Baseline != "no-skill" {
		t.Errorf("judge %+v", p.Judge)
	}
	e := p.Policy.Efficacy
	if p.Policy.Name != "efficacy" || e == nil || !e.Enabled || e.Candidate != "new-skill" || e.Baseline != "no-skill" || e.MinWins != 3 || e.MaxLosses != 1 {
		t.Errorf("policy %+v %+v", p.Policy, e)
	}
	if pr := p.Agent.Prices; pr == nil || pr.InputPerMTok == nil || *pr.InputPerMTok != 3 {
		t.Errorf("agent prices %+v", pr)
	}
	// The reports folder is found from what the plan keeps of a case.
	got, err := benchmarkskill.ReportsFolder(s.Dir, basic.Sources[0], p.Skills["axi-review"].Path)
	if want := filepath.Join(s.Dir, "tests", ".reports"); err != nil || got != want {
		t.Errorf("reports folder %s (%v), want %s", got, err, want)
	}
}

func TestReportsFolder(t *testing.T) {
	for _, c := range []struct{ caseMD, skill, want string }{
		{"tests/skills/a/x/case.md", "skills/a", "/s/tests/.reports"},
		{"../tests/skills/tools/a/x/case.md", "../skills/tools/a", "/tests/.reports"},
		{"../../repo/tests/skills/a/x/case.md", "../../repo/skills/a", "/repo/tests/.reports"},
		{"other/skills/a/x/case.md", "skills/a", ""},
	} {
		got, err := benchmarkskill.ReportsFolder("/s", c.caseMD, c.skill)
		if c.want == "" {
			if err == nil {
				t.Errorf("%s: %s, want an error", c.caseMD, got)
			}
			continue
		}
		if err != nil || got != filepath.FromSlash(c.want) {
			t.Errorf("%s, %s: %s (%v), want %s", c.caseMD, c.skill, got, err, c.want)
		}
	}
}
