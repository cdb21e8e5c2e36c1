package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"

	"github.com/skillgate/skillgate/runner/cell"
	"github.com/skillgate/skillgate/runner/internal/bounded"

	"github.com/skillgate/skillgate/runner/images"

	"github.com/skillgate/skillgate/runner/spend"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/gateway"

	"github.com/skillgate/skillgate/runner/docker"

	"github.com/skillgate/skillgate/runner/redact"

	"github.com/skillgate/skillgate/pipeline/plan"
)

// runAdmitted runs a cell once the budget admits it (started is called then) and
// records its cost in the ledger, whatever became of it. A cell the cap leaves no
// room for is not started: the error wraps ErrSpendCap.
func (r *cellRunner) runAdmitted(ctx context.Context, c plan.Cell, kind string, started func(string)) (*store.Rollout, error) {
	res, err := r.budget.AdmitSession(ctx, kind, c.ID, c.Rollout)
	if err != nil {
		return nil, err
	}
	started(c.ID)
	ro, err := r.Run(ctx, c)
	var u gateway.CellUsage
	if r.Gateway != nil {
		u = r.Gateway.Usage(c.ID)
	}
	usd, estimated, priced := spend.Cost(r.Plan.Agent.Prices, u.Tokens, u.Requests > 0)
	if serr := r.budget.Settle(res, store.SpendEntry{Kind: kind, ID: c.ID, Rollout: c.Rollout, USD: usd, Estimated: estimated}, priced); serr != nil && err == nil {
		err = serr
	}
	return ro, err
}

// startCellRunner starts the gateway when the agent reaches a model and
// checks a real provider's key (before the engine, so a refused key stops
// the run within seconds), connects to the engine and removes what a dead
// run into the same folder left. The caller fills in the cases and arms it
// will run; stop releases everything.
func startCellRunner(ctx context.Context, p *plan.Plan, opts Options, out string, st *store.Store, budget *spend.Budget) (r *cellRunner, stop func(), err error) {
	var gateway *gateway.Gateway
	var secrets []redact.Secret
	if usesGateway(p) {
		if budget.Capped() && gatewayPriced(p) {
			opts.spendGate = budget // every model call admitted under the cap
		}
		if gateway, secrets, err = startGateway(p, opts, out); err != nil {
			return nil, nil, err
		}
		if err = preflight(ctx, gateway, p, opts.Log); err != nil {
			gateway.Close()
			os.RemoveAll(filepath.Dir(gateway.Socket()))
			return nil, nil, err
		}
	}
	closeGateway := func() {
		if gateway != nil {
			gateway.Close()
			os.RemoveAll(filepath.Dir(gateway.Socket()))
		}
	}
	engine, err := newBackend(ctx, opts)
	if err != nil {
		closeGateway()
		return nil, nil, err
	}
	outLabel := cell.OutLabel(out)
	if n, err := engine.Sweep(ctx, docker.LabelOut+"="+outLabel); err != nil {
		engine.Close()
		closeGateway()
		return nil, nil, err
	} else if n > 0 {
		fmt.Fprintf(opts.Log, "removed %d containers left by an interrupted run\n", n)
	}
	r = &cellRunner{Runner: &cell.Runner{
		Plan: p, Store: st, Engine: engine, Out: out, RunID: cell.NewRunID(), OutLabel: outLabel,
		Images: images.New(engine, p, st, opts.Log),
		Cases:  map[string]plan.PlanCase{}, Arms: map[string]plan.PlanArm{},
		Gateway: gateway,
		Git:     plan.SuiteGitRevision(p, opts.SuiteDir, out),
	}, budget: budget}
	r.Redact = redact.NewNamed(p, secrets...)
	return r, func() {
		closeGateway()
		engine.Close()
		r.CloseSetups()
	}, nil
}

// cellRunner is the cell room's runner with the run's spend budget, which
// admits each cell (runAdmitted).
type cellRunner struct {
	*cell.Runner
	budget *spend.Budget
}

// prepareImages makes the cell images of the cells before any starts, as
// the run's first phase, so a first run's image builds (an agent image from
// npm takes tens of seconds) show as such rather than as cells that do not
// move. A failed build is the cells' to report: they find it cached.
func (r *cellRunner) prepareImages(ctx context.Context, cells []plan.Cell, jobs int, prog *progress) {
	// A cell image is a case's fixture in an environment, with the skills folder or
	// without: the arms with skills share one.
	type imageKey struct {
		fixture     digest.Digest
		environment string
		skills      bool
	}
	seen := map[imageKey]bool{}
	var first []plan.Cell
	for _, c := range cells {
		pc := r.Cases[c.Case]
		k := imageKey{plan.WorkspaceDigest(pc), pc.Environment, len(plan.CaseArm(r.Plan, pc, r.Arms[c.Arm]).Skills) > 0}
		if !seen[k] {
			seen[k] = true
			first = append(first, c)
		}
	}
	// A case's fixture image is built with the image above it for its arms with skills,
	// when the run asks for one, in one go.
	for _, c := range first {
		pc := r.Cases[c.Case]
		r.Images.Expect(pc, plan.CaseArm(r.Plan, pc, r.Arms[c.Arm]))
	}
	cellsTotal := prog.total
	r.Images.SetLog(prog) // the agent image's build notes go above the live line
	prog.begin(phaseImages, len(first))
	bounded.ForEach(ctx, jobs, first, func(c plan.Cell) {
		pc := r.Cases[c.Case]
		r.Images.CellImage(ctx, pc, plan.CaseArm(r.Plan, pc, r.Arms[c.Arm]))
		prog.step()
	})
	prog.begin(phaseCells, cellsTotal)
}
