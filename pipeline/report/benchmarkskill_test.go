package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// bskillTrials are one case's five paired trials: its outcomes for the
// new-skill arm (W, T, L, I invalid judgement, - not judged) and which of
// its new-skill cells failed the hard assertions (F) or did not complete (X).
type bskillCase struct {
	id, description, outcomes, hard string
	hasHard                         bool
}

// bskillReport is a run of two skills: axi-review passes one case (one
// loss, flagged) and fails the other (two wins), greet wins every trial but
// fails a hard assertion once. Tokens cover all four components.
func bskillReport() (*verdict.Report, *Evidence) {
	cases := []bskillCase{
		{"axi-review.basic-cli-review", "reviews a small CLI for agent experience", "WWLWW", ".....", true},
		{"axi-review.follow-up-review", "writes the review asked for earlier", "WTTLW", ".....", true},
		{"greet.hello", "greets Ada", "WWWWW", "..F.X", true},
		{"greet.no-checks", "", "WWWI-", ".....", false},
	}
	price := func(v float64) *float64 { return &v }
	r := &verdict.Report{
		Suite: "skills", Plan: digest.FromString("plan"), CaseSet: digest.FromString("case set"), Harness: "skillgate 0.0.0-test",
		Agent:   verdict.AgentIdentity{Kind: "claude-code", Image: "skillgate/claude-code:test", Model: "claude-sonnet-4-5", Provider: "anthropic", Digest: digest.FromString("agent"), Prices: &suite.Prices{InputPerMTok: price(3), OutputPerMTok: price(15), CacheReadPerMTok: price(0.3), CacheWritePerMTok: price(3.75)}},
		Judge:   &verdict.JudgeIdentity{Provider: "anthropic", Model: "claude-opus-4-1", Mode: "pairwise", Digest: digest.FromString("judge")},
		StandIn: "", Policy: "efficacy", Trials: 5, Formats: []string{"benchmarkSkill"},
		Arms: []verdict.ArmReport{{Name: "new-skill", Activation: "forced"}, {Name: "no-skill"}},
	}
	ev := &Evidence{Cells: map[string]CellEvidence{}}
	for ci, c := range cases {
		cr := verdict.CaseReport{ID: c.id, Digest: digest.FromString(c.id), Description: c.description, Kind: "task", Split: "train", Weight: 1, Trials: map[string][]verdict.TrialOutcome{}}
		for _, arm := range []string{"new-skill", "no-skill"} {
			for n := 1; n <= 5; n++ {
				cell := fmt.Sprintf("%s/%s/%d", c.id, arm, n)
				t := verdict.TrialOutcome{Cell: cell, Trial: n, Status: grade.StatusCompleted, Passed: true, Score: 1, Rollout: digest.FromString("rollout " + cell)}
				ce := CellEvidence{Cell: cell, Case: c.id, Arm: arm, Trial: n, Status: grade.StatusCompleted, Passed: true}
				state := byte('.')
				if arm == "new-skill" {
					state = c.hard[n-1]
				}
				switch state {
				case 'F':
					t.Passed, t.Score, t.Failed = false, 0, []string{`hard assertion: grep -q Ada "$OUTPUT"`}
				case 'X':
					t.Status, t.Passed, t.Score = grade.StatusTimeout, false, 0
				}
				ce.Status, ce.Passed = t.Status, t.Passed
				if c.hasHard && state != 'X' {
					ce.Checks = []grade.CheckResult{{Name: `hard assertion: test -n "$OUTPUT"`, Kind: grade.CheckRun, Passed: true}, {Name: `hard assertion: grep -q Ada "$OUTPUT"`, Kind: grade.CheckRun, Passed: state != 'F'}}
				}
				// The new-skill arm reads its skill: one more tool round and
				// more cached context.
				base := int64(1000*(ci+1) + 10*n)
				if arm == "new-skill" {
					ce.Turns = []Turn{{Role: "tool", Tool: "Skill"}, {Role: "tool", Tool: "Read"}, {Role: "assistant", Text: "reading"}, {Role: "tool", Tool: "Bash"}, {Role: "assistant", Text: "done"}}
					ce.Tokens = &grade.Tokens{Input: base, Output: 400, CacheRead: 20000, CacheWrite: 3000}
				} else {
					ce.Turns = []Turn{{Role: "tool", Tool: "Bash"}, {Role: "assistant", Text: "done"}}
					ce.Tokens = &grade.Tokens{Input: base / 2, Output: 300, CacheRead: 12000, CacheWrite: 1000}
				}
				if c.id == "greet.no-checks" && n == 5 {
					ce.Tokens = nil // a provider that reported nothing
				}
				cr.Trials[arm] = append(cr.Trials[arm], t)
				ev.Cells[cell] = ce
			}
		}
		r.Cases = append(r.Cases, cr)
		for n := 1; n <= 5; n++ {
			o := map[byte]string{'W': grade.PairwiseWin, 'T': grade.PairwiseTie, 'L': grade.PairwiseLoss, 'I': grade.PairwiseInvalid}[c.outcomes[n-1]]
			if o == "" {
				continue
			}
			first := grade.PositionA
			if n%2 == 0 {
				first = grade.PositionB
			}
			r.Pairwise = append(r.Pairwise, grade.PairwiseResult{Case: c.id, Trial: n, Candidate: "new-skill", Baseline: "no-skill", Outcome: o, First: first})
		}
	}
	r.Verdict = verdict.Verdict{
		Verdict: verdict.VerdictFail, Reasons: []string{"EFFICACY axi-review.follow-up-review", "EFFICACY greet.hello", "EFFICACY greet.no-checks"}, ExitCode: 1,
		Rules: []verdict.RuleOutcome{{
			Rule: "efficacy", Severity: "fail", Reasons: []string{"EFFICACY axi-review.follow-up-review", "EFFICACY greet.hello", "EFFICACY greet.no-checks"},
			Detail: "1 of 4 cases pass (wins ≥ 3, losses ≤ 1): axi-review.basic-cli-review 4W/0T/1L, axi-review.follow-up-review 2W/2T/1L, greet.hello 5W/0T/0L, 1 of 5 new-skill trials failed hard assertions, greet.no-checks 3W/1T/0L",
			Flags:  []string{"REVIEW axi-review.basic-cli-review/3", "REVIEW axi-review.follow-up-review/4"},
		}},
	}
	return r, ev
}

func TestBenchmarkSkillGolden(t *testing.T) {
	r, ev := bskillReport()
	files, err := BenchmarkSkillFiles(r, ev)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, ","); got != "axi-review.json,axi-review.html,greet.json,greet.html" {
		t.Fatalf("files %s", got)
	}
	gd := filepath.Join("testdata", "benchmarkskill")
	for _, f := range files {
		gp := filepath.Join(gd, f.Name)
		if os.Getenv("UPDATE_GOLDEN") != "" {
			if err := os.MkdirAll(gd, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(gp, f.Data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(gp)
		if err != nil {
			t.Fatalf("%v (run with UPDATE_GOLDEN=1 to create)", err)
		}
		if !bytes.Equal(f.Data, want) {
			t.Errorf("%s differs from %s (UPDATE_GOLDEN=1 rewrites it); first difference at line %d", f.Name, gp, firstDiffLine(f.Data, want))
		}
	}
}

func TestBenchmarkSkillResults(t *testing.T) {
	r, ev := bskillReport()
	res := BenchmarkSkillResultsOf(r, ev)
	if len(res) != 2 || res[0].Skill != "axi-review" || res[1].Skill != "greet" {
		t.Fatalf("skills %+v", res)
	}
	axi, greet := res[0], res[1]
	if axi.Efficacy != EfficacyRed || axi.Passed != 1 || greet.Efficacy != EfficacyRed || greet.Passed != 0 {
		t.Errorf("efficacy: axi-review %s (%d passed), greet %s (%d passed)", axi.Efficacy, axi.Passed, greet.Efficacy, greet.Passed)
	}
	basic := axi.Cases[0]
	if basic.Efficacy != EfficacyPass || basic.Wins != 4 || basic.Ties != 0 || basic.Losses != 1 || !basic.Review || basic.Case != "basic-cli-review" {
		t.Errorf("basic-cli-review %+v", basic)
	}
	if f := axi.Cases[1]; f.Efficacy != EfficacyFail || f.Wins != 2 || f.Ties != 2 || f.Losses != 1 {
		t.Errorf("follow-up-review %+v", f)
	}
	hello := greet.Cases[0]
	if hello.Wins != 5 || hello.Review || hello.HardAssertions == nil || *hello.HardAssertions != (BenchmarkSkillHard{Passed: 3, Failed: 1}) ||
		hello.Trials[2].HardAssertions != "fail" || hello.Trials[4].HardAssertions != "not-run" {
		t.Errorf("greet.hello %+v", hello)
	}
	// An invalid judgement is a non-win, like a tie; an unjudged trial is
	// neither, and leaves the case incomplete.
	if nc := greet.Cases[1]; nc.Efficacy != EfficacyIncomplete || nc.HardAssertions != nil || nc.Wins != 3 || nc.Ties != 1 || nc.Trials[4].Outcome != "NOT-JUDGED" || nc.Trials[0].HardAssertions != "" {
		t.Errorf("greet.no-checks %+v", nc)
	}

	// Cost: sums over the skill's cells; every token weighted by its price
	// relative to an input token.
	newSkill, noSkill := axi.Arms[0], axi.Arms[1]
	if newSkill.Name != "new-skill" || newSkill.Cells != 10 || newSkill.TokenCells != 10 || *newSkill.Turns != 30 || *noSkill.Turns != 10 {
		t.Errorf("arms %+v %+v", newSkill, noSkill)
	}
	wantIn := int64(0)
	for ci := 0; ci < 2; ci++ {
		for n := 1; n <= 5; n++ {
			wantIn += int64(1000*(ci+1) + 10*n)
		}
	}
	tk := newSkill.Tokens
	if tk.Input != wantIn || tk.Output != 4000 || tk.CacheRead != 200000 || tk.CacheWrite != 30000 {
		t.Errorf("new-skill tokens %+v", tk)
	}
	cet := float64(wantIn) + (4000*15+200000*0.3+30000*3.75)/3
	if math.Abs(*newSkill.CostEquivalentTokens-cet) > 1e-6 || math.Abs(*newSkill.ImputedCostUSD-cet*3/1e6) > 1e-12 {
		t.Errorf("new-skill cost %v tokens, $%v; want %v, $%v", *newSkill.CostEquivalentTokens, *newSkill.ImputedCostUSD, cet, cet*3/1e6)
	}
	if math.Abs(*newSkill.Ratio - *newSkill.CostEquivalentTokens / *noSkill.CostEquivalentTokens) > 1e-12 || noSkill.Ratio != nil {
		t.Errorf("ratio %v / %v", newSkill.Ratio, noSkill.Ratio)
	}
	// A cell whose provider reported no tokens is left out, not counted as 0.
	if greet.Arms[0].Cells != 10 || greet.Arms[0].TokenCells != 9 {
		t.Errorf("greet new-skill %+v", greet.Arms[0])
	}

	// Not yet judged: incomplete, never green.
	r.Verdict.Rules[0] = verdict.RuleOutcome{Rule: "efficacy", NotMeasured: "no pairwise judgement of new-skill against no-skill yet"}
	r.Pairwise = nil
	// A failed hard assertion fails its case all the same.
	res = BenchmarkSkillResultsOf(r, ev)
	if s := res[0]; s.Efficacy != EfficacyIncomplete || s.Cases[0].Efficacy != EfficacyIncomplete || s.Cases[0].Trials[0].Outcome != "NOT-JUDGED" {
		t.Errorf("%s not judged: %s, %+v", s.Skill, s.Efficacy, s.Cases[0])
	}
	if s := res[1]; s.Efficacy != EfficacyRed || s.Cases[0].Efficacy != EfficacyFail || s.Cases[1].Efficacy != EfficacyIncomplete {
		t.Errorf("%s not judged: %s, %+v", s.Skill, s.Efficacy, s.Cases)
	}
	// Green when every case passes; no prices: raw tokens only.
	r, ev = bskillReport()
	r.Verdict.Rules[0].Reasons = nil
	r.Agent.Prices = nil
	res = BenchmarkSkillResultsOf(r, ev)
	if s := res[0]; s.Efficacy != EfficacyGreen || s.Passed != 2 {
		t.Errorf("%s all passing: %s, %d passed", s.Skill, s.Efficacy, s.Passed)
	}
	for _, s := range res {
		if s.Run.Prices != nil || s.Arms[0].Tokens == nil || s.Arms[0].CostEquivalentTokens != nil || s.Arms[0].ImputedCostUSD != nil {
			t.Errorf("%s with no prices: %+v", s.Skill, s)
		}
	}
}

// TestBenchmarkSkillSchema validates the goldens against the JSON Schema
// of the results model, and checks the schema refuses what it must.
func TestBenchmarkSkillSchema(t *testing.T) {
	c := jsonschema.NewCompiler()
	sch, err := c.Compile(filepath.Join("..", "..", "schema", "outputs", "benchmarkskill", "results.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"axi-review.json", "greet.json"} {
		f, err := os.Open(filepath.Join("testdata", "benchmarkskill", name))
		if err != nil {
			t.Fatal(err)
		}
		v, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(v); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		m := v.(map[string]any)
		m["efficacy"] = "amber"
		if err := sch.Validate(m); err == nil {
			t.Errorf("%s with efficacy amber validates", name)
		}
		m["efficacy"], m["extra"] = "red", true
		if err := sch.Validate(m); err == nil {
			t.Errorf("%s with an unknown field validates", name)
		}
	}
}

// TestBenchmarkSkillWritten: a report whose cases come from benchmark-skill
// writes each skill's files under the run folder's benchmark-skill/.
func TestBenchmarkSkillWritten(t *testing.T) {
	r, ev := bskillReport()
	dir := t.TempDir()
	if err := WriteReportsWith(dir, r, ev); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"axi-review.json", "axi-review.html", "greet.json", "greet.html"} {
		b, err := os.ReadFile(filepath.Join(dir, BenchmarkSkillDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".json") {
			var res BenchmarkSkillResults
			if err := json.Unmarshal(b, &res); err != nil || res.Skill != strings.TrimSuffix(name, ".json") {
				t.Errorf("%s: %v %+v", name, err, res.Skill)
			}
		}
	}
	r.Formats = nil
	other := t.TempDir()
	if err := WriteReportsWith(other, r, ev); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(other, BenchmarkSkillDir)); !os.IsNotExist(err) {
		t.Errorf("a suite of no format wrote %s: %v", BenchmarkSkillDir, err)
	}
}
