package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/report"
)

// TestBenchmarkSkillExample runs suites/benchmarkskill-example for real
// through `skillgate benchmark-skill axi-review`, cut to one paired trial
// per case (and the efficacy rule to one win) so it stays small: the real
// Claude Code CLI on the scripted stand-in model in both arms, the seed
// case included, the hard assertions, the scripted pairwise judge, and the
// skill's report under the copy's tests/.reports/.
func TestBenchmarkSkillExample(t *testing.T) {
	if ok, err := condition("docker"); err != nil {
		t.Fatal(err)
	} else if !ok {
		t.Skip("needs a Docker engine (.ci/docker-up)")
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "suites", "benchmarkskill-example"))); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	suiteFile := filepath.Join(dir, "suite.cue")
	src, err := os.ReadFile(suiteFile)
	if err != nil {
		t.Fatal(err)
	}
	const from = `formats: benchmarkSkill: root: "."`
	if !strings.Contains(string(src), from) {
		t.Fatalf("suite.cue has no %s", from)
	}
	small := strings.Replace(string(src), from, `formats: benchmarkSkill: {root: ".", trials: 1}
	policy: efficacy: {minWins: 1, maxLosses: 0}`, 1)
	if err := os.WriteFile(suiteFile, []byte(small), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"skillgate", "benchmark-skill", "axi-review", dir, "--out", filepath.Join(dir, ".skillgate", "run")}); code != 0 {
		t.Fatalf("benchmark-skill axi-review: exit %d, want 0 (green)", code)
	}
	b, err := os.ReadFile(filepath.Join(dir, "tests", ".reports", "axi-review.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res report.BenchmarkSkillResults
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Efficacy != report.EfficacyGreen || res.Passed != 2 || len(res.Cases) != 2 {
		t.Fatalf("efficacy %s, %d of %d cases pass", res.Efficacy, res.Passed, len(res.Cases))
	}
	for _, c := range res.Cases {
		if c.Wins != 1 || c.Trials[0].Outcome != "WIN" || c.HardAssertions == nil || c.HardAssertions.Passed != 1 {
			t.Errorf("case %s: %+v %+v", c.ID, c, c.HardAssertions)
		}
	}
	// The stand-in's token counts, per arm: the skill's reading costs the
	// new-skill arm a tool call and more tokens than the baseline.
	newSkill, noSkill := res.Arms[0], res.Arms[1]
	if newSkill.Name != "new-skill" || newSkill.Tokens == nil || noSkill.Tokens == nil ||
		newSkill.Tokens.Input != 2*32000 || newSkill.Tokens.Output != 2*860 || noSkill.Tokens.Input != 2*20000 || noSkill.Tokens.Output != 2*420 {
		t.Errorf("tokens %+v %+v", newSkill.Tokens, noSkill.Tokens)
	}
	if newSkill.Turns == nil || *newSkill.Turns != 4 || noSkill.Turns == nil || *noSkill.Turns != 2 {
		t.Errorf("turns %v %v", newSkill.Turns, noSkill.Turns)
	}
	if newSkill.Ratio == nil || *newSkill.Ratio < 1.6 || *newSkill.Ratio > 1.7 {
		t.Errorf("ratio %v", newSkill.Ratio)
	}
	page, err := os.ReadFile(filepath.Join(dir, "tests", ".reports", "axi-review.html"))
	if err != nil || !strings.Contains(string(page), `<span class="word">Efficacy green</span>`) || !strings.Contains(string(page), "Stand-in:") {
		t.Errorf("axi-review.html: %v", err)
	}
}
