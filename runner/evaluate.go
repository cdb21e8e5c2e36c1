package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/skillgate/skillgate/pipeline"
)

// FilePlan is the plan a run folder's reports describe.
const FilePlan = "plan.json"

// Evaluate runs the plan's selected cells, grades them, and writes the
// verdict and reports for the whole plan into the run folder. Cells not
// run (filtered out, interrupted) count as missing, so a partial run is
// INCOMPLETE, never a pass.
func Evaluate(ctx context.Context, p *pipeline.Plan, opts Options) (*Summary, *pipeline.Report, error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	sum, err := Run(ctx, p, opts)
	if err != nil {
		return sum, nil, err
	}
	if opts.DryRun {
		return sum, nil, nil
	}
	cells, err := Select(p, opts.Cases, opts.Arms, opts.Split)
	if err != nil {
		return sum, nil, err
	}
	n, err := Grade(ctx, p, cells, opts)
	if n > 0 {
		fmt.Fprintf(opts.Log, "graded %d cells\n", n)
	}
	if err != nil && ctx.Err() == nil {
		return sum, nil, err
	}
	if err := os.WriteFile(filepath.Join(opts.Out, FilePlan), p.Encode(), 0o644); err != nil {
		return sum, nil, fmt.Errorf("write plan: %w", err)
	}
	r, err := Report(opts.Out)
	return sum, r, err
}

// Report rebuilds the verdict and every report of a run folder from its
// plan and stored results alone: no Docker, no model. The same stored
// results always give the same bytes.
func Report(out string) (*pipeline.Report, error) {
	p, err := pipeline.ReadPlan(filepath.Join(out, FilePlan))
	if err != nil {
		return nil, err
	}
	store := &Store{Dir: out}
	results, err := Results(p, store)
	if err != nil {
		return nil, err
	}
	r := pipeline.BuildReport(p, results)
	r.StandIn = p.Agent.StandIn
	if err := pipeline.WriteReports(out, r); err != nil {
		return nil, err
	}
	return r, nil
}
