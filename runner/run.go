package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/skillgate/skillgate/runner/gateway"
	"github.com/skillgate/skillgate/runner/internal/bounded"
	"github.com/skillgate/skillgate/runner/kube"
	"github.com/skillgate/skillgate/runner/spend"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"
)

// Options control a run.
type Options struct {
	// Out is the run folder: the store, the plan and the reports.
	Out string
	// SuiteDir is the suite folder the plan was compiled from; fixtures and
	// skills are read from it.
	SuiteDir string
	// Jobs is how many cells run at once.
	Jobs int
	// Cases, Arms and Split select cells; empty selects all.
	Cases, Arms []string
	Split       string
	// Shard runs only one share of the plan's cells (see Shard); the zero
	// Shard runs them all.
	Shard Shard
	// DryRun says what would run and starts nothing.
	DryRun bool
	// Calibrate runs only the calibration checks; a policy that asks for
	// calibration runs them first in every real run.
	Calibrate bool
	// SpendCapUSD is the run folder's spend cap, over every run into it: a
	// cell or judge call starts only when its worst case fits under what is
	// left (see runner/spend); 0 means no cap.
	SpendCapUSD float64
	// Replay is a recorded run folder whose exchanges answer the cells'
	// model requests, matched by their content, instead of the plan's
	// provider: no network, no credential.
	Replay string
	// Reuse is a run folder or a pack whose stored rollouts, under the keys
	// of selected cells, are taken into the run folder, verified, before
	// any cell runs (runner/reuse).
	Reuse string
	// Cache is the machine's cache folder the run folder pins its trees
	// from (runner/cache); empty pins by copying the live folders.
	Cache string
	// KeepRollouts puts each valid rollout the run makes into the cache
	// too, for Reuse "cache" in any run folder (runner/reuse.Keep).
	KeepRollouts bool
	// TreesFrom is a run folder whose verified tree snapshots the cells
	// run when there is no suite folder (replaying an imported run).
	TreesFrom string
	// Log receives progress; Terminal draws a bar instead of lines.
	Log      io.Writer
	Terminal bool
	// Kubernetes, when set, runs the cells and their checks as Pods of
	// this cluster instead of containers of the Docker engine.
	Kubernetes *kube.Config
	// Finish is the context of what an interrupted Evaluate still does before it returns:
	// grade the rollouts already stored and write the reports (no cell starts, no judge
	// call). Cancelling it too (a second Ctrl-C) stops that; nil means it is not bounded.
	Finish context.Context

	// onExchange hears of the run's exchanges with a real provider (the
	// providerWatch).
	onExchange func(cell string, fault *gateway.ProviderFault)
	// only, when set, narrows the selection to these cells: one round of
	// sequential stopping (rounds.go).
	only map[string]bool
	// whole is the plan on several agents an agent's share of it runs in
	// (evaluateAgents): the run folder's plan.
	whole *plan.Plan
	// spendGate admits the cells' model calls under the spend cap (runner/spend).
	spendGate gateway.SpendGate
	// onCellStart, when set, hears of each cell as it is admitted, its
	// container about to be made (the benchmarks' start of a run's first cell).
	onCellStart func(cell string)
}

// Summary is what a run did with the selected cells.
type Summary struct {
	Planned  int `json:"planned"`
	Selected int `json:"selected"`
	// Reused cells had a stored rollout; Ran cells started a container.
	Reused int `json:"reused"`
	Ran    int `json:"ran"`
	// Taken counts the rollouts run --reuse took from another run folder
	// (or, in a dry run, would take); they are among Reused.
	Taken int `json:"taken,omitempty"`
	// ReuseRefused says, per model, why reused cells were refused and run
	// again (a provider or agent that changed since they ran).
	ReuseRefused []string `json:"reuseRefused,omitempty"`
	// Sentinels counts the reused cells run again as drift sentinels (or,
	// in a dry run, that would be); they are not among Ran or Selected.
	Sentinels int `json:"sentinels,omitempty"`
	// Statuses counts the selected cells' rollouts by status; cells not run
	// (interrupted, dry run) are not counted.
	Statuses    map[string]int `json:"statuses"`
	Interrupted bool           `json:"interrupted"`
	// SpendCapReached: cells were left unstarted to stay under the cap.
	SpendCapReached bool `json:"spendCapReached"`
	// ProviderStopped says why the provider's faults stopped the run before
	// every cell ran (a refused key, faults in a row); empty when they did not.
	ProviderStopped string `json:"providerStopped,omitempty"`
	// SpentUSD is what this run's model calls cost (cells, and judge calls
	// when Evaluate judged); SpentFolderUSD what every run into the folder
	// has (the spend ledger).
	SpentUSD       float64       `json:"spentUSD"`
	SpentFolderUSD float64       `json:"spentFolderUSD"`
	Elapsed        time.Duration `json:"elapsed"`
	// Shard is the share run, when the run was sharded; ShareComplete says
	// every cell of it has a valid result, judged where the plan judges it.
	Shard         *Shard `json:"shard,omitempty"`
	ShareComplete bool   `json:"shareComplete,omitempty"`
	// NotNeeded counts the cells sequential stopping left out of the
	// selection: no comparison needed them.
	NotNeeded int `json:"notNeeded,omitempty"`
}

// Complete reports whether every selected cell has a valid rollout.
func (s *Summary) Complete() bool {
	return !s.Interrupted && !s.SpendCapReached && s.ProviderStopped == "" && s.Statuses[store.StatusInvalid] == 0 && s.Reused+s.Ran == s.Selected
}

// Select returns the plan's cells matching the filters, in plan order. A
// filter value that matches nothing in the plan is an error, so a typo
// never silently runs nothing.
func Select(p *plan.Plan, cases, arms []string, split string) ([]plan.Cell, error) {
	known := map[string]map[string]bool{"case": {}, "arm": {}, "split": {}}
	splitOf := map[string]string{}
	for _, c := range p.Cases {
		known["case"][c.ID] = true
		known["split"][c.Split] = true
		splitOf[c.ID] = c.Split
	}
	for _, a := range p.Arms {
		known["arm"][a.Name] = true
	}
	for kind, vals := range map[string][]string{"case": cases, "arm": arms, "split": {split}} {
		for _, v := range vals {
			if v != "" && !known[kind][v] {
				return nil, fmt.Errorf("select cells: the plan has no %s %q", kind, v)
			}
		}
	}
	var out []plan.Cell
	for _, c := range p.Cells {
		if (len(cases) == 0 || slices.Contains(cases, c.Case)) &&
			(len(arms) == 0 || slices.Contains(arms, c.Arm)) &&
			(split == "" || splitOf[c.Case] == split) {
			out = append(out, c)
		}
	}
	return out, nil
}

// Run executes the plan's selected cells that have no valid stored rollout,
// each in its own container, and stores their rollouts. Cancelling ctx
// stops starting cells, kills and removes running containers and keeps
// every stored rollout; the summary then says Interrupted.
func Run(ctx context.Context, p *plan.Plan, opts Options) (*Summary, error) {
	start := time.Now()
	cells, err := selectCells(p, opts)
	if err != nil {
		return nil, err
	}
	if opts.Jobs < 1 {
		opts.Jobs = 1
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	out, st, unlock, err := openRunFolder(opts.Out)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := useCache(st, opts); err != nil {
		return nil, err
	}
	budget, err := spend.Open(out, p, opts.SpendCapUSD)
	if err != nil {
		return nil, err
	}
	sum := &Summary{Planned: len(p.Cells), Selected: len(cells), Statuses: map[string]int{}}
	sum.SpentFolderUSD, _ = budget.Totals()
	if opts.Reuse != "" {
		if sum.Taken, sum.Sentinels, err = reuseFrom(st, p, cells, opts); err != nil {
			return nil, err
		}
	}

	todo, queued, err := queueCells(st, cells, sum)
	if err != nil {
		return nil, err
	}
	share := ""
	if !opts.Shard.Whole() {
		s := opts.Shard
		sum.Shard, share = &s, " in shard "+s.String()
	}
	fmt.Fprintf(opts.Log, "%d of %d planned cells selected%s: %d stored, %d to run (%d jobs)\n", len(cells), len(p.Cells), share, sum.Reused, len(cells)-sum.Reused, opts.Jobs)
	if opts.DryRun || len(todo) == 0 {
		sum.Elapsed = time.Since(start)
		return sum, nil
	}

	cases, arms := p.CasesByID(), p.ArmsByName()
	// The cells run the trees pinned here, verified against the plan.
	in := newInputs(p, opts.SuiteDir, st)
	if opts.TreesFrom != "" {
		in.from = &store.Store{Dir: opts.TreesFrom}
	}
	for _, c := range todo {
		if err := in.add(cases[c.Case], plan.CaseArm(p, cases[c.Case], arms[c.Arm])); err != nil {
			return nil, err
		}
	}
	defer st.AwaitPins() // every return leaves the folder's trees whole
	if err := in.pinFirst(); err != nil {
		return nil, err
	}
	// The provider's faults can stop the cells, not what follows them.
	cellCtx, stopCells := context.WithCancel(ctx)
	defer stopCells()
	watch := newProviderWatch(p, stopCells)
	opts.onExchange = watch.exchange
	r, stop, err := startCellRunner(ctx, p, opts, out, st, budget)
	if err != nil {
		return nil, err
	}
	defer func() {
		stop()
		sum.SpentFolderUSD, sum.SpentUSD = budget.Totals()
	}()
	r.Cases, r.Arms = cases, arms
	var done []ranCell
	prog := newProgress(opts.Log, opts.Terminal, len(todo))
	r.prepareImages(ctx, todo, opts.Jobs, prog)
	var mu sync.Mutex
	var fatal error
	bounded.ForEach(cellCtx, opts.Jobs, todo, func(c plan.Cell) {
		ro, err := r.runAdmitted(cellCtx, c, store.SpendCell, func(id string) {
			if opts.onCellStart != nil {
				opts.onCellStart(id)
			}
			prog.started(id)
		})
		mu.Lock()
		switch {
		case errors.Is(err, spend.ErrCap):
			sum.SpendCapReached = true
		case cellCtx.Err() != nil:
			// Interrupted: nothing stored for this cell.
		case err != nil:
			if fatal == nil {
				fatal = err
			}
		default:
			sum.Ran++
			sum.Statuses[ro.Status]++
			sum.SpendCapReached = sum.SpendCapReached || ro.Gateway != nil && ro.Gateway.SpendCut
			done = append(done, ranCell{c, cases[c.Case], plan.CaseArm(p, cases[c.Case], arms[c.Arm]), ro.Status})
		}
		mu.Unlock()
		if ro != nil && cellCtx.Err() == nil {
			prog.finished(c.ID, ro)
		}
	})
	prog.close()
	why, keyRefused := watch.stopped()
	if why != "" {
		sum.ProviderStopped = why
		r.Sweep(ctx)
		if keyRefused && fatal == nil {
			fatal = fmt.Errorf("run cells: %s", why)
		}
	}
	if err := st.AwaitPins(); err != nil && fatal == nil {
		fatal = err
	}
	moved, err := in.invalidateChanged(done, opts.Log)
	if err != nil && fatal == nil {
		fatal = err
	}
	for status, n := range moved {
		sum.Statuses[status] -= n
		sum.Statuses[store.StatusInvalid] += n
	}
	if err := keepRollouts(st, done, opts); err != nil && fatal == nil {
		fatal = err
	}
	countShared(st, cells, todo, queued, sum)
	sum.Interrupted = ctx.Err() != nil
	if sum.Interrupted {
		r.Sweep(ctx)
	}
	sum.Elapsed = time.Since(start)
	return sum, fatal
}

// openRunFolder makes, locks and opens a run folder; unlock releases it.
func openRunFolder(dir string) (out string, st *store.Store, unlock func(), err error) {
	if out, err = filepath.Abs(dir); err != nil {
		return "", nil, nil, fmt.Errorf("resolve run folder: %w", err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", nil, nil, fmt.Errorf("make run folder: %w", err)
	}
	if unlock, err = lockFolder(out); err != nil {
		return "", nil, nil, err
	}
	if st, err = store.OpenStore(out); err != nil {
		unlock()
		return "", nil, nil, err
	}
	return out, st, unlock, nil
}

// lockFolder takes an exclusive lock on the run folder for this process;
// the kernel drops it if the process dies.
func lockFolder(dir string) (func(), error) {
	f, err := store.OpenLock(dir, true) // a link at its path refused, not followed
	if err != nil {
		return nil, fmt.Errorf("lock run folder: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock run folder: another skillgate run is using %s", dir)
		}
		return nil, fmt.Errorf("lock run folder: %w", err)
	}
	return func() { f.Close() }, nil
}

// DescribeSummary renders a run's summary for people.
func DescribeSummary(s *Summary, out string, dryRun bool) string {
	if dryRun {
		if s.Taken > 0 {
			return fmt.Sprintf("dry run: %d cells would run, %d are stored, %d would be reused from --reuse%s; nothing started", s.Selected-s.Reused-s.Taken, s.Reused, s.Taken, drySentinels(s.Sentinels))
		}
		return fmt.Sprintf("dry run: %d cells would run, %d are stored; nothing started", s.Selected-s.Reused, s.Reused)
	}
	var parts []string
	for _, st := range []string{store.StatusCompleted, store.StatusFailed, store.StatusTimeout, store.StatusOOM, store.StatusInvalid} {
		if n := s.Statuses[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	statuses := ""
	if len(parts) > 0 { // a shard's share may hold no cell
		statuses = " (" + strings.Join(parts, ", ") + ")"
	}
	msg := fmt.Sprintf("%d cells: %d ran, %d reused from the store%s in %s; results in %s",
		s.Selected, s.Ran, s.Reused, statuses, s.Elapsed.Round(time.Millisecond), out) + describeRounds(s)
	if s.Sentinels > 0 {
		msg += fmt.Sprintf("\n%d reused cells ran again as drift sentinels before the reused cells counted (not among the cells)", s.Sentinels)
	}
	if s.Shard != nil {
		state := "complete"
		if !s.ShareComplete {
			state = "not complete"
		}
		msg += fmt.Sprintf("\nshard %s: its share of %d of the plan's %d cells is %s; merge every shard's run folder (skillgate merge) for the verdict", s.Shard, s.Selected, s.Planned, state)
	}
	if s.SpentUSD > 0 || s.SpentFolderUSD > 0 {
		msg += fmt.Sprintf("\nmodel spend: $%.4f (the run folder's, over all runs: $%.4f)", s.SpentUSD, s.SpentFolderUSD)
	}
	if s.SpendCapReached {
		msg += "\nspend cap reached: cells or judge calls were not started, or a session was cut at a model call that would pass it; run again with a higher --spend-cap to finish"
	}
	if s.ProviderStopped != "" {
		msg += "\nstopped: " + s.ProviderStopped
	}
	if s.Interrupted {
		msg += "\ninterrupted: run again to finish; stored cells will not run again"
	} else if n := s.Statuses[store.StatusInvalid]; n > 0 {
		msg += fmt.Sprintf("\n%d cells are invalid (Docker, skillgate or the provider failed): run again to retry them", n)
	}
	return msg
}
