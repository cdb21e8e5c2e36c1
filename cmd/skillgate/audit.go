package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"

	"github.com/urfave/cli/v2"
)

func auditCommand() *cli.Command {
	return &cli.Command{
		Name:      "audit",
		Usage:     "list a run's cells for human audit, or record an audit decision",
		ArgsUsage: "OUT",
		Description: `Without --id, prints the audit queue of the run folder OUT (audit-queue.json,
or built from the stored results when there is none): every cell whose
deterministic checks and judge disagree, every cell of a case × arm whose
trials disagree, and a seeded 10% sample of the rest; each with the
decisions already recorded for it.

With --id CASE:ARM:TRIAL --decision accept|reject --rationale TEXT, appends
one decision to OUT/audit.jsonl. The ledger only grows; stored results are
never changed.

Exit codes: 0 done, 2 an unknown id, a bad decision, an empty rationale or
an unreadable run folder.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "id", Usage: "the cell `CASE:ARM:TRIAL` decided on"},
			&cli.StringFlag{Name: "decision", Usage: "`accept` or reject the cell's grade"},
			&cli.StringFlag{Name: "rationale", Usage: "the evidence checked, in `TEXT`"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return exit(2, fmt.Errorf("audit needs the run folder OUT"))
			}
			out := c.Args().First()
			if c.IsSet("id") || c.IsSet("decision") || c.IsSet("rationale") {
				if !c.IsSet("id") {
					return exit(2, fmt.Errorf("audit: --decision and --rationale need --id CASE:ARM:TRIAL"))
				}
				d := grade.AuditDecision{ID: c.String("id"), Decision: c.String("decision"), Rationale: c.String("rationale")}
				p, err := plan.ReadPlan(filepath.Join(out, store.FilePlan))
				if err != nil {
					return exit(2, err)
				}
				if err := grade.AppendAudit(out, p, d); err != nil {
					return exit(2, err)
				}
				fmt.Fprintf(os.Stderr, "recorded %s %s in %s\n", d.Decision, d.ID, filepath.Join(out, grade.FileAuditLedger))
				return nil
			}
			items, ok, err := grade.ReadAuditQueue(out)
			if err != nil {
				return exit(2, err)
			}
			if !ok {
				p, err := plan.ReadPlan(filepath.Join(out, store.FilePlan))
				if err != nil {
					return exit(2, err)
				}
				results, err := store.Results(p, &store.Store{Dir: out})
				if err != nil {
					return exit(2, err)
				}
				items = grade.AuditQueue(p, results, p.Suite.Seed)
			}
			ledger, err := grade.ReadAuditLedger(out)
			if err != nil {
				return exit(2, err)
			}
			fmt.Print(describeAudit(items, ledger))
			return nil
		},
	}
}

// describeAudit renders the queue with the decisions recorded for each
// cell, then decisions on cells outside the queue.
func describeAudit(items []grade.AuditItem, ledger []grade.AuditDecision) string {
	byID := map[string][]grade.AuditDecision{}
	for _, d := range ledger {
		byID[d.ID] = append(byID[d.ID], d)
	}
	var b strings.Builder
	decided := 0
	queued := map[string]bool{}
	for _, it := range items {
		queued[it.ID] = true
		outcome := "failed"
		if it.Passed {
			outcome = "passed"
		}
		fmt.Fprintf(&b, "%s\t%s\t%s %s", it.ID, strings.Join(it.Reasons, ","), it.Status, outcome)
		if it.Detail != "" {
			fmt.Fprintf(&b, "\t%s", it.Detail)
		}
		b.WriteByte('\n')
		if len(byID[it.ID]) > 0 {
			decided++
		}
		for _, d := range byID[it.ID] {
			fmt.Fprintf(&b, "\t%s %s: %s\n", d.Decision, d.Time.Format("2006-01-02T15:04:05Z07:00"), d.Rationale)
		}
	}
	fmt.Fprintf(&b, "%d cells to audit, %d decided\n", len(items), decided)
	first := true
	for _, d := range ledger {
		if queued[d.ID] {
			continue
		}
		if first {
			b.WriteString("decisions on cells outside the queue:\n")
			first = false
		}
		fmt.Fprintf(&b, "%s\t%s %s: %s\n", d.ID, d.Decision, d.Time.Format("2006-01-02T15:04:05Z07:00"), d.Rationale)
	}
	return b.String()
}
