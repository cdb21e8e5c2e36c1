package readback

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/report"
	"github.com/skillgate/skillgate/pipeline/verdict"
	"github.com/skillgate/skillgate/runner/judge"
	"github.com/skillgate/skillgate/runner/store"
)

// RejudgedRun is the run in folder out with each rubric cell's judgement
// replaced by the one rejudgement stored for its packet under
// rejudged/*/judgements, and the cells' evidence with them. It never
// guesses: a packet the plan needs that is not stored, a packet with no
// rejudgement and a packet with more than one (from several other judges)
// are each an error naming the cell, and nothing is returned.
func RejudgedRun(out string) (*plan.Plan, *verdict.Report, *report.Evidence, error) {
	p, r, results, err := BuildRun(out)
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
	ev, err := CellEvidence(p, st, results)
	if err != nil {
		return nil, nil, nil, err
	}
	// The rejudged results decide the rules of their own scorecard.
	r.Verdict = verdict.BuildReport(p, results).Verdict
	return p, r, ev, nil
}
