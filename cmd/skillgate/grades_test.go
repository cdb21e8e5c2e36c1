package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
)

// storeGrades lays a run folder out without Docker, for scripts: given a
// plan file and the folder, it writes plan.json and one stored grade per
// cell, from "CASE/ARM=TRIALS" grids whose letters are P (passed), F
// (failed a check), V (failed: violated an authored negative expectation)
// and I (invalid). Every completed cell holds one negative expectation,
// kept except by V, so prohibitedOutcome has samples in every arm.
//
//	storegrades PLAN OUT CASE/ARM=PPF...
func storeGrades(args []string) int {
	if len(args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: storegrades PLAN OUT CASE/ARM=TRIALS...")
		return 2
	}
	if err := writeGrades(args[0], args[1], args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "storegrades:", err)
		return 1
	}
	return 0
}

func writeGrades(planFile, out string, grids []string) error {
	p, err := plan.ReadPlan(planFile)
	if err != nil {
		return err
	}
	trials := map[string]string{}
	for _, g := range grids {
		k, v, ok := strings.Cut(g, "=")
		if !ok || len(v) != p.Suite.Trials {
			return fmt.Errorf("grid %q: want CASE/ARM= and %d letters", g, p.Suite.Trials)
		}
		trials[k] = v
	}
	if err := os.MkdirAll(filepath.Join(out, "store", "grades"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, store.FilePlan), p.Encode(), 0o644); err != nil {
		return err
	}
	for _, c := range p.Cells {
		g, ok := trials[c.Case+"/"+c.Arm]
		if !ok {
			return fmt.Errorf("no grid for %s/%s", c.Case, c.Arm)
		}
		r := grade.CellResult{Cell: c.ID, Case: c.Case, Arm: c.Arm, Trial: c.Trial, Rollout: c.Rollout, Grade: c.Grade, Status: grade.StatusCompleted}
		keep := grade.CheckResult{Name: "answer notContains secret", Kind: grade.CheckAnswer, Negative: true, Passed: true}
		switch g[c.Trial-1] {
		case 'P':
			r.Passed, r.Score, r.Checks = true, 1, []grade.CheckResult{keep}
		case 'F':
			r.Score, r.Checks = 0.5, []grade.CheckResult{keep, {Name: "answer contains done", Kind: grade.CheckAnswer}}
		case 'V':
			keep.Passed = false
			r.Score, r.Checks = 0, []grade.CheckResult{keep}
		case 'I':
			r.Status, r.Error, r.Checks = grade.StatusInvalid, "provider error", []grade.CheckResult{}
		default:
			return fmt.Errorf("grid %s/%s: unknown letter %q", c.Case, c.Arm, g[c.Trial-1])
		}
		r.Telemetry.Skills, r.Telemetry.References = []grade.RoutingEvent{}, []grade.RoutingEvent{}
		if err := (&store.Store{Dir: out}).PutGrade(r); err != nil {
			return err
		}
	}
	return nil
}
