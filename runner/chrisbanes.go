package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/report"
	"github.com/skillgate/skillgate/pipeline/verdict"
	"github.com/skillgate/skillgate/runner/judge"
	"github.com/skillgate/skillgate/runner/store"
)

// Regraded is a run's cells graded again by RegradeRun: their evidence
// under the run's own plan (Before, the original grades and judgements)
// and under the suite as it is now (After, the new deterministic checks,
// not judged), and the cells that could not be regraded because what the
// agent does in them changed.
type Regraded struct {
	Run    *plan.Plan
	Report *verdict.Report
	Before *report.Evidence
	After  *report.Evidence
	// Verdict is the regraded cells' own: each one's new deterministic
	// grade with its original judgement, the cells not regraded missing.
	Verdict verdict.Verdict
	// NeedRollout names the run's cells whose rollout key differs under p:
	// regrading cannot stand for a new rollout.
	NeedRollout []string
}

// RegradeRun re-applies the deterministic checks of plan p (compiled from
// the suite as it is now) to the run in folder out: no agent and no model
// is called, and no stored record is changed. The new grades are stored
// under their own grade keys beside the original ones, which stay as they
// were, as do the rollouts, packets and judgements.
func RegradeRun(ctx context.Context, out string, p *plan.Plan, opts Options) (*Regraded, error) {
	run, r, results, err := buildRun(out)
	if err != nil {
		return nil, err
	}
	st := &store.Store{Dir: out}
	before, err := cellEvidence(run, st, results)
	if err != nil {
		return nil, err
	}
	was := map[string]plan.Cell{}
	for _, c := range run.Cells {
		was[c.ID] = c
	}
	g := &Regraded{Run: run, Report: r, Before: before}
	var todo []plan.Cell
	for _, c := range p.Cells {
		o, ok := was[c.ID]
		switch {
		case !ok:
		case o.Rollout != c.Rollout:
			g.NeedRollout = append(g.NeedRollout, c.ID)
		default:
			todo = append(todo, c)
		}
	}
	opts.Out = out
	if _, err := Grade(ctx, p, todo, opts); err != nil {
		return nil, fmt.Errorf("regrade %s: %w", out, err)
	}
	now, err := store.Results(p, st)
	if err != nil {
		return nil, err
	}
	judged := map[string]grade.CellResult{}
	for _, res := range results {
		judged[res.Cell] = res
	}
	cases := p.CasesByID()
	var kept []grade.CellResult
	decided := make([]grade.CellResult, len(p.Cells))
	for i, c := range p.Cells {
		decided[i] = now[i]
		if !slices.ContainsFunc(todo, func(t plan.Cell) bool { return t.ID == c.ID }) {
			decided[i].Status = grade.StatusMissing
			continue
		}
		kept = append(kept, now[i])
		if j := judged[c.ID].Judge; j != nil {
			decided[i] = grade.ApplyRubric(now[i], cases[c.Case], *j)
		}
	}
	if g.After, err = cellEvidence(p, st, kept); err != nil {
		return nil, err
	}
	g.Verdict = verdict.BuildReport(p, decided).Verdict
	return g, nil
}

// RejudgedRun is the run in folder out with each rubric cell's judgement
// replaced by the one rejudgement stored for its packet under
// rejudged/*/judgements, and the cells' evidence with them. It never
// guesses: a packet the plan needs that is not stored, a packet with no
// rejudgement and a packet with more than one (from several other judges)
// are each an error naming the cell, and nothing is returned.
func RejudgedRun(out string) (*plan.Plan, *verdict.Report, *report.Evidence, error) {
	p, r, results, err := buildRun(out)
	if err != nil {
		return nil, nil, nil, err
	}
	st := &store.Store{Dir: out}
	cases := p.CasesByID()
	dirs, err := filepath.Glob(filepath.Join(out, judge.DirRejudged, "*", "judgements"))
	if err != nil {
		return nil, nil, nil, err
	}
	var problems []string
	for i, c := range p.Cells {
		pc := cases[c.Case]
		res := results[i]
		if len(pc.Rubric) == 0 || res.Status == grade.StatusMissing || res.Status == grade.StatusInvalid && res.Judge == nil {
			continue
		}
		key := c.Grade.Encoded()
		if _, err := os.Stat(st.PacketPath(key)); errors.Is(err, fs.ErrNotExist) {
			problems = append(problems, fmt.Sprintf("%s: its packet %s is not stored", c.ID, key[:12]))
			continue
		} else if err != nil {
			return nil, nil, nil, err
		}
		var found []string
		for _, d := range dirs {
			if _, err := os.Stat(filepath.Join(d, key+".json")); err == nil {
				found = append(found, d)
			}
		}
		switch len(found) {
		case 0:
			problems = append(problems, fmt.Sprintf("%s: packet %s has no rejudgement", c.ID, key[:12]))
			continue
		case 1:
		default:
			var hex []string
			for _, d := range found {
				hex = append(hex, filepath.Base(filepath.Dir(d)))
			}
			problems = append(problems, fmt.Sprintf("%s: packet %s has %d rejudgements (rejudged/%s)", c.ID, key[:12], len(found), strings.Join(hex, ", rejudged/")))
			continue
		}
		b, err := os.ReadFile(filepath.Join(found[0], key+".json"))
		if err != nil {
			return nil, nil, nil, err
		}
		var jd store.Judgement
		if err := json.Unmarshal(b, &jd); err != nil || jd.Key != key {
			problems = append(problems, fmt.Sprintf("%s: rejudgement %s is unreadable", c.ID, filepath.Join(found[0], key+".json")))
			continue
		}
		results[i] = grade.ApplyRubric(res, pc, grade.CellJudgement{
			Candidate: grade.CandidateID(c), Key: jd.Key, Valid: jd.Error == "", Reason: jd.Error, Criteria: jd.Criteria,
			Seconds: jd.Usage.Seconds, Tokens: jd.Usage.Tokens})
	}
	if len(problems) > 0 {
		return nil, nil, nil, fmt.Errorf("rejudged report %s: %d cell(s) without exactly one rejudgement, so no report:\n  %s", out, len(problems), strings.Join(problems, "\n  "))
	}
	ev, err := cellEvidence(p, st, results)
	if err != nil {
		return nil, nil, nil, err
	}
	// The rejudged results decide the rules of their own scorecard.
	r.Verdict = verdict.BuildReport(p, results).Verdict
	return p, r, ev, nil
}
