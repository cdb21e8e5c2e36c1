package verdict

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"

	"github.com/skillgate/skillgate/pipeline/inference"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/schema"
)

// sequentialCases are eight task cases, so a clear win can decide early.
func sequentialCases() string {
	var b strings.Builder
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&b, "\t\tt%d: {prompt: \"p\", routing: {}, assert: [], rubric: []}\n", i)
	}
	return b.String()
}

// uplift compares two arms alone: the cells read are exactly its own.
const sequentialArms = `
		none:   {skills: []}
		forced: {skills: ["new"], activation: "forced"}`

func sequentialPlan(t *testing.T, extra string) *plan.Plan {
	t.Helper()
	return policySuite{trials: 5, policy: `policies.passAtK & {passAtK: enabled: false, uplift: {}, sequential: {` + extra + `}}`, arms: sequentialArms, cases: sequentialCases()}.compile(t)
}

// sequentialGrid is every case with the same trials in each arm.
func sequentialGrid(none, forced string) grid {
	g := grid{}
	for i := 1; i <= 8; i++ {
		g[fmt.Sprintf("t%d/none", i)] = none
		g[fmt.Sprintf("t%d/forced", i)] = forced
	}
	return g
}

// A clear win stops for effect after round 1: 8 wins of 8 discordant
// pairs lift E above 1/α = 20; rounds 2 to 5 are not needed, and the
// verdict neither reads them nor counts them missing.
func TestDecideSequentialStopsAClearWin(t *testing.T) {
	p := sequentialPlan(t, "")
	results := synth(t, p, sequentialGrid("FFMMM", "PPMMM"), nil)
	s := DecideSequential(p, results)
	if s == nil || len(s.Comparisons) != 1 {
		t.Fatalf("sequential: %+v", s)
	}
	c := s.Comparisons[0]
	if c.Decision != inference.SequentialEffect || c.Round != 1 {
		t.Fatalf("uplift: %s after round %d (%s), want effect after round 1", c.Decision, c.Round, c.Why)
	}
	if want := 8 * 2 * 4; len(s.NotNeeded) != want {
		t.Fatalf("%d cells not needed, want %d", len(s.NotNeeded), want)
	}
	if nn := s.NotNeeded[0]; nn.Round < 2 || len(nn.StoppedBy) != 1 || !strings.HasPrefix(nn.StoppedBy[0], "uplift effect after round 1") {
		t.Errorf("not needed: %+v", nn)
	}
	q := s.Needed(p)
	if len(q.Cells) != 16 || q.Digest != p.Digest {
		t.Fatalf("needed plan: %d cells, digest %s", len(q.Cells), q.Digest)
	}
	v := EvaluatePolicy(q, results, nil, nil)
	if v.Verdict != VerdictPass {
		t.Errorf("verdict %s %v, want PASS on the needed cells", v.Verdict, v.Reasons)
	}
	if full := EvaluatePolicy(p, results, nil, nil); full.Verdict != VerdictIncomplete {
		t.Errorf("without sequential the same results are %s, want INCOMPLETE", full.Verdict)
	}
}

// A tie never reaches 1/α: it runs until the plan's remaining pairs could
// no longer lift E there, or Wald's boundary says futile.
func TestDecideSequentialTieRunsToFutility(t *testing.T) {
	p := sequentialPlan(t, "futility: 0")
	// Each round: half the cases won by each arm.
	g := grid{}
	for i := 1; i <= 8; i++ {
		if i%2 == 0 {
			g[fmt.Sprintf("t%d/none", i)], g[fmt.Sprintf("t%d/forced", i)] = "PPPPP", "FFFFF"
		} else {
			g[fmt.Sprintf("t%d/none", i)], g[fmt.Sprintf("t%d/forced", i)] = "FFFFF", "PPPPP"
		}
	}
	s := DecideSequential(p, synth(t, p, g, nil))
	c := s.Comparisons[0]
	if c.Decision != inference.SequentialFutility || c.Round < 2 || c.Round > 5 {
		t.Fatalf("uplift: %s after round %d (%s), want futility after a later round", c.Decision, c.Round, c.Why)
	}
	if c.Wins != c.Losses || c.E >= 20 {
		t.Errorf("wins %d, losses %d, E %v", c.Wins, c.Losses, c.E)
	}
	if want := 8 * 2 * (5 - c.Round); len(s.NotNeeded) != want {
		t.Errorf("%d not needed, want %d", len(s.NotNeeded), want)
	}
}

// A round with an invalid or missing cell decides nothing: every later
// cell stays needed, so a rerun fills it in before anything is skipped.
func TestDecideSequentialWaitsForAWholeRound(t *testing.T) {
	p := sequentialPlan(t, "")
	g := sequentialGrid("FFFFF", "PPPPP")
	g["t3/forced"] = "IPPPP"
	s := DecideSequential(p, synth(t, p, g, nil))
	if c := s.Comparisons[0]; c.Decision != SequentialPending || c.Round != 0 || !strings.Contains(c.Why, "t3/forced/1") {
		t.Fatalf("uplift: %+v, want pending before round 1", c)
	}
	if len(s.NotNeeded) != 0 {
		t.Errorf("%d not needed while a round is open", len(s.NotNeeded))
	}
}

// Same evidence, same decision, byte for byte.
func TestDecideSequentialIsAFunctionOfTheEvidence(t *testing.T) {
	p := sequentialPlan(t, "round: 2")
	results := synth(t, p, sequentialGrid("FPFFP", "PPPFP"), nil)
	a, _ := json.Marshal(DecideSequential(p, results))
	rev := slices.Clone(results)
	slices.Reverse(rev)
	b, _ := json.Marshal(DecideSequential(p, rev))
	if string(a) != string(b) {
		t.Errorf("the order of the results changed the decision:\n%s\n%s", a, b)
	}
	if DecideSequential(policySuite{trials: 5, policy: "policies.advisory", arms: advisoryArms, cases: advisoryCases}.compile(t), nil) != nil {
		t.Error("a policy without sequential decided")
	}
}

// TestSequentialMatchesTheSchema: suite.Sequential mirrors #Sequential
// field for field, and `sequential: {}` decodes to the schema's defaults.
func TestSequentialMatchesTheSchema(t *testing.T) {
	// #Sequential stands alone (it names no other definition), so its
	// block is compiled as it is written in the schema.
	src := string(schema.Files()["policy.cue"])
	start := strings.Index(src, "\n#Sequential: {")
	if start < 0 {
		t.Fatal("schema/policy.cue has no #Sequential")
	}
	end := start + strings.Index(src[start:], "\n}\n") + 3
	v := cuecontext.New().CompileString(src[start:end])
	def := v.LookupPath(cue.ParsePath("#Sequential"))
	if def.Err() != nil {
		t.Fatal(def.Err())
	}
	var fields []string
	it, _ := def.Fields(cue.Optional(true))
	for it.Next() {
		fields = append(fields, it.Selector().Unquoted())
	}
	var tags []string
	rt := reflect.TypeOf(suite.Sequential{})
	for i := range rt.NumField() {
		tags = append(tags, strings.Split(rt.Field(i).Tag.Get("json"), ",")[0])
	}
	slices.Sort(fields)
	slices.Sort(tags)
	if !slices.Equal(fields, tags) {
		t.Errorf("#Sequential has fields %v, suite.Sequential %v", fields, tags)
	}
	var want suite.Sequential
	d, _ := def.Default()
	if err := d.Decode(&want); err != nil {
		t.Fatalf("decode #Sequential's defaults: %v", err)
	}
	got := sequentialPlan(t, "").Policy.Sequential
	if got == nil || *got != want || want.Alpha == 0 || want.Round == 0 || want.Share == 0 {
		t.Errorf("sequential: {} decodes to %+v, the schema's defaults are %+v", got, want)
	}
}

// A cell no comparison reads (here a no-change control, which uplift's
// kinds leave out) runs every trial whatever the comparisons decide.
func TestDecideSequentialKeepsCellsNoComparisonReads(t *testing.T) {
	cases := sequentialCases() + "\t\tn1: {prompt: \"p\", kind: \"no-change\", writes: [], routing: {}, assert: [], rubric: []}\n"
	p := policySuite{trials: 5, policy: `policies.passAtK & {passAtK: enabled: false, uplift: {}, sequential: {}}`, arms: sequentialArms, cases: cases}.compile(t)
	g := sequentialGrid("FFFFF", "PPPPP")
	g["n1/none"], g["n1/forced"] = "PPPPP", "PPPPP"
	s := DecideSequential(p, synth(t, p, g, nil))
	if c := s.Comparisons[0]; c.Decision != inference.SequentialEffect || c.Cases != 8 {
		t.Fatalf("uplift: %+v", c)
	}
	for _, c := range s.NotNeeded {
		if strings.HasPrefix(c.Cell, "n1/") {
			t.Errorf("%s not needed, but no comparison reads it", c.Cell)
		}
	}
	if len(s.NotNeeded) != 8*2*4 {
		t.Errorf("%d not needed, want 64", len(s.NotNeeded))
	}
}
