package spend

import (
	"context"
	"fmt"
)

// AdmitCall waits until a model call of cell fits under the cap by bound, its
// upper bound in USD, and holds it until SettleCall. The call draws first on
// what its session was admitted with; past that, on what the cap has left. It
// waits while other calls are in flight (they end, and may free room), and fails
// with ErrCap when none is: the gateway then refuses the call, and the session
// is cut. The gateway calls it (gateway.SpendGate).
func (b *Budget) AdmitCall(ctx context.Context, cell string, bound float64) error {
	for {
		b.mu.Lock()
		if b.capUSD <= 0 {
			b.mu.Unlock()
			return nil
		}
		h := b.sessions[cell]
		if h == nil {
			b.mu.Unlock()
			return fmt.Errorf("%w: cell %s was not admitted under it", ErrCap, cell)
		}
		extra := max(h.usd, h.used+h.calls+bound) - h.claim()
		left := b.capUSD - b.spent - b.held()
		if extra <= left+epsilon {
			h.calls += bound
			b.calls++
			b.mu.Unlock()
			return nil
		}
		if b.calls == 0 {
			b.mu.Unlock()
			return fmt.Errorf("%w: the model call's bound $%.4f does not fit the $%.4f left of %.4f USD", ErrCap, bound, max(left, 0), b.capUSD)
		}
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// SettleCall releases an admitted call of cell, which cost usd; a call whose
// cost is unknown (its stream cut before the usage) is settled at its bound.
func (b *Budget) SettleCall(cell string, bound, usd float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.capUSD <= 0 {
		return
	}
	b.calls--
	if h := b.sessions[cell]; h != nil {
		h.calls -= bound
		h.used += usd
	}
	b.notify()
}
