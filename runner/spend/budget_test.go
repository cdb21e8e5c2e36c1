package spend

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

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/runner/store"
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
	b, err := Open(t.TempDir(), spendPlan(&suite.Prices{PerCall: usd(1.0), InputPerMTok: usd(1.0), OutputPerMTok: usd(1.0)}, nil), 5)
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
			res, err := b.AdmitSession(ctx, store.SpendCell, "c", "")
			if errors.Is(err, ErrCap) {
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
			held := b.spent + b.held()
			b.mu.Unlock()
			mu.Lock()
			ran++
			maxHeld = max(maxHeld, held)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			if err := b.Settle(res, store.SpendEntry{Kind: store.SpendCell, ID: "c", USD: 1}, true); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	folder, run := b.Totals()
	if ran != 5 || refused != 19 || maxHeld > 5+1e-9 || folder != 5 || run != 5 {
		t.Errorf("ran %d, refused %d, most held %v, spent %v (%v this run); want 5 cells of $1 under $5", ran, refused, maxHeld, folder, run)
	}

	// No per-call price: one cell at a time until one has a cost.
	b, err = Open(t.TempDir(), spendPlan(&suite.Prices{InputPerMTok: usd(1.0), OutputPerMTok: usd(1.0)}, nil), 10)
	if err != nil {
		t.Fatal(err)
	}
	first, err := b.AdmitSession(ctx, store.SpendCell, "c", "")
	if err != nil {
		t.Fatal(err)
	}
	second := make(chan *Hold)
	go func() {
		res, err := b.AdmitSession(ctx, store.SpendCell, "c", "")
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
	b.Settle(first, store.SpendEntry{Kind: store.SpendCell, ID: "a", USD: 3}, true)
	res := <-second
	if res.usd != 3 {
		t.Errorf("the second cell holds %v, want the first one's cost, 3", res.usd)
	}
	// $3 spent, $3 held: one more fits ($9), then none until something settles.
	third, err := b.AdmitSession(ctx, store.SpendCell, "c", "")
	if err != nil {
		t.Fatal(err)
	}
	blocked, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := b.AdmitSession(blocked, store.SpendCell, "c", ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a fourth cell past the cap: %v, want it to wait", err)
	}
	b.Settle(res, store.SpendEntry{Kind: store.SpendCell, ID: "b", USD: 3}, true)
	b.Settle(third, store.SpendEntry{Kind: store.SpendCell, ID: "c", USD: 3}, true)
	if _, err := b.AdmitSession(ctx, store.SpendCell, "c", ""); !errors.Is(err, ErrCap) || !strings.Contains(err.Error(), "(9.0000 spent in this run folder)") {
		t.Errorf("nothing in flight and no room: %v", err)
	}
	// Without a cap everything is admitted at once.
	free, _ := Open(t.TempDir(), spendPlan(nil, nil), 0)
	for i := 0; i < 3; i++ {
		if _, err := free.AdmitSession(ctx, store.SpendCell, "c", ""); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSpendLedgerSurvives: the ledger is the run folder's: a budget opened again
// counts every earlier entry, and a line the process died writing is skipped.
func TestSpendLedgerSurvives(t *testing.T) {
	out := t.TempDir()
	p := spendPlan(&suite.Prices{InputPerMTok: usd(1.0), OutputPerMTok: usd(1.0)}, &suite.Prices{PerCall: usd(0.25)})
	b, err := Open(out, p, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []store.SpendEntry{{Kind: store.SpendCalibration, ID: "calibrate:shell/none/1", USD: 0.5}, {Kind: store.SpendCell, ID: "a/none/1", USD: 2}, {Kind: store.SpendJudge, ID: "k", USD: 0.25, Estimated: true}} {
		res, err := b.AdmitSession(context.Background(), e.Kind, e.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Settle(res, e, true); err != nil {
			t.Fatal(err)
		}
	}
	b2, err := Open(out, p, 100)
	if err != nil {
		t.Fatal(err)
	}
	if folder, run := b2.Totals(); folder != 2.75 || run != 0 || b2.worst[store.SpendCell] != 2 || b2.worst[store.SpendJudge] != 0.25 {
		t.Errorf("reopened: folder %v, run %v, worst %v", folder, run, b2.worst)
	}
	path := filepath.Join(out, store.FileSpend)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"time":"2025-01-01T00:00:00Z","kind":"cell","id":"x","us`)
	f.Close()
	if entries, err := store.ReadSpend(out); err != nil || len(entries) != 3 || !entries[2].Estimated {
		t.Errorf("with a cut last line: %+v %v", entries, err)
	}
	os.WriteFile(path, []byte("{\"kind\":\"cell\",\"usd\":1}\nnot json\n{\"kind\":\"cell\",\"usd\":1}\n"), 0o644)
	if _, err := store.ReadSpend(out); err == nil || !strings.Contains(err.Error(), "spend.jsonl:2") {
		t.Errorf("a damaged ledger: %v", err)
	}
}

// TestCheckSpendCap: a cap needs prices to count with, for the agent and for a real
// judge, and says how to add them.
func TestCheckCap(t *testing.T) {
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
		{openaiPlan(tokens), 5, "the agent's model calls cannot be bounded: an OpenAI Responses request need not name max_output_tokens"},
		{openaiPlan(&suite.Prices{InputPerMTok: usd(3.0), OutputPerMTok: usd(15.0), MaxOutputTokens: tokensOf(128000)}), 5, ""},
		{openaiPlan(&suite.Prices{PerCall: usd(0.5)}), 5, ""},
		{spendPlan(tokens, nil), math.Inf(1), "want a positive amount in USD"},
	} {
		err := CheckCap(c.plan, c.cap)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("cap %v, prices %+v: %v, want %q", c.cap, c.plan.Agent.Prices, err, c.want)
		}
	}
}

func usd(v float64) *float64 { return &v }

// openaiPlan is spendPlan with an OpenAI agent.
func openaiPlan(agent *suite.Prices) *plan.Plan {
	p := spendPlan(agent, nil)
	p.Agent.Provider = "openai"
	return p
}

func tokensOf(n int64) *int64 { return &n }
