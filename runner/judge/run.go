package judge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/skillgate/skillgate/runner/internal/bounded"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/gateway"
	"github.com/skillgate/skillgate/runner/redact"
	"github.com/skillgate/skillgate/runner/spend"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/verdict"

	"github.com/opencontainers/go-digest"
)

// Judging happens after deterministic grading, from stored rollouts alone.
// What it stores, and under which keys, is described with the run folder
// in package store.
//
// A judge call that fails (network, HTTP error, timeout, a command's
// non-zero exit) leaves its cell or pair unjudged and stores the failure,
// redacted like everything stored: the run goes on, its report is
// INCOMPLETE and names what was not judged and why (from the store alone,
// so `skillgate report` rebuilds it), and the next run asks again; a call
// that succeeds removes the failure. A reply that cannot be read is
// stored: it makes a rubric cell invalid and a pairwise judgement INVALID.

// --- the store ---

// --- judging a run ---

// Options control the judging of a run folder.
type Options struct {
	// Out is the run folder: its store and spend ledger.
	Out string
	// SuiteDir is the suite folder the plan was compiled from; a command
	// judge runs in it, and fixtures are read from it when the store lacks
	// their snapshot.
	SuiteDir string
	// Jobs is how many judge calls run at once.
	Jobs int
	// Log receives progress.
	Log io.Writer
	// Progress, when set, is told as each judge call ends, whatever its
	// outcome: done of total calls. A progress line counts by it, never by
	// reading Log.
	Progress func(done, total int)
	// SpendCapUSD is the run folder's spend cap: a judge call starts only
	// when its worst case fits under what is left; 0 means no cap.
	SpendCapUSD float64
}

// JudgeCells judges what the plan's judge must and the store lacks, with
// opts.Jobs calls at once, and stores every packet and judgement: in rubric
// mode every graded cell whose case has a rubric (failed ones too, for the
// audit trail: they stay failed), its judged result replacing its grade,
// and a disputed cell's adjudication by adjudicator (nil: the judge
// itself, in a fresh call); in pairwise mode every (case, trial, pair)
// whose two cells are graded, in the seeded order and, with swap, in the
// reversed order too. It returns the number of judgements made (or, stored
// before, applied) and of judge calls that failed, each stored as a
// JudgeFailure; its error is the store's or the context's, never a judge's.
func JudgeCells(ctx context.Context, p *plan.Plan, j, adjudicator Judge, opts Options) (calls, failed int, err error) {
	if p.Judge == nil {
		return 0, 0, nil
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if adjudicator == nil {
		adjudicator = j
	}
	st := &store.Store{Dir: opts.Out}
	results, err := store.Results(p, st)
	if err != nil {
		return 0, 0, err
	}
	budget, err := spend.Open(opts.Out, p, opts.SpendCapUSD)
	if err != nil {
		return 0, 0, err
	}
	adj, adjTemplate := grade.AdjudicatorOf(p.Judge)
	jr := &judgeRun{plan: p, judge: j, adjudicator: adjudicator, adjTemplate: adjTemplate, adjPrices: adj.Prices, store: st, opts: opts,
		redact: redact.New(p, judgeSecrets(p)...), cases: p.CasesByID()}
	jr.conv = &conversation{judge: p.Judge.Digest, budget: budget, redact: jr.redact, record: &gateway.Recorder{Out: opts.Out}, provider: p.Judge.Provider, put: func(jd *store.Judgement) error {
		if err := st.PutJudgement(jd); err != nil {
			return err
		}
		return st.ClearJudgeFailure(jd.Key)
	}}
	var tasks []func(context.Context) (string, error)
	if p.Judge.Mode == "pairwise" {
		tasks = jr.pairTasks(results)
	} else {
		tasks = jr.rubricTasks(results)
	}
	if len(tasks) == 0 {
		return 0, 0, nil
	}
	if err := st.PinFixtures(p, opts.SuiteDir, p.Cells); err != nil {
		return 0, 0, err // packets show the fixture from its snapshot
	}
	fmt.Fprintf(opts.Log, "judging: %d %s judgements by the %s judge (%d jobs)\n", len(tasks), p.Judge.Mode, p.Judge.Provider, max(opts.Jobs, 1))
	var mu sync.Mutex
	var fatal error
	capped := 0
	done := 0
	bounded.ForEach(ctx, opts.Jobs, tasks, func(task func(context.Context) (string, error)) {
		line, err := task(ctx)
		mu.Lock()
		defer mu.Unlock()
		done++
		if opts.Progress != nil {
			opts.Progress(done, len(tasks))
		}
		var ce *callError
		switch {
		case err == nil:
			calls++
			fmt.Fprintf(opts.Log, "[judge %d/%d] %s\n", done, len(tasks), line)
		case ctx.Err() != nil: // interrupted: nothing to record
		case errors.Is(err, spend.ErrCap):
			// Not asked: the judgement is missing, not failed, and the verdict
			// INCOMPLETE; the failure record says the cap left it out.
			capped++
			if ce := (*capError)(nil); errors.As(err, &ce) {
				f := &store.JudgeFailure{Key: ce.key, Mode: p.Judge.Mode, Role: ce.role, Judge: p.Judge.Digest, Name: ce.name, Cells: ce.cells, Error: ce.Error()}
				if err := st.PutJudgeFailure(f); err != nil && fatal == nil {
					fatal = err
				}
			}
		case errors.As(err, &ce):
			failed++
			msg := jr.redact.String(ce.err.Error())
			fmt.Fprintf(opts.Log, "[judge %d/%d] %s: %s (not judged)\n", done, len(tasks), ce.name, msg)
			f := &store.JudgeFailure{Key: ce.key, Mode: p.Judge.Mode, Role: ce.role, Judge: p.Judge.Digest, Name: ce.name, Cells: ce.cells, Error: msg}
			if err := st.PutJudgeFailure(f); err != nil && fatal == nil {
				fatal = err
			}
		default:
			if fatal == nil {
				fatal = err
			}
			fmt.Fprintf(opts.Log, "[judge %d/%d] %v\n", done, len(tasks), err)
		}
	})
	if fatal == nil {
		fatal = ctx.Err()
	}
	if fatal == nil && capped > 0 {
		fmt.Fprintf(opts.Log, "%d judgements not asked: the spend cap is reached\n", capped)
		fatal = spend.ErrCap
	}
	return calls, failed, fatal
}

// judgeSecrets are the values of the judges' credential variables and
// extra headers' variables, which nothing stored may hold.
func judgeSecrets(p *plan.Plan) []string {
	var out []string
	aj, _ := grade.AdjudicatorOf(p.Judge)
	for _, j := range []suite.Judge{p.Judge.Judge, aj} {
		if j.CredentialEnv != "" {
			out = append(out, os.Getenv(j.CredentialEnv))
		}
		for _, env := range j.Headers {
			out = append(out, os.Getenv(env))
		}
	}
	return out
}

type judgeRun struct {
	plan        *plan.Plan
	judge       Judge
	adjudicator Judge
	adjTemplate string
	adjPrices   *suite.Prices
	store       *store.Store
	opts        Options
	redact      *redact.Redactor
	conv        *conversation
	cases       map[string]plan.PlanCase
}

// attempt reads a graded cell's rollout as the packets need it.
func (jr *judgeRun) attempt(c plan.Cell, r grade.CellResult) (grade.JudgeAttempt, error) {
	ro, ok, err := jr.store.Rollout(c.Rollout)
	if err != nil {
		return grade.JudgeAttempt{}, err
	}
	if !ok {
		return grade.JudgeAttempt{}, fmt.Errorf("judge %s: no stored rollout %s", c.ID, c.Rollout)
	}
	arm := plan.PlanArm{}
	for _, a := range jr.plan.Arms {
		if a.Name == c.Arm {
			arm = a
		}
	}
	answer, err := jr.store.Answer(ro)
	if err != nil {
		return grade.JudgeAttempt{}, err
	}
	pc := jr.cases[c.Case]
	return grade.JudgeAttempt{Cell: c, Answer: string(answer), World: jr.store.World(jr.plan, jr.opts.SuiteDir, pc, plan.CaseArm(jr.plan, pc, arm), ro), Checks: r.Checks}, nil
}

func (jr *judgeRun) rubricTasks(results []grade.CellResult) []func(context.Context) (string, error) {
	var tasks []func(context.Context) (string, error)
	seen := map[digest.Digest]bool{}
	for i, c := range jr.plan.Cells {
		r := results[i]
		if !grade.RubricJudged(jr.plan, jr.cases[c.Case]) || !r.Valid() || r.Judge != nil || seen[c.Grade] {
			continue
		}
		seen[c.Grade] = true
		tasks = append(tasks, func(ctx context.Context) (string, error) { return jr.rubricCell(ctx, c, r) })
	}
	return tasks
}

// rubricJudgement is the judgement stored under key, or the reply of a new
// call to j, read as a rubric reply of n criteria and stored.
func (jr *judgeRun) rubricJudgement(ctx context.Context, j Judge, key, role, template string, packet []byte, c plan.Cell, n int) (*store.Judgement, error) {
	jd, ok, err := jr.store.Judgement(key)
	if err != nil || ok {
		return jd, err
	}
	q := question{key: key, mode: "rubric", role: role, name: c.ID, cells: []string{c.ID}, criteria: n, template: template, packet: packet, prices: jr.plan.Judge.Prices}
	if role == store.RoleAdjudicator {
		q.name, q.prices = "adjudication of "+c.ID, jr.adjPrices
	}
	return jr.conv.ask(ctx, j, q)
}

// rubricCell judges one cell's rubric, has a disputed judgement
// adjudicated, and stores its judged result.
func (jr *judgeRun) rubricCell(ctx context.Context, c plan.Cell, r grade.CellResult) (string, error) {
	pc := jr.cases[c.Case]
	key := c.Grade.Encoded()
	failed := func(err error) error {
		return &callError{key: key, role: store.RoleJudge, name: c.ID, cells: []string{c.ID}, err: err}
	}
	a, err := jr.attempt(c, r)
	if err != nil {
		return "", failed(err)
	}
	pk, err := grade.BuildRubricPacket(jr.plan, pc, a)
	if err != nil {
		return "", failed(fmt.Errorf("build packet: %w", err))
	}
	packet := grade.EncodePacket(pk)
	if err := jr.store.PutPacket(key, packet); err != nil {
		return "", err
	}
	jd, err := jr.rubricJudgement(ctx, jr.judge, key, store.RoleJudge, jr.plan.Judge.Templates.Rubric, packet, c, len(pc.Rubric))
	if err != nil {
		return "", err
	}
	cj := grade.CellJudgement{Candidate: pk.Candidate, Key: key, Valid: jd.Error == "", Reason: jd.Error, Criteria: jd.Criteria,
		Seconds: jd.Usage.Seconds, Tokens: jd.Usage.Tokens}
	if cj.Valid {
		cj.Dispute = grade.DisputeOf(jr.plan, pc, r, jd.Criteria)
	}
	if d := cj.Dispute; d != nil && jr.plan.Judge.Adjudication.Enabled {
		akey := grade.AdjudicationKey(c.Grade).Encoded()
		ad, err := jr.rubricJudgement(ctx, jr.adjudicator, akey, store.RoleAdjudicator, jr.adjTemplate, packet, c, len(pc.Rubric))
		if err != nil {
			return "", err
		}
		d.Adjudicated, d.Key, d.Valid, d.Reason, d.Criteria, d.Seconds, d.Tokens = true, akey, ad.Error == "", ad.Error, ad.Criteria, ad.Usage.Seconds, ad.Usage.Tokens
	}
	nr := grade.ApplyRubric(r, pc, cj)
	if err := jr.store.PutGrade(nr); err != nil {
		return "", err
	}
	if err := jr.store.ClearJudgeFailure(key); err != nil {
		return "", err
	}
	line := fmt.Sprintf("%s: ", c.ID)
	if d := nr.Judge.Dispute; d != nil {
		line += fmt.Sprintf("disputed (%s), adjudicator: %s; ", d.Disagreed, d.Decision())
	}
	switch {
	case nr.Status == grade.StatusInvalid:
		return line + fmt.Sprintf("judge reply invalid (the cell is invalid): %s", nr.Error), nil
	default:
		met := 0
		for _, ch := range nr.Checks {
			if ch.Kind == grade.CheckJudge && ch.Passed {
				met++
			}
		}
		return line + fmt.Sprintf("%d of %d criteria met, cell %s", met, len(pc.Rubric), map[bool]string{true: "passes", false: "fails"}[nr.Passed]), nil
	}
}

// pairSlot is one (case, trial, pair) whose two cells are graded.
type pairSlot struct {
	pc         plan.PlanCase
	trial      int
	pair       suite.Pair
	cand, base plan.Cell
	candR      grade.CellResult
	baseR      grade.CellResult
	first      string
	positions  []string // the orders to judge, by the candidate's position
	keys       []string // their judgement keys
	swap       bool
}

// name says which pair and order a judgement is of.
func (s pairSlot) name(pos string) string {
	return fmt.Sprintf("%s/%d %s vs %s (%s as %s)", s.pc.ID, s.trial, s.pair.Candidate, s.pair.Baseline, s.pair.Candidate, pos)
}

// pairSlots lists the pairs the plan's judge compares whose two cells have
// valid grades, in case, trial, pair order.
func pairSlots(p *plan.Plan, results []grade.CellResult) []pairSlot {
	idx := map[string]int{}
	for i, c := range p.Cells {
		idx[c.ID] = i
	}
	var out []pairSlot
	for _, pc := range p.Cases {
		for trial := 1; trial <= p.Suite.Trials; trial++ {
			for _, pair := range p.Judge.Pairs {
				ci, okC := idx[plan.CellID(pc.ID, pair.Candidate, trial)]
				bi, okB := idx[plan.CellID(pc.ID, pair.Baseline, trial)]
				if !okC || !okB || !results[ci].Valid() || !results[bi].Valid() {
					continue
				}
				s := pairSlot{pc: pc, trial: trial, pair: pair, cand: p.Cells[ci], base: p.Cells[bi], candR: results[ci], baseR: results[bi],
					first: grade.PairwiseOrder(p.Suite.Seed, pc.ID, trial, pair), swap: p.Judge.Swap}
				s.positions = []string{s.first}
				if s.swap {
					s.positions = append(s.positions, grade.OtherPosition(s.first))
				}
				for _, pos := range s.positions {
					s.keys = append(s.keys, grade.PairwiseKey(s.cand.Grade, s.base.Grade, p.Judge.Digest, pos).Encoded())
				}
				out = append(out, s)
			}
		}
	}
	return out
}

func (jr *judgeRun) pairTasks(results []grade.CellResult) []func(context.Context) (string, error) {
	var tasks []func(context.Context) (string, error)
	seen := map[string]bool{}
	for _, s := range pairSlots(jr.plan, results) {
		for i, pos := range s.positions {
			key := s.keys[i]
			if seen[key] {
				continue
			}
			seen[key] = true
			if _, ok, err := jr.store.Judgement(key); err == nil && ok {
				continue
			}
			tasks = append(tasks, func(ctx context.Context) (string, error) { return jr.pairOrder(ctx, s, pos, key) })
		}
	}
	return tasks
}

// pairOrder judges one pair in one order and stores the judgement.
func (jr *judgeRun) pairOrder(ctx context.Context, s pairSlot, pos, key string) (string, error) {
	name := s.name(pos)
	failed := func(err error) error {
		return &callError{key: key, role: store.RoleJudge, name: name, cells: []string{s.cand.ID, s.base.ID}, err: err}
	}
	cand, err := jr.attempt(s.cand, s.candR)
	if err != nil {
		return "", failed(err)
	}
	base, err := jr.attempt(s.base, s.baseR)
	if err != nil {
		return "", failed(err)
	}
	first, second := cand, base
	if pos == grade.PositionB {
		first, second = base, cand
	}
	pk, err := grade.BuildPairwisePacket(jr.plan, s.pc, first, second)
	if err != nil {
		return "", failed(fmt.Errorf("build packet: %w", err))
	}
	packet := grade.EncodePacket(pk)
	if err := jr.store.PutPacket(key, packet); err != nil {
		return "", err
	}
	jd, err := jr.conv.ask(ctx, jr.judge, question{key: key, mode: "pairwise", role: store.RoleJudge, name: name, cells: []string{s.cand.ID, s.base.ID},
		position: pos, template: jr.plan.Judge.Templates.Pairwise, packet: packet, prices: jr.plan.Judge.Prices})
	if err != nil {
		return "", err
	}
	if jd.Error != "" {
		return fmt.Sprintf("%s: INVALID: %s", name, jd.Error), nil
	}
	return fmt.Sprintf("%s: %s", name, jd.Outcome), nil
}

// notJudged is what the store says of a missing judgement: the failure of
// its last call under any of keys, if one is stored.
func notJudged(st *store.Store, name string, keys ...string) (verdict.NotJudged, error) {
	for _, key := range keys {
		f, ok, err := st.JudgeFailure(key)
		if err != nil {
			return verdict.NotJudged{}, err
		}
		if ok {
			why := f.Error
			if f.Role == store.RoleAdjudicator {
				why = "adjudicator: " + why
			}
			return verdict.NotJudged{Name: name, Why: why}, nil
		}
	}
	return verdict.NotJudged{Name: name}, nil
}

// JudgedResults reads what the judge decided from the store alone: the
// results with unjudged rubric cells made missing, the pairwise results,
// and the judgements the plan asks for that are not stored, with why.
func JudgedResults(p *plan.Plan, st *store.Store, results []grade.CellResult) ([]grade.CellResult, []grade.PairwiseResult, []verdict.NotJudged, string, error) {
	if p.Judge == nil {
		return results, nil, nil, "", nil
	}
	if p.Judge.Mode != "pairwise" {
		cases := p.CasesByID()
		var missing []verdict.NotJudged
		for i, r := range results {
			if grade.RubricJudged(p, cases[r.Case]) && r.Valid() && r.Judge == nil {
				nj, err := notJudged(st, r.Cell, r.Grade.Encoded(), grade.AdjudicationKey(r.Grade).Encoded())
				if err != nil {
					return nil, nil, nil, "", err
				}
				results[i].Status, results[i].Error, results[i].Passed = grade.StatusMissing, "graded but not judged", false
				if nj.Why != "" {
					results[i].Error += ": " + nj.Why
				}
				missing = append(missing, nj)
			}
		}
		return results, nil, missing, "cells", nil
	}
	var out []grade.PairwiseResult
	var missing []verdict.NotJudged
	for _, s := range pairSlots(p, results) {
		outcome := map[string]string{}
		var errs []string
		var lacking *verdict.NotJudged
		for i, pos := range s.positions {
			jd, ok, err := st.Judgement(s.keys[i])
			if err != nil {
				return nil, nil, nil, "", err
			}
			if !ok {
				nj, err := notJudged(st, s.name(pos), s.keys[i])
				if err != nil {
					return nil, nil, nil, "", err
				}
				lacking = &nj
				break
			}
			outcome[pos] = jd.Outcome
			if jd.Error != "" {
				errs = append(errs, fmt.Sprintf("%s as %s: %s", s.pair.Candidate, pos, jd.Error))
			}
		}
		if lacking != nil {
			missing = append(missing, *lacking)
			continue
		}
		out = append(out, grade.CombinePairwise(s.pc.ID, s.trial, s.pair, s.first, outcome[grade.PositionA], outcome[grade.PositionB], s.swap, errs))
	}
	return results, out, missing, "pairs", nil
}
