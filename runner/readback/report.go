package readback

import (
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/report"
	"github.com/skillgate/skillgate/pipeline/verdict"
	"github.com/skillgate/skillgate/runner/judge"
	"github.com/skillgate/skillgate/runner/store"
)

// Report rebuilds the verdict and every report of a run folder from its
// plan and stored results alone: no Docker, no model. The same stored
// results always give the same bytes.
func Report(out string) (*verdict.Report, error) { return ReportAhead(out, nil) }

// ReportAhead is Report, its plan read ahead (ReadPlanAhead) while the
// file still holds the bytes read.
func ReportAhead(out string, ahead *PlanAhead) (*verdict.Report, error) {
	p, r, results, err := buildRun(out, ahead)
	if err != nil {
		return nil, err
	}
	ev, err := CellEvidence(p, &store.Store{Dir: out}, results)
	if err != nil {
		return nil, err
	}
	if err := report.WriteReportsWith(out, r, ev); err != nil {
		return nil, err
	}
	if err := WriteSequential(out, r.Sequential); err != nil {
		return nil, err
	}
	if err := grade.WriteAuditQueue(out, grade.AuditQueue(p, results, p.Suite.Seed)); err != nil {
		return nil, err
	}
	return r, nil
}

// ReadRun rebuilds a run folder's report from its plan and store, as
// Report does, and writes nothing: the paired gate reads two runs this way,
// never their report files, which anyone can edit.
func ReadRun(out string) (*plan.Plan, *verdict.Report, error) {
	p, r, _, err := BuildRun(out)
	return p, r, err
}

func BuildRun(out string) (*plan.Plan, *verdict.Report, []grade.CellResult, error) {
	return buildRun(out, nil)
}

func buildRun(out string, ahead *PlanAhead) (*plan.Plan, *verdict.Report, []grade.CellResult, error) {
	p, err := readPlan(out, ahead)
	if err != nil {
		return nil, nil, nil, err
	}
	st := &store.Store{Dir: out}
	// The root digest reads every file of the folder: on its own core
	// while the results are read.
	var root digest.Digest
	var rootErr error
	rooted := make(chan struct{})
	go func() {
		defer close(rooted)
		root, rootErr = store.Root(out)
	}()
	defer func() { <-rooted }()
	// Sequential stopping decides from every stored result; the verdict
	// then reads the cells it needed, and no other.
	whole := p
	seq, err := SequentialOf(out, p)
	if err != nil {
		return nil, nil, nil, err
	}
	p = seq.Needed(p)
	results, err := store.Results(p, st)
	if err != nil {
		return nil, nil, nil, err
	}
	<-rooted
	if rootErr != nil {
		return nil, nil, nil, rootErr
	}
	// The judge's rubric grades are in the results; its pairwise
	// judgements are read from store/judgements. Judgements the plan asks
	// for and the store lacks make the verdict INCOMPLETE.
	results, pairwise, notJudged, what, err := judge.JudgedResults(p, st, results)
	if err != nil {
		return nil, nil, nil, err
	}
	r := verdict.BuildJudgedReport(p, results, pairwise)
	rcells, reruns, err := StoredReruns(p, st)
	if err != nil {
		return nil, nil, nil, err
	}
	verdict.ApplyReruns(r, p, results, pairwise, rcells, reruns)
	r.Adjudication = grade.BuildAdjudicationReport(p, results)
	verdict.MarkJudgingIncomplete(&r.Verdict, notJudged, what)
	if err := MarkSpendCapped(out, r, results); err != nil {
		return nil, nil, nil, err
	}
	r.StandIn, r.Root, r.Sequential = p.Agent.StandIn, root, seq
	if r.ReuseSentinels, err = ReadReuseSentinels(out); err != nil {
		return nil, nil, nil, err
	}
	recs, err := rolloutRecords(p, st)
	if err != nil {
		return nil, nil, nil, err
	}
	verdict.ObserveRollouts(r, recs)
	r.Verdict.Warnings = append(r.Verdict.Warnings, PreflightWarnings(out, p)...)
	cal, ok, err := store.ReadCalibration(out, whole)
	if err != nil {
		return nil, nil, nil, err
	}
	if ok {
		r.Calibration = cal
		if !cal.Passed() {
			r.Verdict = verdict.CalibrationVerdict(cal)
		}
	}
	if rec, ok, err := store.ReadShard(out, whole); err != nil {
		return nil, nil, nil, err
	} else if ok {
		MarkShard(r, whole, rec)
	}
	return p, r, results, nil
}

// rolloutRecords reads what each plan cell's stored rollout recorded of
// its inputs and of who answered.
func rolloutRecords(p *plan.Plan, st *store.Store) ([]verdict.RolloutRecord, error) {
	var out []verdict.RolloutRecord
	byKey := map[digest.Digest]*store.Rollout{}
	for _, c := range p.Cells {
		ro, seen := byKey[c.Rollout]
		if !seen {
			var ok bool
			var err error
			if ro, ok, err = st.Rollout(c.Rollout); err != nil {
				return nil, err
			} else if !ok {
				ro = nil
			}
			byKey[c.Rollout] = ro
		}
		if ro == nil {
			continue
		}
		rec := verdict.RolloutRecord{Cell: c.ID, Arm: c.Arm, Status: ro.Status, Inputs: ro.Inputs, CLIVersion: ro.Telemetry.AgentVersion, InputsChanged: ro.InputsChanged}
		models := []string{ro.Telemetry.Model}
		if ro.Gateway != nil {
			models = append(models, strings.Split(ro.Gateway.ModelAnswered, ", ")...)
		}
		for _, m := range models {
			if m = strings.TrimSpace(m); m != "" && !slices.Contains(rec.Models, m) {
				rec.Models = append(rec.Models, m)
			}
		}
		out = append(out, rec)
	}
	return out, nil
}
