package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/skillgate/skillgate/runner/readback"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// settleFunc grades (and judges) a round's cells, so the next decision
// reads their outcomes.
type settleFunc func(ctx context.Context, cells []plan.Cell) error

// runRounds runs the selected cells: all at once, or, with the policy's
// sequential stopping, round by round. Each round is the earliest round
// holding a needed cell without a valid stored rollout; after it is run
// and settled, the decisions are read again from the store, so an
// interrupted run resumes at the round it stopped in. A shard runs its
// whole share: its comparisons' cells lie in other shards too, so it
// cannot decide alone; merge decides.
func runRounds(ctx context.Context, p *plan.Plan, opts Options, settle settleFunc) (*Summary, error) {
	if p.Policy.Sequential == nil || opts.DryRun {
		return Run(ctx, p, opts)
	}
	if !opts.Shard.Whole() {
		fmt.Fprintf(opts.Log, "sequential: shard %s cannot decide alone (its comparisons' cells lie in other shards too): it runs its whole share; skillgate merge decides\n", opts.Shard)
		return Run(ctx, p, opts)
	}
	start := time.Now()
	selected, err := selectCells(p, opts)
	if err != nil {
		return nil, err
	}
	total := &Summary{Planned: len(p.Cells), Selected: len(selected), Statuses: map[string]int{}}
	// Rollouts stored by an interrupted run are graded first, so the
	// decisions read them before another round starts.
	if err := settle(ctx, selected); err != nil {
		return total, err
	}
	tried := map[int]bool{}
	for {
		seq, err := readback.SequentialOf(opts.Out, p)
		if err != nil {
			return total, err
		}
		round, cells, err := nextRound(opts.Out, p, selected, seq)
		if err != nil {
			return total, err
		}
		if round == 0 || tried[round] {
			break // every needed cell is stored, or a round ran and stays invalid
		}
		tried[round] = true
		fmt.Fprintf(opts.Log, "round %d of %d: %d cells\n", round, seq.Rounds, len(cells))
		ro := opts
		ro.only = map[string]bool{}
		for _, c := range cells {
			ro.only[c.ID] = true
		}
		sum, err := Run(ctx, p, ro)
		if sum != nil {
			total.Ran += sum.Ran
			total.Interrupted = total.Interrupted || sum.Interrupted
			total.SpendCapReached = total.SpendCapReached || sum.SpendCapReached
			total.ProviderStopped = sum.ProviderStopped
			total.SpentUSD += sum.SpentUSD
			total.SpentFolderUSD = sum.SpentFolderUSD
		}
		if err != nil || ctx.Err() != nil || total.SpendCapReached || total.ProviderStopped != "" {
			total.Elapsed = time.Since(start)
			return total, countRounds(opts.Out, p, selected, total, err)
		}
		if err := settle(ctx, cells); err != nil {
			return total, err
		}
	}
	total.Elapsed = time.Since(start)
	return total, countRounds(opts.Out, p, selected, total, nil)
}

// nextRound is the earliest round holding a selected, needed cell without
// a valid stored rollout, and those cells; round 0 when there is none.
func nextRound(out string, p *plan.Plan, selected []plan.Cell, seq *verdict.Sequential) (int, []plan.Cell, error) {
	st := &store.Store{Dir: out}
	skip := notNeeded(seq)
	round := 0
	var cells []plan.Cell
	for _, c := range selected {
		if skip[c.ID] {
			continue
		}
		r := (c.Trial-1)/seq.Round + 1
		if round != 0 && r > round {
			continue
		}
		ro, ok, err := st.Rollout(c.Rollout)
		if err != nil {
			return 0, nil, err
		}
		if ok && ro.Status != store.StatusInvalid {
			continue
		}
		if round == 0 || r < round {
			round, cells = r, nil
		}
		cells = append(cells, c)
	}
	return round, cells, nil
}

// countRounds fills the run's summary from the store: the selected cells
// the sequential rule needs, by status, and those it did not.
func countRounds(out string, p *plan.Plan, selected []plan.Cell, sum *Summary, err error) error {
	seq, serr := readback.SequentialOf(out, p)
	if serr != nil {
		if err == nil {
			err = serr
		}
		return err
	}
	st := &store.Store{Dir: out}
	skip := notNeeded(seq)
	sum.Statuses, sum.Reused, sum.NotNeeded, sum.Selected = map[string]int{}, 0, 0, 0
	stored := 0
	for _, c := range selected {
		if skip[c.ID] {
			sum.NotNeeded++
			continue
		}
		sum.Selected++
		if ro, ok, rerr := st.Rollout(c.Rollout); rerr == nil && ok {
			sum.Statuses[ro.Status]++
			stored++
		}
	}
	sum.Reused = max(0, stored-sum.Ran)
	return err
}

// notNeeded is the set of cells the sequential rule did not need.
func notNeeded(seq *verdict.Sequential) map[string]bool {
	out := map[string]bool{}
	if seq != nil {
		for _, c := range seq.NotNeeded {
			out[c.Cell] = true
		}
	}
	return out
}

// describeRounds says what sequential stopping left unrun, for the run's
// summary.
func describeRounds(s *Summary) string {
	if s.NotNeeded == 0 {
		return ""
	}
	return fmt.Sprintf("\nsequential stopping: %d selected cells not needed (see the verdict for why each comparison stopped)", s.NotNeeded)
}
