package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/skillgate/skillgate/runner/gateway"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"

	"github.com/opencontainers/go-digest"
)

// The spend cap never changes a result: it only decides whether a cell (or a judge
// call) starts. A cell starts when its worst case fits under what is left of the cap,
// counting what every earlier run into the folder spent (the ledger) and the worst
// cases of the cells in flight; a started cell always finishes, its model calls
// untouched. The worst case is the suite's per-call price when it gives one, else the
// most any cell of the folder has cost so far; with neither, cells start one at a time
// until one has finished and so given a figure.

// FileSpend is the run folder's spend ledger: one JSON line per cell, calibration cell
// or judge call that had a cost, appended when the cost is known and never rewritten.
const FileSpend = "store/spend.jsonl"

// ErrSpendCap: the spend cap leaves no room for the next cell or judge call. What was
// not started is missing, so the verdict is INCOMPLETE; a run with a higher cap
// finishes it.
var ErrSpendCap = errors.New("spend cap reached")

// Kinds of SpendEntry.
const (
	SpendCell        = "cell"
	SpendCalibration = "calibration"
	SpendJudge       = "judge"
)

// SpendEntry is one line of the spend ledger.
type SpendEntry struct {
	Time time.Time `json:"time"`
	Kind string    `json:"kind"`
	// ID is the cell's ID, or the judgement's key.
	ID      string        `json:"id"`
	Rollout digest.Digest `json:"rollout,omitempty"`
	USD     float64       `json:"usd"`
	// Estimated: the per-call price, for want of token counts and token prices.
	Estimated bool `json:"estimated,omitempty"`
}

// capPriced: prices the spend cap can count with.
func capPriced(p *suite.Prices) bool {
	return p != nil && (p.PerCall != nil || p.InputPerMTok != nil && p.OutputPerMTok != nil)
}

// SpendCost is what one cell or judge call cost: its tokens at the prices, else the
// per-call price when it made a model call; ok is false when there is nothing to
// record (no model call, or no price to count it with).
func SpendCost(p *suite.Prices, t *grade.Tokens, called bool) (usd float64, estimated, ok bool) {
	if v := gateway.PriceTokens(p, t); v != nil {
		return *v, false, true
	}
	if !called {
		return 0, false, false // nothing to record
	}
	if p != nil && p.PerCall != nil {
		return *p.PerCall, true, true
	}
	return 0, false, false
}

// CheckSpendCap refuses a spend cap that cannot be kept: a negative or non-finite one,
// or one on a suite whose agent (or real judge) has no prices to count with. It needs
// nothing but the plan, so a run stops on it before any engine or provider is asked.
func CheckSpendCap(p *plan.Plan, capUSD float64) error {
	if capUSD == 0 {
		return nil
	}
	if capUSD < 0 || math.IsNaN(capUSD) || math.IsInf(capUSD, 0) {
		return fmt.Errorf("check spend cap: --spend-cap %v: want a positive amount in USD", capUSD)
	}
	if p.Agent.Provider == "none" {
		return fmt.Errorf("check spend cap: suite %s: the agent calls no model (provider \"none\"): there is no spend to cap; run without --spend-cap", p.Suite.Name)
	}
	if !capPriced(p.Agent.Prices) {
		return fmt.Errorf("check spend cap: suite %s gives its agent no prices, so --spend-cap has nothing to count; "+
			"add the model's USD prices per million tokens to the agent, as in `agent: prices: {inputPerMTok: 3, outputPerMTok: 15}`, "+
			"or an estimate per cell, as in `agent: prices: perCall: 0.5`", p.Suite.Name)
	}
	if j := p.Judge; j != nil && (j.Provider == "anthropic" || j.Provider == "openai") && !capPriced(j.Prices) {
		return fmt.Errorf("check spend cap: suite %s gives its %s judge no prices, so --spend-cap cannot count its calls; "+
			"add them as in `judge: prices: {inputPerMTok: 3, outputPerMTok: 15}`, or an estimate per call, as in `judge: prices: perCall: 0.05`",
			p.Suite.Name, j.Provider)
	}
	return nil
}

// SpendBudget admits cells and judge calls under a run folder's spend cap and keeps
// its ledger. It is safe for concurrent use.
type SpendBudget struct {
	path   string
	capUSD float64 // 0: no cap, admit everything
	// perCall is the worst case of a cell ("cell") and of a judge call ("judge"), when
	// the suite gives one.
	perCall map[string]*float64

	mu       sync.Mutex
	spent    float64 // the ledger's total, this run's entries included
	runSpent float64 // this run's entries
	reserved float64 // worst cases of what is in flight
	inFlight int
	worst    map[string]float64 // the most one entry of the class cost, in the ledger
	changed  chan struct{}      // closed, and replaced, whenever something settles
}

// spendReservation is an admitted cell's or judge call's hold on the budget.
type spendReservation struct {
	class string
	usd   float64
}

// spendClass groups ledger kinds whose costs are alike: calibration cells are cells.
func spendClass(kind string) string {
	if kind == SpendJudge {
		return SpendJudge
	}
	return SpendCell
}

// OpenSpend reads the run folder's ledger into a budget under capUSD (0: none).
func OpenSpend(out string, p *plan.Plan, capUSD float64) (*SpendBudget, error) {
	if err := CheckSpendCap(p, capUSD); err != nil {
		return nil, err
	}
	b := &SpendBudget{path: filepath.Join(out, filepath.FromSlash(FileSpend)), capUSD: capUSD,
		perCall: map[string]*float64{}, worst: map[string]float64{}, changed: make(chan struct{})}
	if p.Agent.Prices != nil {
		b.perCall[SpendCell] = p.Agent.Prices.PerCall
	}
	if p.Judge != nil && p.Judge.Prices != nil {
		b.perCall[SpendJudge] = p.Judge.Prices.PerCall
	}
	entries, err := ReadSpend(out)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		b.spent += e.USD
		cl := spendClass(e.Kind)
		b.worst[cl] = max(b.worst[cl], e.USD)
	}
	return b, nil
}

// ReadSpend reads a run folder's spend ledger; none is an empty one. A last line cut
// short (the process died writing it) is skipped; any other bad line is an error.
func ReadSpend(out string) ([]SpendEntry, error) {
	path := filepath.Join(out, filepath.FromSlash(FileSpend))
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read spend ledger: %w", err)
	}
	var entries []SpendEntry
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e SpendEntry
		if err := json.Unmarshal(line, &e); err != nil {
			if !bytes.HasSuffix(b, []byte("\n")) && bytes.HasSuffix(b, line) {
				break // the last line, never finished
			}
			return nil, fmt.Errorf("read spend ledger %s:%d: %w", path, n, err)
		}
		entries = append(entries, e)
	}
	return entries, sc.Err()
}

// FolderSpend is what the run folder's ledger adds up to.
func FolderSpend(out string) (float64, error) {
	entries, err := ReadSpend(out)
	var sum float64
	for _, e := range entries {
		sum += e.USD
	}
	return sum, err
}

// Admit waits until a cell or judge call of kind fits under the cap, and holds its
// worst case until settle. It fails with ErrSpendCap when nothing in flight could free
// room, and with ctx's error when ctx ends first.
func (b *SpendBudget) Admit(ctx context.Context, kind string) (*spendReservation, error) {
	cl := spendClass(kind)
	for {
		b.mu.Lock()
		if b.capUSD <= 0 {
			b.inFlight++
			b.mu.Unlock()
			return &spendReservation{class: cl}, nil
		}
		worst, known := b.worstCase(cl)
		left := b.capUSD - b.spent - b.reserved
		switch {
		case known && worst <= left+1e-12, !known && b.inFlight == 0 && left > 0:
			b.reserved += worst
			b.inFlight++
			b.mu.Unlock()
			return &spendReservation{class: cl, usd: worst}, nil
		case b.inFlight == 0:
			b.mu.Unlock()
			return nil, fmt.Errorf("%w: %.4f of %.4f USD spent in this run folder", ErrSpendCap, b.spent, b.capUSD)
		}
		// Wait for something in flight to settle: it frees its reservation, or gives
		// the first figure of a cost.
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-changed:
		}
	}
}

// worstCase is what one more of class may cost: the per-call price, else the most one
// has cost in this folder; known is false before either exists.
func (b *SpendBudget) worstCase(cl string) (usd float64, known bool) {
	if p := b.perCall[cl]; p != nil {
		return *p, true
	}
	w, ok := b.worst[cl]
	return w, ok
}

// Settle releases an admitted reservation and appends its cost to the ledger (when it
// has one: priced, or zero for no model call).
func (b *SpendBudget) Settle(res *spendReservation, e SpendEntry, priced bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reserved -= res.usd
	b.inFlight--
	defer func() {
		close(b.changed)
		b.changed = make(chan struct{})
	}()
	if !priced {
		return nil
	}
	b.spent += e.USD
	b.runSpent += e.USD
	b.worst[res.class] = max(b.worst[res.class], e.USD)
	if e.Time.IsZero() {
		e.Time = time.Now().UTC().Round(time.Millisecond)
	}
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("write spend ledger: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(b.path), 0o755); err != nil {
		return fmt.Errorf("write spend ledger: %w", err)
	}
	f, err := os.OpenFile(b.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("write spend ledger: %w", err)
	}
	_, err = f.Write(append(line, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write spend ledger: %w", err)
	}
	return nil
}

// Totals are the ledger's sum and this run's part of it.
func (b *SpendBudget) Totals() (folder, run float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spent, b.runSpent
}
