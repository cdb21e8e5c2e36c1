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
	"github.com/skillgate/skillgate/pipeline/suite/suitetest"
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
		len(basic.Assert) != 3 || basic.Assert[0].Name != `hard assertion: test -f "$WORLD/review.md"` || basic.Assert[2].Run == nil || *basic.Assert[2].Run != `grep -q 'review.md' "$OUTPUT"` {
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

// formatSuite is a repository with two skills' tests and a suite in
// suite/ whose formats.benchmarkSkill and policy are given.
func formatSuite(t *testing.T, settings, policy string) string {
	t.Helper()
	caseMD := "---\ndescription: d\n---\n## Prompt\nDo it.\n\n## Soft criteria\n- It is done.\n"
	return suitetest.WriteSuite(t, map[string]string{
		"skills/greet/SKILL.md":            "---\nname: greet\ndescription: Greets.\n---\nGreet.\n",
		"skills/count/SKILL.md":            "---\nname: count\ndescription: Counts.\n---\nCount.\n",
		"tests/skills/greet/one/case.md":   caseMD,
		"tests/skills/count/one/case.md":   caseMD,
		"tests/skills/count/two/case.md":   caseMD,
		"tests/skills/count/two/fixture/f": "x\n",
		"suite/suite.cue": `package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/formats/benchmarkskill"
)

schema.#Suite & benchmarkskill.#Suite & {
	name: "settings"
	formats: benchmarkSkill: ` + settings + `
	agent: agents.command & {command: ["true"]}
	judge: {provider: "scripted", script: rules: [{reply: [{text: "{\"winner\": \"tie\"}"}]}]}
` + policy + `
}
`,
	})
}

// TestFormatSettings: trials, a skill's temperature and the efficacy
// thresholds are the user's to set; a misspelt setting is refused at its
// position.
func TestFormatSettings(t *testing.T) {
	root := formatSuite(t, `{root: "..", trials: 2, temperature: greet: 0}`, `	policy: efficacy: {minWins: 2, maxLosses: 0}`)
	s, err := suite.LoadSuite(filepath.Join(root, "suite"))
	if err != nil {
		t.Fatal(cueerrors.Details(err, nil))
	}
	p, err := plan.Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, pc := range p.Cases {
		ids = append(ids, pc.ID)
		if (pc.Temperature != nil) != (pc.ID == "greet.one") || pc.Temperature != nil && *pc.Temperature != 0 {
			t.Errorf("%s temperature %v", pc.ID, pc.Temperature)
		}
	}
	if got := strings.Join(ids, ","); got != "count.one,count.two,greet.one" {
		t.Errorf("cases %s", got)
	}
	if p.Suite.Trials != 2 || len(p.Cells) != 12 || p.Policy.Efficacy.MinWins != 2 || p.Policy.Efficacy.MaxLosses != 0 {
		t.Errorf("trials %d, %d cells, efficacy %+v", p.Suite.Trials, len(p.Cells), p.Policy.Efficacy)
	}
	if got := p.Skills["count"].Path; got != "../skills/count" {
		t.Errorf("skill path %s", got)
	}

	root = formatSuite(t, `{rot: ".."}`, "")
	_, err = suite.LoadSuite(filepath.Join(root, "suite"))
	if got := cueerrors.Details(err, &cueerrors.Config{Cwd: root}); !strings.Contains(got, "formats.benchmarkSkill.rot: field not allowed") || !strings.Contains(got, "suite/suite.cue:11:28") {
		t.Errorf("misspelt setting: %s", got)
	}
}
