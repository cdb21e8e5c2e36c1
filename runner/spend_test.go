package runner

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/skillgate/skillgate/runner/judge"
	"github.com/skillgate/skillgate/runner/spend"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// TestSpendCapCountsJudgeCalls: judge calls are admitted under the run folder's cap
// and entered in its ledger at the judge's prices; those the cap leaves out are
// missing, and a later call with a higher cap judges them.
func TestSpendCapCountsJudgeCalls(t *testing.T) {
	src := strings.Replace(rubricSuite, `agent: agents.command & {command: ["true"]}`,
		`agent: agents.command & {command: ["true"], provider: "scripted", script: rules: [{reply: [{text: "x"}]}], prices: perCall: 1}`, 1)
	src = strings.Replace(src, `judge: {provider: "command", command: ["true"]}`,
		`judge: {provider: "command", command: ["true"], prices: {inputPerMTok: 1, outputPerMTok: 200}}`, 1)
	root := writeRepo(t, map[string]string{
		"s/suite.cue":      src,
		"s/skill/SKILL.md": "---\nname: skillomega\ndescription: Omega zq7.\n---\n# Omega\n",
		"s/fx/README.md":   "# fixture\n",
	})
	dir := filepath.Join(root, "s")
	p, err := plan.CompileDir(dir)
	if err != nil {
		t.Fatal(suite.PrintError(err, root))
	}
	out := t.TempDir()
	st, err := store.OpenStore(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Cells {
		storeRollout(t, st, p, c, "an answer", nil)
	}
	// Cells already cost $4 in this folder (ledger from the run).
	prior, _ := spend.Open(out, p, 0)
	for _, c := range p.Cells[:4] {
		res, _ := prior.AdmitSession(context.Background(), store.SpendCell, c.ID, c.Rollout)
		prior.Settle(res, store.SpendEntry{Kind: store.SpendCell, ID: c.ID, USD: 1, Estimated: true}, true)
	}
	opts := Options{Out: out, SuiteDir: dir, Jobs: 1, SpendCapUSD: 6.2}
	if _, err := Grade(context.Background(), p, p.Cells, opts); err != nil {
		t.Fatal(err)
	}
	fake := &pricedJudge{}
	// Each call costs $0.8192 (its 4,096 output tokens at $200/MTok), and is
	// admitted by its bound (its prompt's bytes, the margin and the judge's
	// max_tokens), a little more: two fit under 6.2 after the $4, a third not.
	n, _, err := judge.JudgeCells(context.Background(), p, fake, nil, opts.judging())
	if !errors.Is(err, spend.ErrCap) || n != 2 || fake.calls != 2 {
		t.Fatalf("judged %d (%d calls), %v; want 2 judged, then the cap", n, fake.calls, err)
	}
	entries, _ := store.ReadSpend(out)
	var judged float64
	paid, refused := 0, 0
	for _, e := range entries {
		if e.Kind == store.SpendJudge {
			judged += e.USD
		}
		if e.Refused != "" {
			refused++
		} else {
			paid++
		}
	}
	if paid != 6 || refused != 2 || math.Abs(judged-2*0.8192) > 1e-9 {
		t.Errorf("ledger %+v", entries)
	}
	// What the cap left out is not judged, for the cap.
	results, _ := store.Results(p, st)
	if _, _, nj, _, err := judge.JudgedResults(p, st, results); err != nil || len(nj) != 2 || !strings.Contains(nj[0].Why, "spend cap reached") {
		t.Errorf("not judged: %+v %v", nj, err)
	}
	opts.SpendCapUSD = 20
	if n, _, err := judge.JudgeCells(context.Background(), p, fake, nil, opts.judging()); err != nil || n != 2 || fake.calls != 4 {
		t.Errorf("with a higher cap: judged %d (%d calls), %v", n, fake.calls, err)
	}
	if folder, _ := mustSpend(t, out, p); math.Abs(folder-(4+4*0.8192)) > 1e-9 {
		t.Errorf("the folder spent %v, want 4 cells of $1 and 4 judge calls of $0.8192", folder)
	}
}

func mustSpend(t *testing.T, out string, p *plan.Plan) (float64, float64) {
	t.Helper()
	b, err := spend.Open(out, p, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b.Totals()
}

// pricedJudge passes every criterion and reports 4,096 output tokens a call.
type pricedJudge struct {
	mu    sync.Mutex
	calls int
}

func (j *pricedJudge) Ask(_ context.Context, prompt string) (string, store.JudgeUsage, error) {
	j.mu.Lock()
	j.calls++
	j.mu.Unlock()
	return `{"criteria": [{"criterion": 0, "pass": true}, {"criterion": 1, "pass": true}]}`,
		store.JudgeUsage{Model: "priced", Tokens: &grade.Tokens{Output: 4096}}, nil
}

// TestEvaluateSpendCapLeavesJudgingIncomplete: through Evaluate, judge calls the cap
// leaves out make the verdict INCOMPLETE, never a failure; a higher cap finishes them.
// The cells are stored already, so neither run needs an engine.
func TestEvaluateSpendCapLeavesJudgingIncomplete(t *testing.T) {
	src := strings.Replace(rubricSuite, `agent: agents.command & {command: ["true"]}`,
		`agent: agents.command & {command: ["true"], provider: "scripted", script: rules: [{reply: [{text: "x"}]}], prices: perCall: 1}`, 1)
	src = strings.Replace(src, `judge: {provider: "command", command: ["true"]}`,
		`judge: {provider: "command", command: ["sh", "-c", "cat >/dev/null; echo '{\"criteria\": [{\"criterion\": 0, \"pass\": true}, {\"criterion\": 1, \"pass\": true}]}'"], prices: perCall: 1}`, 1)
	root := writeRepo(t, map[string]string{
		"s/suite.cue":      src,
		"s/skill/SKILL.md": "---\nname: skillomega\ndescription: Omega zq7.\n---\n# Omega\n",
		"s/fx/README.md":   "# fixture\n",
	})
	dir := filepath.Join(root, "s")
	p, err := plan.CompileDir(dir)
	if err != nil {
		t.Fatal(suite.PrintError(err, root))
	}
	out := t.TempDir()
	st, err := store.OpenStore(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Cells {
		storeRollout(t, st, p, c, "an answer", nil)
	}
	t.Setenv("DOCKER_HOST", "unix:///nonexistent.sock")
	sum, rep, err := Evaluate(context.Background(), p, Options{Out: out, SuiteDir: dir, Jobs: 2, SpendCapUSD: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.SpendCapReached || sum.SpentUSD != 2 || sum.SpentFolderUSD != 2 || rep.Verdict.Verdict != verdict.VerdictIncomplete ||
		!strings.Contains(strings.Join(rep.Verdict.Reasons, ","), "INCOMPLETE 2 cells not judged") {
		t.Fatalf("summary %+v, verdict %s %v", sum, rep.Verdict.Verdict, rep.Verdict.Reasons)
	}
	if !strings.Contains(DescribeSummary(sum, out, false), "spend cap reached: cells or judge calls were not started") {
		t.Errorf("summary: %s", DescribeSummary(sum, out, false))
	}
	sum, rep, err = Evaluate(context.Background(), p, Options{Out: out, SuiteDir: dir, Jobs: 2, SpendCapUSD: 10})
	if err != nil {
		t.Fatal(err)
	}
	if sum.SpendCapReached || sum.SpentUSD != 2 || sum.SpentFolderUSD != 4 || rep.Verdict.Verdict == verdict.VerdictIncomplete {
		t.Errorf("with a higher cap: summary %+v, verdict %s %v", sum, rep.Verdict.Verdict, rep.Verdict.Reasons)
	}
}
