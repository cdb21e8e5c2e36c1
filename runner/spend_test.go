package runner

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// spendPlan is a plan with only what the budget reads.
func spendPlan(agent, judge *suite.Prices) *plan.Plan {
	p := &plan.Plan{Agent: plan.PlanAgent{Agent: suite.Agent{Provider: "anthropic", Prices: agent}}}
	p.Suite.Name = "spendtest"
	if judge != nil {
		p.Judge = &plan.PlanJudge{Judge: suite.Judge{Provider: "anthropic", Prices: judge}}
	}
	return p
}

// TestSpendAdmissionNeverOvershoots runs many cells at once under a cap: with a
// per-call price, what is spent and held never passes the cap, and as many cells run
// as fit; without one, the first cell runs alone until its cost is known, then the
// most a cell has cost is every next cell's worst case.
func TestSpendAdmissionNeverOvershoots(t *testing.T) {
	ctx := context.Background()
	b, err := openSpend(t.TempDir(), spendPlan(&suite.Prices{PerCall: usd(1.0), InputPerMTok: usd(1.0), OutputPerMTok: usd(1.0)}, nil), 5)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	ran, refused, maxHeld := 0, 0, 0.0
	var wg sync.WaitGroup
	for i := 0; i < 24; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := b.admit(ctx, SpendCell)
			if errors.Is(err, ErrSpendCap) {
				mu.Lock()
				refused++
				mu.Unlock()
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			b.mu.Lock()
			held := b.spent + b.reserved
			b.mu.Unlock()
			mu.Lock()
			ran++
			maxHeld = max(maxHeld, held)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			if err := b.settle(res, SpendEntry{Kind: SpendCell, ID: "c", USD: 1}, true); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	folder, run := b.totals()
	if ran != 5 || refused != 19 || maxHeld > 5+1e-9 || folder != 5 || run != 5 {
		t.Errorf("ran %d, refused %d, most held %v, spent %v (%v this run); want 5 cells of $1 under $5", ran, refused, maxHeld, folder, run)
	}

	// No per-call price: one cell at a time until one has a cost.
	b, err = openSpend(t.TempDir(), spendPlan(&suite.Prices{InputPerMTok: usd(1.0), OutputPerMTok: usd(1.0)}, nil), 10)
	if err != nil {
		t.Fatal(err)
	}
	first, err := b.admit(ctx, SpendCell)
	if err != nil {
		t.Fatal(err)
	}
	second := make(chan *spendReservation)
	go func() {
		res, err := b.admit(ctx, SpendCell)
		if err != nil {
			t.Error(err)
		}
		second <- res
	}()
	select {
	case <-second:
		t.Fatal("a second cell started before the first one's cost was known")
	case <-time.After(150 * time.Millisecond):
	}
	b.settle(first, SpendEntry{Kind: SpendCell, ID: "a", USD: 3}, true)
	res := <-second
	if res.usd != 3 {
		t.Errorf("the second cell holds %v, want the first one's cost, 3", res.usd)
	}
	// $3 spent, $3 held: one more fits ($9), then none until something settles.
	third, err := b.admit(ctx, SpendCell)
	if err != nil {
		t.Fatal(err)
	}
	blocked, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := b.admit(blocked, SpendCell); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a fourth cell past the cap: %v, want it to wait", err)
	}
	b.settle(res, SpendEntry{Kind: SpendCell, ID: "b", USD: 3}, true)
	b.settle(third, SpendEntry{Kind: SpendCell, ID: "c", USD: 3}, true)
	if _, err := b.admit(ctx, SpendCell); !errors.Is(err, ErrSpendCap) || !strings.Contains(err.Error(), "9.0000 of 10.0000 USD") {
		t.Errorf("nothing in flight and no room: %v", err)
	}
	// Without a cap everything is admitted at once.
	free, _ := openSpend(t.TempDir(), spendPlan(nil, nil), 0)
	for i := 0; i < 3; i++ {
		if _, err := free.admit(ctx, SpendCell); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSpendLedgerSurvives: the ledger is the run folder's: a budget opened again
// counts every earlier entry, and a line the process died writing is skipped.
func TestSpendLedgerSurvives(t *testing.T) {
	out := t.TempDir()
	p := spendPlan(&suite.Prices{InputPerMTok: usd(1.0), OutputPerMTok: usd(1.0)}, &suite.Prices{PerCall: usd(0.25)})
	b, err := openSpend(out, p, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []SpendEntry{{Kind: SpendCalibration, ID: "calibrate:shell/none/1", USD: 0.5}, {Kind: SpendCell, ID: "a/none/1", USD: 2}, {Kind: SpendJudge, ID: "k", USD: 0.25, Estimated: true}} {
		res, err := b.admit(context.Background(), e.Kind)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.settle(res, e, true); err != nil {
			t.Fatal(err)
		}
	}
	b2, err := openSpend(out, p, 100)
	if err != nil {
		t.Fatal(err)
	}
	if folder, run := b2.totals(); folder != 2.75 || run != 0 || b2.worst[SpendCell] != 2 || b2.worst[SpendJudge] != 0.25 {
		t.Errorf("reopened: folder %v, run %v, worst %v", folder, run, b2.worst)
	}
	path := filepath.Join(out, FileSpend)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"time":"2025-01-01T00:00:00Z","kind":"cell","id":"x","us`)
	f.Close()
	if entries, err := ReadSpend(out); err != nil || len(entries) != 3 || !entries[2].Estimated {
		t.Errorf("with a cut last line: %+v %v", entries, err)
	}
	os.WriteFile(path, []byte("{\"kind\":\"cell\",\"usd\":1}\nnot json\n{\"kind\":\"cell\",\"usd\":1}\n"), 0o644)
	if _, err := ReadSpend(out); err == nil || !strings.Contains(err.Error(), "spend.jsonl:2") {
		t.Errorf("a damaged ledger: %v", err)
	}
}

// TestCheckSpendCap: a cap needs prices to count with, for the agent and for a real
// judge, and says how to add them.
func TestCheckSpendCap(t *testing.T) {
	tokens := &suite.Prices{InputPerMTok: usd(3.0), OutputPerMTok: usd(15.0)}
	for _, c := range []struct {
		plan *plan.Plan
		cap  float64
		want string
	}{
		{spendPlan(nil, nil), 0, ""},
		{spendPlan(tokens, nil), 5, ""},
		{spendPlan(&suite.Prices{PerCall: usd(0.5)}, nil), 5, ""},
		{spendPlan(nil, nil), 5, "check spend cap: suite spendtest gives its agent no prices, so --spend-cap has nothing to count; add the model's USD prices per million tokens to the agent, as in `agent: prices: {inputPerMTok: 3, outputPerMTok: 15}`, or an estimate per cell, as in `agent: prices: perCall: 0.5`"},
		{spendPlan(&suite.Prices{InputPerMTok: usd(3.0)}, nil), 5, "gives its agent no prices"},
		{spendPlan(tokens, &suite.Prices{}), 5, "gives its anthropic judge no prices"},
		{spendPlan(tokens, &suite.Prices{PerCall: usd(0.01)}), 5, ""},
		{spendPlan(tokens, nil), -1, "want a positive amount in USD"},
		{spendPlan(tokens, nil), math.Inf(1), "want a positive amount in USD"},
	} {
		err := CheckSpendCap(c.plan, c.cap)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("cap %v, prices %+v: %v, want %q", c.cap, c.plan.Agent.Prices, err, c.want)
		}
	}
}

// TestSpendCapCountsJudgeCalls: judge calls are admitted under the run folder's cap
// and entered in its ledger at the judge's prices; those the cap leaves out are
// missing, and a later call with a higher cap judges them.
func TestSpendCapCountsJudgeCalls(t *testing.T) {
	src := strings.Replace(rubricSuite, `agent: agents.command & {command: ["true"]}`,
		`agent: agents.command & {command: ["true"], provider: "scripted", script: rules: [{reply: [{text: "x"}]}], prices: perCall: 1}`, 1)
	src = strings.Replace(src, `judge: {provider: "command", command: ["true"]}`,
		`judge: {provider: "command", command: ["true"], prices: {inputPerMTok: 1, outputPerMTok: 1}}`, 1)
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
	store, err := OpenStore(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Cells {
		storeRollout(t, store, p, c, "an answer", nil)
	}
	// Cells already cost $4 in this folder (ledger from the run).
	prior, _ := openSpend(out, p, 0)
	for _, c := range p.Cells[:4] {
		res, _ := prior.admit(context.Background(), SpendCell)
		prior.settle(res, SpendEntry{Kind: SpendCell, ID: c.ID, USD: 1, Estimated: true}, true)
	}
	opts := Options{Out: out, SuiteDir: dir, Jobs: 1, SpendCapUSD: 6.5}
	if _, err := Grade(context.Background(), p, p.Cells, opts); err != nil {
		t.Fatal(err)
	}
	judge := &pricedJudge{}
	// Each call costs $1 (1M tokens at $1/MTok): two fit under 6.5 after the $4.
	n, _, err := JudgeCells(context.Background(), p, judge, nil, opts)
	if !errors.Is(err, ErrSpendCap) || n != 2 || judge.calls != 2 {
		t.Fatalf("judged %d (%d calls), %v; want 2 judged, then the cap", n, judge.calls, err)
	}
	entries, _ := ReadSpend(out)
	var judged float64
	for _, e := range entries {
		if e.Kind == SpendJudge {
			judged += e.USD
		}
	}
	if len(entries) != 6 || judged != 2 {
		t.Errorf("ledger %+v", entries)
	}
	opts.SpendCapUSD = 20
	if n, _, err := JudgeCells(context.Background(), p, judge, nil, opts); err != nil || n != 2 || judge.calls != 4 {
		t.Errorf("with a higher cap: judged %d (%d calls), %v", n, judge.calls, err)
	}
	if folder, _ := mustSpend(t, out, p); folder != 8 {
		t.Errorf("the folder spent %v, want 4 cells and 4 judge calls of $1", folder)
	}
}

func mustSpend(t *testing.T, out string, p *plan.Plan) (float64, float64) {
	t.Helper()
	b, err := openSpend(out, p, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b.totals()
}

// pricedJudge passes every criterion and reports a million input tokens a call.
type pricedJudge struct {
	mu    sync.Mutex
	calls int
}

func (j *pricedJudge) Ask(_ context.Context, prompt string) (string, JudgeUsage, error) {
	j.mu.Lock()
	j.calls++
	j.mu.Unlock()
	return `{"criteria": [{"criterion": 0, "pass": true}, {"criterion": 1, "pass": true}]}`,
		JudgeUsage{Model: "priced", Tokens: &grade.Tokens{Input: 1_000_000}}, nil
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
	store, err := OpenStore(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Cells {
		storeRollout(t, store, p, c, "an answer", nil)
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
	if !strings.Contains(DescribeSummary(sum, out, false), "spend cap reached: cells or judge calls were left unstarted") {
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

func usd(v float64) *float64 { return &v }
