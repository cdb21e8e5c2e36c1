package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/opencontainers/go-digest"

	"github.com/skillgate/skillgate/pipeline"
)

// Judging happens after deterministic grading, from stored rollouts alone.
//
// Storage, under the run folder:
//
//	store/packets/KEY.json     the blinded packet sent (for rejudging, audit)
//	store/judgements/KEY.json  the judge's reply, usage and what was read from it
//	store/grades/GRADE.json    rubric mode: the judged CellResult
//
// A rubric judgement's KEY is the cell's grade key, which already holds
// the judge's identity (templates and seed included): changing the judge
// regrades without a new rollout. A pairwise judgement's KEY is
// pipeline.PairwiseKey: both cells' grade keys, the judge, and the
// candidate's position (A or B).
//
// A judge call that fails (network, HTTP error, timeout, a command's
// non-zero exit) stores nothing: the next run asks again, and until then
// the report is INCOMPLETE. A reply that cannot be read is stored: it makes
// a rubric cell invalid and a pairwise judgement INVALID.

const (
	storePackets    = "store/packets"
	storeJudgements = "store/judgements"
)

// Judgement is one stored judge call: the reply and what was read from it.
type Judgement struct {
	Key   string        `json:"key"`
	Mode  string        `json:"mode"`
	Judge digest.Digest `json:"judge"`
	// Cells are the judged cells: the cell, or the candidate then the
	// baseline. They never reach the judge.
	Cells []string `json:"cells"`
	// Position is the candidate's position (A or B) in a pairwise packet.
	Position string     `json:"position,omitempty"`
	Reply    string     `json:"reply"`
	Usage    JudgeUsage `json:"usage"`
	// Error says why the reply is invalid; empty when it was read.
	Error    string                     `json:"error,omitempty"`
	Criteria []pipeline.CriterionResult `json:"criteria,omitempty"`
	Winner   string                     `json:"winner,omitempty"`
	Evidence string                     `json:"evidence,omitempty"`
	// Outcome is the candidate's WIN, TIE, LOSS or INVALID (pairwise).
	Outcome string `json:"outcome,omitempty"`
}

// --- the store ---

// PacketPath and JudgementPath are where a packet and a judgement live.
func (s *Store) PacketPath(key string) string {
	return filepath.Join(s.Dir, storePackets, key+".json")
}

// JudgementPath is where the judgement stored under key lives.
func (s *Store) JudgementPath(key string) string {
	return filepath.Join(s.Dir, storeJudgements, key+".json")
}

// Judgement reads the judgement stored under key.
func (s *Store) Judgement(key string) (*Judgement, bool, error) {
	b, err := os.ReadFile(s.JudgementPath(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read judgement %s: %w", key, err)
	}
	var j Judgement
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, false, fmt.Errorf("read judgement %s: %w", key, err)
	}
	return &j, true, nil
}

func (s *Store) putJudgement(j *Judgement) error {
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	if err := s.putFile(s.JudgementPath(j.Key), append(b, '\n')); err != nil {
		return fmt.Errorf("store judgement %s: %w", j.Key, err)
	}
	return nil
}

func (s *Store) putPacket(key string, packet []byte) error {
	if err := s.putFile(s.PacketPath(key), append(append([]byte{}, packet...), '\n')); err != nil {
		return fmt.Errorf("store packet %s: %w", key, err)
	}
	return nil
}

// --- judging a run ---

// JudgeCells judges what the plan's judge must and the store lacks, with
// opts.Jobs calls at once, and stores every packet and judgement: in rubric
// mode every graded cell whose case has a rubric (failed ones too, for the
// audit trail: they stay failed), its judged result replacing its grade;
// in pairwise mode every (case, trial, pair) whose two cells are graded,
// in the seeded order and, with swap, in the reversed order too. It
// returns the number of judgements made (or, stored before, applied) and
// the first failed call's error.
func JudgeCells(ctx context.Context, p *pipeline.Plan, j Judge, opts Options) (calls int, err error) {
	if p.Judge == nil {
		return 0, nil
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	store := &Store{Dir: opts.Out}
	results, err := Results(p, store)
	if err != nil {
		return 0, err
	}
	jr := &judgeRun{plan: p, judge: j, store: store, opts: opts, cases: map[string]pipeline.PlanCase{}}
	for _, pc := range p.Cases {
		jr.cases[pc.ID] = pc
	}
	var tasks []func(context.Context) (string, error)
	if p.Judge.Mode == "pairwise" {
		tasks = jr.pairTasks(results)
	} else {
		tasks = jr.rubricTasks(results)
	}
	if len(tasks) == 0 {
		return 0, nil
	}
	fmt.Fprintf(opts.Log, "judging: %d %s judgements by the %s judge (%d jobs)\n", len(tasks), p.Judge.Mode, p.Judge.Provider, max(opts.Jobs, 1))
	var mu sync.Mutex
	var first error
	done := 0
	forEach(ctx, opts.Jobs, tasks, func(task func(context.Context) (string, error)) {
		line, err := task(ctx)
		mu.Lock()
		defer mu.Unlock()
		done++
		if err != nil {
			if ctx.Err() == nil {
				fmt.Fprintf(opts.Log, "[judge %d/%d] %v\n", done, len(tasks), err)
				if first == nil {
					first = err
				}
			}
			return
		}
		calls++
		fmt.Fprintf(opts.Log, "[judge %d/%d] %s\n", done, len(tasks), line)
	})
	if first == nil {
		first = ctx.Err()
	}
	return calls, first
}

type judgeRun struct {
	plan  *pipeline.Plan
	judge Judge
	store *Store
	opts  Options
	cases map[string]pipeline.PlanCase
}

// ask sends the prompt (and, to a command judge, the packet).
func (jr *judgeRun) ask(ctx context.Context, prompt string, packet []byte) (string, JudgeUsage, error) {
	if pj, ok := jr.judge.(packetJudge); ok {
		return pj.AskPacket(ctx, prompt, packet)
	}
	return jr.judge.Ask(ctx, prompt)
}

// attempt reads a graded cell's rollout as the packets need it.
func (jr *judgeRun) attempt(c pipeline.Cell, r pipeline.CellResult) (pipeline.JudgeAttempt, error) {
	ro, ok, err := jr.store.Rollout(c.Rollout)
	if err != nil {
		return pipeline.JudgeAttempt{}, err
	}
	if !ok {
		return pipeline.JudgeAttempt{}, fmt.Errorf("judge %s: no stored rollout %s", c.ID, c.Rollout)
	}
	return pipeline.JudgeAttempt{Cell: c, Answer: ro.Answer, World: cellWorld(jr.store, jr.opts.SuiteDir, jr.cases[c.Case], ro), Checks: r.Checks}, nil
}

// cellWorld is a stored rollout's final workspace.
func cellWorld(store *Store, suiteDir string, pc pipeline.PlanCase, ro *Rollout) pipeline.World {
	g := &grader{store: store, opts: Options{SuiteDir: suiteDir}}
	return g.world(pc, ro)
}

func (jr *judgeRun) rubricTasks(results []pipeline.CellResult) []func(context.Context) (string, error) {
	var tasks []func(context.Context) (string, error)
	seen := map[digest.Digest]bool{}
	for i, c := range jr.plan.Cells {
		r := results[i]
		if !pipeline.RubricJudged(jr.plan, jr.cases[c.Case]) || !r.Valid() || r.Judge != nil || seen[c.Grade] {
			continue
		}
		seen[c.Grade] = true
		tasks = append(tasks, func(ctx context.Context) (string, error) { return jr.rubricCell(ctx, c, r) })
	}
	return tasks
}

// rubricCell judges one cell's rubric and stores its judged result.
func (jr *judgeRun) rubricCell(ctx context.Context, c pipeline.Cell, r pipeline.CellResult) (string, error) {
	pc := jr.cases[c.Case]
	a, err := jr.attempt(c, r)
	if err != nil {
		return "", err
	}
	pk, err := pipeline.BuildRubricPacket(jr.plan, pc, a)
	if err != nil {
		return "", fmt.Errorf("judge %s: %w", c.ID, err)
	}
	packet := pipeline.EncodePacket(pk)
	key := c.Grade.Encoded()
	if err := jr.store.putPacket(key, packet); err != nil {
		return "", err
	}
	jd, ok, err := jr.store.Judgement(key)
	if err != nil {
		return "", err
	}
	if !ok {
		reply, usage, err := jr.ask(ctx, pipeline.RenderJudgePrompt(jr.plan.Judge.Templates.Rubric, packet), packet)
		if err != nil {
			return "", fmt.Errorf("judge %s: %w", c.ID, err)
		}
		jd = &Judgement{Key: key, Mode: "rubric", Judge: jr.plan.Judge.Digest, Cells: []string{c.ID}, Reply: reply, Usage: usage}
		if jd.Criteria, err = pipeline.ParseRubricReply(reply, len(pc.Rubric)); err != nil {
			jd.Error = err.Error()
		}
		if err := jr.store.putJudgement(jd); err != nil {
			return "", err
		}
	}
	nr := pipeline.ApplyRubric(r, pc, pipeline.CellJudgement{Candidate: pk.Candidate, Key: key, Valid: jd.Error == "", Reason: jd.Error, Criteria: jd.Criteria,
		Seconds: jd.Usage.Seconds, Tokens: jd.Usage.Tokens})
	if err := jr.store.putGrade(nr); err != nil {
		return "", err
	}
	switch {
	case jd.Error != "":
		return fmt.Sprintf("%s: judge reply invalid (the cell is invalid): %s", c.ID, jd.Error), nil
	default:
		passed := 0
		for _, cr := range jd.Criteria {
			if cr.Pass {
				passed++
			}
		}
		return fmt.Sprintf("%s: %d of %d criteria met, cell %s", c.ID, passed, len(jd.Criteria), map[bool]string{true: "passes", false: "fails"}[nr.Passed]), nil
	}
}

// pairSlot is one (case, trial, pair) whose two cells are graded.
type pairSlot struct {
	pc         pipeline.PlanCase
	trial      int
	pair       pipeline.Pair
	cand, base pipeline.Cell
	candR      pipeline.CellResult
	baseR      pipeline.CellResult
	first      string
	positions  []string // the orders to judge, by the candidate's position
	keys       []string // their judgement keys
	swap       bool
}

// pairSlots lists the pairs the plan's judge compares whose two cells have
// valid grades, in case, trial, pair order.
func pairSlots(p *pipeline.Plan, results []pipeline.CellResult) []pairSlot {
	idx := map[string]int{}
	for i, c := range p.Cells {
		idx[c.ID] = i
	}
	var out []pairSlot
	for _, pc := range p.Cases {
		for trial := 1; trial <= p.Suite.Trials; trial++ {
			for _, pair := range p.Judge.Pairs {
				ci, okC := idx[pipeline.CellID(pc.ID, pair.Candidate, trial)]
				bi, okB := idx[pipeline.CellID(pc.ID, pair.Baseline, trial)]
				if !okC || !okB || !results[ci].Valid() || !results[bi].Valid() {
					continue
				}
				s := pairSlot{pc: pc, trial: trial, pair: pair, cand: p.Cells[ci], base: p.Cells[bi], candR: results[ci], baseR: results[bi],
					first: pipeline.PairwiseOrder(p.Suite.Seed, pc.ID, trial, pair), swap: p.Judge.Swap}
				s.positions = []string{s.first}
				if s.swap {
					s.positions = append(s.positions, pipeline.OtherPosition(s.first))
				}
				for _, pos := range s.positions {
					s.keys = append(s.keys, pipeline.PairwiseKey(s.cand.Grade, s.base.Grade, p.Judge.Digest, pos).Encoded())
				}
				out = append(out, s)
			}
		}
	}
	return out
}

func (jr *judgeRun) pairTasks(results []pipeline.CellResult) []func(context.Context) (string, error) {
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
	cand, err := jr.attempt(s.cand, s.candR)
	if err != nil {
		return "", err
	}
	base, err := jr.attempt(s.base, s.baseR)
	if err != nil {
		return "", err
	}
	first, second := cand, base
	if pos == pipeline.PositionB {
		first, second = base, cand
	}
	pk, err := pipeline.BuildPairwisePacket(jr.plan, s.pc, first, second)
	if err != nil {
		return "", fmt.Errorf("judge %s/%d: %w", s.pc.ID, s.trial, err)
	}
	packet := pipeline.EncodePacket(pk)
	if err := jr.store.putPacket(key, packet); err != nil {
		return "", err
	}
	name := fmt.Sprintf("%s/%d %s vs %s (%s as %s)", s.pc.ID, s.trial, s.pair.Candidate, s.pair.Baseline, s.pair.Candidate, pos)
	reply, usage, err := jr.ask(ctx, pipeline.RenderJudgePrompt(jr.plan.Judge.Templates.Pairwise, packet), packet)
	if err != nil {
		return "", fmt.Errorf("judge %s: %w", name, err)
	}
	jd := &Judgement{Key: key, Mode: "pairwise", Judge: jr.plan.Judge.Digest, Cells: []string{s.cand.ID, s.base.ID}, Position: pos, Reply: reply, Usage: usage}
	if jd.Winner, jd.Evidence, err = pipeline.ParsePairwiseReply(reply); err != nil {
		jd.Error, jd.Outcome = err.Error(), pipeline.PairwiseInvalid
	} else {
		jd.Outcome = pipeline.PairwiseOutcome(jd.Winner, pos)
	}
	if err := jr.store.putJudgement(jd); err != nil {
		return "", err
	}
	if jd.Error != "" {
		return fmt.Sprintf("%s: INVALID: %s", name, jd.Error), nil
	}
	return fmt.Sprintf("%s: %s", name, jd.Outcome), nil
}

// judgedResults reads what the judge decided from the store alone: the
// results with unjudged rubric cells made missing, the pairwise results,
// and how many judgements the plan asks for are not stored.
func judgedResults(p *pipeline.Plan, store *Store, results []pipeline.CellResult) ([]pipeline.CellResult, []pipeline.PairwiseResult, int, string, error) {
	if p.Judge == nil {
		return results, nil, 0, "", nil
	}
	if p.Judge.Mode != "pairwise" {
		cases := map[string]pipeline.PlanCase{}
		for _, pc := range p.Cases {
			cases[pc.ID] = pc
		}
		missing := 0
		for i, r := range results {
			if pipeline.RubricJudged(p, cases[r.Case]) && r.Valid() && r.Judge == nil {
				results[i].Status, results[i].Error, results[i].Passed = pipeline.StatusMissing, "graded but not judged", false
				missing++
			}
		}
		return results, nil, missing, "cells", nil
	}
	var out []pipeline.PairwiseResult
	missing := 0
	for _, s := range pairSlots(p, results) {
		outcome := map[string]string{}
		var errs []string
		complete := true
		for i, pos := range s.positions {
			jd, ok, err := store.Judgement(s.keys[i])
			if err != nil {
				return nil, nil, 0, "", err
			}
			if !ok {
				complete = false
				break
			}
			outcome[pos] = jd.Outcome
			if jd.Error != "" {
				errs = append(errs, fmt.Sprintf("%s as %s: %s", s.pair.Candidate, pos, jd.Error))
			}
		}
		if !complete {
			missing++
			continue
		}
		out = append(out, pipeline.CombinePairwise(s.pc.ID, s.trial, s.pair, s.first, outcome[pipeline.PositionA], outcome[pipeline.PositionB], s.swap, errs))
	}
	return results, out, missing, "pairs", nil
}
