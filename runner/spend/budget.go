package spend

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/opencontainers/go-digest"
)

// ErrCap: the spend cap leaves no room for the next cell or judge call. What was
// not started is missing, so the verdict is INCOMPLETE; a run with a higher cap
// finishes it.
var ErrCap = errors.New("spend cap reached")

// epsilon absorbs the rounding of sums of prices.
const epsilon = 1e-12

// Budget admits sessions, their model calls and judge calls under a run folder's
// spend cap, and keeps its ledger. It is safe for concurrent use.
type Budget struct {
	out    string
	capUSD float64 // 0: no cap, admit everything
	// perCall is the stated bound of a session ("cell") and of a judge call
	// ("judge"), when the suite gives one.
	perCall map[string]*float64

	mu       sync.Mutex
	spent    float64 // the ledger's total, this run's entries included
	runSpent float64 // this run's entries
	holds    map[*Hold]bool
	// sessions finds the hold of a cell in flight by its ID, for its calls.
	sessions map[string]*Hold
	calls    int                       // model calls admitted and not settled
	worst    map[string]float64        // the most one entry of the class cost
	byKey    map[digest.Digest]float64 // the most a cell of the rollout key cost
	changed  chan struct{}             // closed, and replaced, whenever something settles
}

// Hold is an admitted session's or judge call's claim on the budget.
type Hold struct {
	class, id string
	// usd is what it was admitted with; used what its settled calls cost, and
	// calls the bounds of its calls in flight.
	usd, used, calls float64
}

// claim is what h holds of the cap: its admission, or more once its calls
// needed more.
func (h *Hold) claim() float64 { return max(h.usd, h.used+h.calls) }

// class groups ledger kinds whose costs are alike: calibration cells are cells.
func class(kind string) string {
	if kind == store.SpendJudge {
		return store.SpendJudge
	}
	return store.SpendCell
}

// Open reads the run folder's ledger into a budget under capUSD (0: none). It
// refuses a cap the plan's calls cannot be held to (CheckCap).
func Open(out string, p *plan.Plan, capUSD float64) (*Budget, error) {
	if err := CheckCap(p, capUSD); err != nil {
		return nil, err
	}
	b := &Budget{out: out, capUSD: capUSD, perCall: map[string]*float64{}, holds: map[*Hold]bool{}, sessions: map[string]*Hold{},
		worst: map[string]float64{}, byKey: map[digest.Digest]float64{}, changed: make(chan struct{})}
	if p.Agent.Prices != nil {
		b.perCall[store.SpendCell] = p.Agent.Prices.PerCall
	}
	if p.Judge != nil && p.Judge.Prices != nil {
		b.perCall[store.SpendJudge] = p.Judge.Prices.PerCall
	}
	entries, err := store.ReadSpend(out)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		b.spent += e.USD
		if e.Refused != "" || e.USD <= 0 {
			continue // a refusal, or a session cut before it paid: no figure
		}
		cl := class(e.Kind)
		b.worst[cl] = max(b.worst[cl], e.USD)
		if e.Rollout != "" {
			b.byKey[e.Rollout] = max(b.byKey[e.Rollout], e.USD)
		}
	}
	return b, nil
}

// Capped says whether the budget has a cap to keep.
func (b *Budget) Capped() bool { return b != nil && b.capUSD > 0 }

// AdmitSession waits until a cell of kind (a cell or a calibration cell) fits
// under the cap by its stated bound, and holds it until Settle. It fails with
// ErrCap, entering the refusal in the ledger, when nothing in flight could free
// room; with ctx's error when ctx ends first.
func (b *Budget) AdmitSession(ctx context.Context, kind, id string, rollout digest.Digest) (*Hold, error) {
	cl := class(kind)
	bound := func() (float64, bool) {
		if p := b.perCall[cl]; p != nil {
			return *p, true
		}
		if v, ok := b.byKey[rollout]; ok {
			return v, true
		}
		w, ok := b.worst[cl]
		return w, ok
	}
	h, err := b.admit(ctx, cl, id, bound)
	if errors.Is(err, ErrCap) {
		if lerr := store.AppendSpend(b.out, store.SpendEntry{Kind: kind, ID: id, Rollout: rollout, Refused: err.Error()}); lerr != nil {
			return nil, lerr
		}
	}
	if err == nil && cl == store.SpendCell {
		b.mu.Lock()
		b.sessions[id] = h
		b.mu.Unlock()
	}
	return h, err
}

// AdmitJudge waits until a judge call fits under the cap by bound (its perCall
// price when the judge has one: then its cost is that price), and holds it until
// Settle; it fails as AdmitSession does.
func (b *Budget) AdmitJudge(ctx context.Context, key string, bound float64) (*Hold, error) {
	if p := b.perCall[store.SpendJudge]; p != nil {
		bound = max(bound, *p)
	}
	h, err := b.admit(ctx, store.SpendJudge, key, func() (float64, bool) { return bound, true })
	if errors.Is(err, ErrCap) {
		if lerr := store.AppendSpend(b.out, store.SpendEntry{Kind: store.SpendJudge, ID: key, Refused: err.Error()}); lerr != nil {
			return nil, lerr
		}
	}
	return h, err
}

// held is what the holds in flight claim, with b.mu held.
func (b *Budget) held() float64 {
	var sum float64
	for h := range b.holds {
		sum += h.claim()
	}
	return sum
}

// admit is AdmitSession's and AdmitJudge's: bound is read under the lock, as a
// settling cell may give the first figure.
func (b *Budget) admit(ctx context.Context, cl, id string, bound func() (float64, bool)) (*Hold, error) {
	for {
		b.mu.Lock()
		if b.capUSD <= 0 {
			h := &Hold{class: cl, id: id}
			b.holds[h] = true
			b.mu.Unlock()
			return h, nil
		}
		worst, known := bound()
		left := b.capUSD - b.spent - b.held()
		switch {
		case left > epsilon && (known && worst <= left+epsilon || !known && len(b.holds) == 0):
			h := &Hold{class: cl, id: id, usd: worst}
			b.holds[h] = true
			b.mu.Unlock()
			return h, nil
		case len(b.holds) == 0:
			b.mu.Unlock()
			if known {
				return nil, fmt.Errorf("%w: its bound $%.4f does not fit the $%.4f left of %.4f USD (%.4f spent in this run folder)", ErrCap, worst, max(left, 0), b.capUSD, b.spent)
			}
			return nil, fmt.Errorf("%w: %.4f of %.4f USD spent in this run folder", ErrCap, b.spent, b.capUSD)
		}
		// Wait for something in flight to settle: it frees its hold, or gives
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

// notify wakes whoever waits for room, with b.mu held.
func (b *Budget) notify() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// Settle releases an admitted hold and appends its cost to the ledger (when it
// has one: priced, or zero for no model call).
func (b *Budget) Settle(h *Hold, e store.SpendEntry, priced bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.holds, h)
	if b.sessions[h.id] == h {
		delete(b.sessions, h.id)
	}
	defer b.notify()
	if !priced {
		return nil
	}
	b.spent += e.USD
	b.runSpent += e.USD
	b.worst[h.class] = max(b.worst[h.class], e.USD)
	if e.Rollout != "" && e.USD > 0 {
		b.byKey[e.Rollout] = max(b.byKey[e.Rollout], e.USD)
	}
	return store.AppendSpend(b.out, e)
}

// Totals are the ledger's sum and this run's part of it.
func (b *Budget) Totals() (folder, run float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spent, b.runSpent
}
