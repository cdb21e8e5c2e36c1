package judge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/skillgate/skillgate/runner/internal/bounded"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/gateway"
	"github.com/skillgate/skillgate/runner/redact"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/report"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/verdict"

	"github.com/opencontainers/go-digest"
)

// Rejudging asks another judge about a finished run's stored blinded
// packets, without any rollout, grading or Docker. Everything it writes is
// under the run folder's rejudged/HEX, HEX being the first 12 hex digits of
// the other judge's digest (see package store for the layout).
//
// The run's own store (rollouts, grades, packets, judgements) is only
// read: the original judgement stays as it was. A rejudgement's KEY is its
// packet's key in store/packets. Rejudging again reuses the rejudgements
// already stored and asks only for the rest.
//
// The rejudged report is built from the stored deterministic grades (a
// rubric cell's stored grade, stripped of the original judge's criteria)
// plus the rejudgements. It never guesses: when a packet the plan needs is
// not stored, or a judge call fails, Rejudge writes no report and says
// which.

// DirRejudged holds a run's rejudgements, one folder per other judge.
const DirRejudged = "rejudged"

// FileRejudgeJudge records which judge a rejudged folder holds.
const FileRejudgeJudge = "judge.json"

// RejudgeOptions tune Rejudge.
type RejudgeOptions struct {
	// SuiteDir is where a command judge runs and its relative command path
	// is resolved from.
	SuiteDir string
	// Jobs is how many judge calls run at once.
	Jobs int
	// Log receives progress.
	Log io.Writer
}

// RejudgeRecord is judge.json: what a rejudged folder was judged by.
type RejudgeRecord struct {
	// Plan is the digest of the run's plan, whose packets were rejudged.
	Plan digest.Digest `json:"plan"`
	// Original is the run's own judge's digest.
	Original digest.Digest  `json:"original"`
	Judge    plan.PlanJudge `json:"judge"`
}

// RejudgePlan is the run's plan with other as its judge, the judge's digest
// computed as a suite with that judge and the run's seed would have it.
// Only the judge differs: the cells keep the run's grade keys, under which
// the packets are stored.
func RejudgePlan(p *plan.Plan, other suite.Judge) (*plan.Plan, error) {
	if p.Judge == nil {
		return nil, errors.New("rejudge: the run has no judge, so it stored no packets")
	}
	if other.Mode == "" {
		other.Mode = "rubric"
	}
	if other.Mode != p.Judge.Mode {
		return nil, fmt.Errorf("rejudge: the run stored %s packets; the other judge is a %s judge", p.Judge.Mode, other.Mode)
	}
	// The judge's identity comes from Compile itself, so it can never drift
	// from what a suite with this judge would give.
	jp, err := plan.Compile(&suite.Suite{Judge: &other, Seed: p.Suite.Seed})
	if err != nil {
		return nil, fmt.Errorf("rejudge: %w", err)
	}
	q := *p
	q.Judge = jp.Judge
	return &q, nil
}

// RejudgeDir is the folder of a run's rejudgements by a judge.
func RejudgeDir(out string, judge digest.Digest) string {
	return filepath.Join(out, DirRejudged, judge.Encoded()[:12])
}

// Rejudge asks the other judge (the run's judge changed, or another
// suite's) about every stored packet the run's plan needs, stores its
// judgements under rejudged/HEX/judgements, and writes the rejudged report
// set into rejudged/HEX, which it returns with the report.
func Rejudge(ctx context.Context, out string, other suite.Judge, opts RejudgeOptions) (*verdict.Report, string, error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	p, err := plan.ReadPlan(filepath.Join(out, store.FilePlan))
	if err != nil {
		return nil, "", err
	}
	q, err := RejudgePlan(p, other)
	if err != nil {
		return nil, "", err
	}
	st := &store.Store{Dir: out}
	results, err := store.Results(p, st)
	if err != nil {
		return nil, "", err
	}
	rj := &rejudgeRun{run: p, plan: q, store: st, dir: RejudgeDir(out, q.Judge.Digest), opts: opts,
		redact: redact.New(q, judgeSecrets(q)...), cases: p.CasesByID()}
	rj.conv = &conversation{judge: q.Judge.Digest, redact: rj.redact, record: &gateway.Recorder{Out: out}, provider: q.Judge.Provider, put: func(jd *store.Judgement) error {
		data, err := json.MarshalIndent(jd, "", "  ")
		if err != nil {
			return err
		}
		if err := st.PutFile(rj.judgementFile(jd.Key), append(data, '\n')); err != nil {
			return fmt.Errorf("store rejudgement %s: %w", jd.Key, err)
		}
		return nil
	}}
	var asks []rejudgeAsk
	var pairs []pairSlot
	if q.Judge.Mode == "pairwise" {
		pairs, asks = rj.pairAsks(results)
	} else {
		asks = rj.rubricAsks(results)
	}
	// Every packet first: a missing one stops the rejudging before any call.
	var missing []string
	for _, a := range asks {
		if _, err := os.Stat(st.PacketPath(a.key)); errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, fmt.Sprintf("%s (%s)", st.PacketPath(a.key), a.name))
		} else if err != nil {
			return nil, "", fmt.Errorf("rejudge: %w", err)
		}
	}
	if len(missing) > 0 {
		return nil, "", fmt.Errorf("rejudge: %d packet(s) the plan needs are not stored: %s", len(missing), strings.Join(missing, ", "))
	}
	if err := os.MkdirAll(filepath.Join(rj.dir, storeJudgementsDir), 0o755); err != nil {
		return nil, "", fmt.Errorf("rejudge: %w", err)
	}
	rec, _ := json.MarshalIndent(RejudgeRecord{Plan: p.Digest, Original: p.Judge.Digest, Judge: *q.Judge}, "", "  ")
	if err := st.PutFile(filepath.Join(rj.dir, FileRejudgeJudge), append(rec, '\n')); err != nil {
		return nil, "", fmt.Errorf("rejudge: %w", err)
	}
	judged, err := rj.judgeAll(ctx, asks, func() (Judge, func(), error) { return NewJudge(rj.plan, rj.opts.SuiteDir) })
	if err != nil {
		return nil, "", err
	}
	var disputes map[string]*grade.Dispute
	if q.Judge.Mode != "pairwise" {
		if disputes, err = rj.adjudicate(ctx, results, asks, judged); err != nil {
			return nil, "", err
		}
	}

	var pairwise []grade.PairwiseResult
	if q.Judge.Mode == "pairwise" {
		for _, s := range pairs {
			outcome := map[string]string{}
			var errs []string
			for i, pos := range s.positions {
				jd := judged[s.keys[i]]
				outcome[pos] = jd.Outcome
				if jd.Error != "" {
					errs = append(errs, fmt.Sprintf("%s as %s: %s", s.pair.Candidate, pos, jd.Error))
				}
			}
			pairwise = append(pairwise, grade.CombinePairwise(s.pc.ID, s.trial, s.pair, s.first, outcome[grade.PositionA], outcome[grade.PositionB], s.swap, errs))
		}
	} else {
		for i, c := range p.Cells {
			jd, ok := judged[c.Grade.Encoded()]
			if !ok {
				continue
			}
			results[i] = grade.ApplyRubric(results[i], rj.cases[c.Case], grade.CellJudgement{
				Candidate: grade.CandidateID(c), Key: jd.Key, Valid: jd.Error == "", Reason: jd.Error, Criteria: jd.Criteria,
				Seconds: jd.Usage.Seconds, Tokens: jd.Usage.Tokens, Dispute: disputes[jd.Key]})
		}
	}
	r := verdict.BuildJudgedReport(q, results, pairwise)
	r.Adjudication = grade.BuildAdjudicationReport(q, results)
	r.StandIn = p.Agent.StandIn
	cal, ok, err := store.ReadCalibration(out, p)
	if err != nil {
		return nil, "", err
	}
	if ok {
		r.Calibration = cal
		if !cal.Passed() {
			r.Verdict = verdict.CalibrationVerdict(cal)
		}
	}
	if err := report.WriteReports(rj.dir, r); err != nil {
		return nil, "", err
	}
	if err := grade.WriteAuditQueue(rj.dir, grade.AuditQueue(q, results, p.Suite.Seed)); err != nil {
		return nil, "", err
	}
	return r, rj.dir, nil
}

// storeJudgementsDir is the judgements folder inside a rejudged folder.
const storeJudgementsDir = "judgements"

type rejudgeRun struct {
	run    *plan.Plan // the run's plan: its judge built the packets
	plan   *plan.Plan // the run's plan with the other judge
	store  *store.Store
	dir    string
	opts   RejudgeOptions
	redact *redact.Redactor
	// conv asks unmetered: rejudging spends outside any run.
	conv  *conversation
	cases map[string]plan.PlanCase
}

// rejudgeAsk is one packet to rejudge.
type rejudgeAsk struct {
	key      string   // the packet's key in store/packets
	name     string   // what it judges, for messages
	cells    []string // the judged cells (never sent)
	position string   // pairwise: the candidate's position
	criteria int      // rubric: how many criteria
	// judgement is the rejudgement's key: key, or the cell's adjudication key.
	judgement string
	role      string // roleAdjudicator for an adjudication
	template  string // "" for the other judge's own
}

// rejudgementKey is the key the rejudgement of a is stored under.
func (a rejudgeAsk) rejudgementKey() string {
	if a.judgement != "" {
		return a.judgement
	}
	return a.key
}

// adjudicate has every rubric rejudgement that disputes its cell's
// deterministic grade adjudicated by the other judge's adjudicator, and
// returns the disputes by the first rejudgement's key.
func (rj *rejudgeRun) adjudicate(ctx context.Context, results []grade.CellResult, asks []rejudgeAsk, judged map[string]*store.Judgement) (map[string]*grade.Dispute, error) {
	disputes := map[string]*grade.Dispute{}
	index := map[string]int{}
	for i, c := range rj.run.Cells {
		if _, ok := index[c.Grade.Encoded()]; !ok {
			index[c.Grade.Encoded()] = i
		}
	}
	_, template := grade.AdjudicatorOf(rj.plan.Judge)
	var adj []rejudgeAsk
	for _, a := range asks {
		jd := judged[a.key]
		if jd == nil || jd.Error != "" {
			continue
		}
		i := index[a.key]
		c := rj.run.Cells[i]
		d := grade.DisputeOf(rj.plan, rj.cases[c.Case], results[i], jd.Criteria)
		if d == nil {
			continue
		}
		disputes[a.key] = d
		if rj.plan.Judge.Adjudication.Enabled {
			adj = append(adj, rejudgeAsk{key: a.key, name: "adjudication of " + a.name, cells: a.cells, criteria: a.criteria,
				judgement: grade.AdjudicationKey(c.Grade).Encoded(), role: store.RoleAdjudicator, template: template})
		}
	}
	if len(adj) == 0 {
		return disputes, nil
	}
	decided, err := rj.judgeAll(ctx, adj, func() (Judge, func(), error) {
		j, closeFn, err := NewAdjudicator(rj.plan, rj.opts.SuiteDir)
		if err == nil && j == nil {
			return NewJudge(rj.plan, rj.opts.SuiteDir)
		}
		return j, closeFn, err
	})
	if err != nil {
		return nil, err
	}
	for _, a := range adj {
		ad := decided[a.judgement]
		d := disputes[a.key]
		d.Adjudicated, d.Key, d.Valid, d.Reason, d.Criteria, d.Seconds, d.Tokens = true, a.judgement, ad.Error == "", ad.Error, ad.Criteria, ad.Usage.Seconds, ad.Usage.Tokens
	}
	return disputes, nil
}

// rubricAsks lists the packets of every cell whose rubric the judge grades
// and whose deterministic grade is valid (judged or not by the run's
// judge), one per grade key.
func (rj *rejudgeRun) rubricAsks(results []grade.CellResult) []rejudgeAsk {
	var asks []rejudgeAsk
	seen := map[string]bool{}
	for i, c := range rj.run.Cells {
		pc := rj.cases[c.Case]
		r := results[i]
		status := r.Status
		if r.Judge != nil {
			status = r.Judge.Status // the deterministic grade's, before judging
		}
		key := c.Grade.Encoded()
		if !grade.RubricJudged(rj.plan, pc) || status == grade.StatusInvalid || status == grade.StatusMissing || seen[key] {
			continue
		}
		seen[key] = true
		asks = append(asks, rejudgeAsk{key: key, name: c.ID, cells: []string{c.ID}, criteria: len(pc.Rubric)})
	}
	return asks
}

// pairAsks lists the pairs the other judge compares whose two cells are
// graded, and the packet of each order, keyed as the run's judge stored it.
func (rj *rejudgeRun) pairAsks(results []grade.CellResult) ([]pairSlot, []rejudgeAsk) {
	// The other judge's pairs and swap, under the run judge's digest: the
	// slots' keys are then the stored packets' keys.
	k := *rj.plan
	k.Judge = &plan.PlanJudge{Judge: rj.plan.Judge.Judge, Digest: rj.run.Judge.Digest}
	slots := pairSlots(&k, results)
	var asks []rejudgeAsk
	seen := map[string]bool{}
	for _, s := range slots {
		for i, pos := range s.positions {
			if seen[s.keys[i]] {
				continue
			}
			seen[s.keys[i]] = true
			asks = append(asks, rejudgeAsk{key: s.keys[i], position: pos, cells: []string{s.cand.ID, s.base.ID},
				name: fmt.Sprintf("%s/%d %s vs %s (%s as %s)", s.pc.ID, s.trial, s.pair.Candidate, s.pair.Baseline, s.pair.Candidate, pos)})
		}
	}
	return slots, asks
}

// judgementFile is where the rejudgement of a packet lives.
func (rj *rejudgeRun) judgementFile(key string) string {
	return filepath.Join(rj.dir, storeJudgementsDir, key+".json")
}

// judgeAll returns a rejudgement for every ask, by its rejudgement key:
// stored before, or asked now, of the judge newJudge makes, and stored. A
// failed call leaves its packet unjudged, and then it returns an error
// naming every such packet.
func (rj *rejudgeRun) judgeAll(ctx context.Context, asks []rejudgeAsk, newJudge func() (Judge, func(), error)) (map[string]*store.Judgement, error) {
	judged := map[string]*store.Judgement{}
	var todo []rejudgeAsk
	for _, a := range asks {
		key := a.rejudgementKey()
		jd, ok, err := store.ReadJudgementFile(rj.judgementFile(key))
		if err != nil {
			return nil, fmt.Errorf("rejudge: %w", err)
		}
		if !ok {
			todo = append(todo, a)
			continue
		}
		if jd.Judge != rj.plan.Judge.Digest || jd.Key != key {
			return nil, fmt.Errorf("rejudge: %s holds judge %s's judgement of %s, not judge %s's of %s", rj.judgementFile(key), jd.Judge, jd.Key, rj.plan.Judge.Digest, key)
		}
		judged[key] = jd
	}
	fmt.Fprintf(rj.opts.Log, "rejudging: %d %s packets by the %s judge %s (%d stored before, %d to ask, %d jobs)\n",
		len(asks), rj.plan.Judge.Mode, rj.plan.Judge.Provider, rj.plan.Judge.Digest.Encoded()[:12], len(asks)-len(todo), len(todo), max(rj.opts.Jobs, 1))
	if len(todo) == 0 {
		return judged, nil
	}
	j, closeJudge, err := newJudge()
	if err != nil {
		return nil, fmt.Errorf("rejudge: %w", err)
	}
	defer closeJudge()
	var mu sync.Mutex
	var failed []string
	done := 0
	bounded.ForEach(ctx, rj.opts.Jobs, todo, func(a rejudgeAsk) {
		jd, err := rj.ask(ctx, j, a)
		mu.Lock()
		defer mu.Unlock()
		done++
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s (%s): %v", a.key, a.name, err))
			fmt.Fprintf(rj.opts.Log, "[rejudge %d/%d] %s: %v\n", done, len(todo), a.name, err)
			return
		}
		judged[a.rejudgementKey()] = jd
		line := jd.Outcome
		switch {
		case jd.Error != "":
			line = "reply invalid: " + jd.Error
		case jd.Mode != "pairwise":
			met := 0
			for _, cr := range jd.Criteria {
				if cr.Pass {
					met++
				}
			}
			line = fmt.Sprintf("%d of %d criteria met", met, len(jd.Criteria))
		}
		fmt.Fprintf(rj.opts.Log, "[rejudge %d/%d] %s: %s\n", done, len(todo), a.name, line)
	})
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("rejudge: %w", err)
	}
	if len(failed) > 0 {
		sort.Strings(failed)
		return nil, fmt.Errorf("rejudge: %d packet(s) not judged (no report written; rejudge again to retry them): %s", len(failed), strings.Join(failed, "; "))
	}
	return judged, nil
}

// ask sends one stored packet to the other judge and stores the reply.
func (rj *rejudgeRun) ask(ctx context.Context, j Judge, a rejudgeAsk) (*store.Judgement, error) {
	b, err := os.ReadFile(rj.store.PacketPath(a.key))
	if err != nil {
		return nil, err
	}
	packet := []byte(strings.TrimSuffix(string(b), "\n"))
	pj := rj.plan.Judge
	template := pj.Templates.Rubric
	if pj.Mode == "pairwise" {
		template = pj.Templates.Pairwise
	}
	if a.template != "" {
		template = a.template
	}
	role := a.role
	if role == "" {
		role = store.RoleJudge
	}
	jd, err := rj.conv.ask(ctx, j, question{key: a.rejudgementKey(), mode: pj.Mode, role: role, name: a.name, cells: a.cells,
		position: a.position, criteria: a.criteria, template: template, packet: packet})
	var ce *callError
	if errors.As(err, &ce) {
		return nil, ce.err // the message names the packet already
	}
	return jd, err
}
