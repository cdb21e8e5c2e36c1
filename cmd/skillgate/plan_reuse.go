package main

import (
	"fmt"
	"io"

	"github.com/skillgate/skillgate/runner"
	"github.com/skillgate/skillgate/runner/reuse"

	"github.com/skillgate/skillgate/pipeline/plan"

	"github.com/urfave/cli/v2"
)

// planReuse says, for plan --reuse FROM, which of the plan's cells a
// fresh run folder would take from FROM and which would run, by arm, and
// what the taken ones cost when they ran: runner/reuse.Take's dry run,
// each record verified as run --reuse verifies it, nothing written.
func planReuse(c *cli.Context, p *plan.Plan, w io.Writer) error {
	from := c.String("reuse")
	if from == "" {
		return nil
	}
	dir, err := cacheDir(c)
	if err != nil {
		return err
	}
	if err := needCache(c, dir); err != nil {
		return err
	}
	res, sentinels, err := runner.ReuseFrom(w, reuse.Source{From: from, Cache: dir}, nil, p, p.Cells, true)
	if err != nil {
		return err
	}
	taken := map[string]bool{}
	for _, t := range res.Taken {
		taken[string(t.Key)] = true
	}
	reused, cells := map[string]int{}, map[string]int{}
	total := 0
	for _, cell := range p.Cells {
		cells[cell.Arm]++
		if taken[string(cell.Rollout)] {
			reused[cell.Arm]++
			total++
		}
	}
	again := ""
	if sentinels > 0 {
		again = fmt.Sprintf(", and %d of the reused again as drift sentinels before they count", sentinels)
	}
	fmt.Fprintf(w, "with --reuse %s: %d of %d cells would be reused, %d would run%s\n", from, total, len(p.Cells), len(p.Cells)-total, again)
	for _, a := range p.Arms {
		fmt.Fprintf(w, "  arm %s: %d reused, %d run\n", a.Name, reused[a.Name], cells[a.Name]-reused[a.Name])
	}
	return nil
}
