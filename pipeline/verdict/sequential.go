package verdict

import (
	"fmt"
	"math"
	"slices"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/inference"
	"github.com/skillgate/skillgate/pipeline/plan"
)

// What a comparison's sequential test says, beside inference's effect,
// futility and continue: pending when a round it needs has a cell without
// a valid result, so nothing after that round can be decided yet.
const SequentialPending = "pending"

// Sequential is what the plan's sequential stopping (policy.sequential)
// decided from the stored results: for each comparison, the round it
// stopped at and why, and the cells no comparison needed. It is a pure
// function of the plan and the results (DecideSequential), so a resumed
// run, a replay, a merge of shards and `skillgate report` all decide
// alike, and the verdict reads exactly the cells it says are needed.
type Sequential struct {
	Method string  `json:"method"`
	Alpha  float64 `json:"alpha"`
	// Share and Futility draw Wald's futility boundary (#Sequential).
	Share    float64 `json:"share"`
	Futility float64 `json:"futility"`
	// Round is the trials of every case and arm per round; Rounds the
	// plan's rounds (its trials over Round, rounded up).
	Round  int `json:"round"`
	Rounds int `json:"rounds"`
	// Comparisons in the order of Comparisons(policy).
	Comparisons []SequentialComparison `json:"comparisons"`
	// Planned is the plan's cells; NotNeeded the cells no comparison
	// needs, each with the round and statistic of the comparisons that
	// stopped before it.
	Planned   int             `json:"planned"`
	NotNeeded []NotNeededCell `json:"notNeeded"`
	// Saved is how many not-needed cells were never run (the runner
	// fills it from the store: a cell of a shard or of an earlier run may
	// have run anyway; the verdict leaves it out all the same).
	Saved int `json:"saved"`
}

// SequentialComparison is one comparison's sequential test.
type SequentialComparison struct {
	Rule      string `json:"rule"`
	Baseline  string `json:"baseline"`
	Candidate string `json:"candidate"`
	Cases     int    `json:"cases"`
	// Decision is effect, futility, or pending (a round it needs is not
	// all valid yet); Round the last round it read.
	Decision string `json:"decision"`
	Round    int    `json:"round"`
	// Wins and Losses are the candidate's among the discordant trial
	// pairs of the rounds read; E is the e-value (1/Alpha decides).
	Wins   int     `json:"wins"`
	Losses int     `json:"losses"`
	E      float64 `json:"e"`
	// Why says the decision in a sentence.
	Why string `json:"why"`
}

// NotNeededCell is a cell the sequential rule did not need: the round it
// belongs to, and the comparisons that stopped before that round.
type NotNeededCell struct {
	Cell  string `json:"cell"`
	Round int    `json:"round"`
	// StoppedBy names each comparison that read the cell's case and arm,
	// with its decision, round and e-value.
	StoppedBy []string `json:"stoppedBy"`
}

// cellKey finds a plan cell by case, arm and trial.
type cellKey struct {
	caseID, arm string
	trial       int
}

// DecideSequential applies the policy's sequential test to the results,
// round by round, and says which cells are not needed; nil when the
// policy has no sequential stopping.
func DecideSequential(p *plan.Plan, results []grade.CellResult) *Sequential {
	cfg := p.Policy.Sequential
	if cfg == nil || cfg.Round < 1 {
		return nil
	}
	// The suite's trials, so a plan cut to the cells a decision needed
	// (Needed) decides alike: the adequacy of a mutate run decides again
	// from those cells.
	trials := p.Suite.Trials
	for _, c := range p.Cells {
		if c.Rerun == 0 {
			trials = max(trials, c.Trial)
		}
	}
	s := &Sequential{Method: inference.MethodSequential, Alpha: cfg.Alpha, Share: cfg.Share, Futility: cfg.Futility, Round: cfg.Round, Rounds: roundOf(trials, cfg.Round), Planned: len(p.Cells), NotNeeded: []NotNeededCell{}, Comparisons: []SequentialComparison{}}
	byKey := map[cellKey]grade.CellResult{}
	for _, r := range alignResults(p, results) {
		byKey[cellKey{r.Case, r.Arm, r.Trial}] = r
	}
	arms := map[string]bool{}
	for _, a := range p.Arms {
		arms[a.Name] = true
	}
	var comps []Comparison
	for _, c := range Comparisons(p.Policy) {
		if !arms[c.Baseline] || !arms[c.Candidate] || c.Baseline == c.Candidate {
			continue
		}
		var cases []string
		for i := range p.Cases {
			if c.Keeps(&p.Cases[i]) {
				cases = append(cases, p.Cases[i].ID)
			}
		}
		if len(cases) == 0 {
			continue
		}
		comps = append(comps, c)
		s.Comparisons = append(s.Comparisons, s.decide(c, cases, trials, byKey))
	}
	for _, c := range mutantComparisons(p) {
		comps = append(comps, c)
		s.Comparisons = append(s.Comparisons, s.decide(c, caseIDs(p), trials, byKey))
	}
	s.markNotNeeded(p, comps)
	return s
}

// roundOf is the round a trial runs in.
func roundOf(trial, size int) int { return (trial-1)/size + 1 }

// decide runs one comparison's test round by round until it stops or a
// round lacks a valid cell.
func (s *Sequential) decide(c Comparison, cases []string, trials int, byKey map[cellKey]grade.CellResult) SequentialComparison {
	out := SequentialComparison{Rule: c.Rule, Baseline: c.Baseline, Candidate: c.Candidate, Cases: len(cases), Decision: SequentialPending, E: 1}
	test, err := inference.NewSequential(s.Alpha, s.Share, s.Futility, len(cases)*trials)
	if err != nil {
		out.Why = err.Error()
		return out
	}
	for r := 1; r <= s.Rounds; r++ {
		wins, losses := out.Wins, out.Losses
		for _, id := range cases {
			for t := (r-1)*s.Round + 1; t <= min(r*s.Round, trials); t++ {
				b, okB := byKey[cellKey{id, c.Baseline, t}]
				k, okC := byKey[cellKey{id, c.Candidate, t}]
				if !okB || !okC || !b.Valid() || !k.Valid() {
					out.Why = fmt.Sprintf("round %d is not complete (cell %s has no valid result): the test waits for it", r, missingCell(b, k, okB))
					return out
				}
				switch kp, bp := c.outcome(k), c.outcome(b); {
				case kp && !bp:
					wins++
				case bp && !kp:
					losses++
				}
			}
		}
		out.Wins, out.Losses, out.Round = wins, losses, r
		out.E = finite(test.EValue(wins, losses))
		left := len(cases) * (trials - min(r*s.Round, trials))
		switch test.Decide(wins, losses, left) {
		case inference.SequentialEffect:
			out.Decision = inference.SequentialEffect
			out.Why = fmt.Sprintf("%s beats %s: E %.3g ≥ 1/α = %.3g after round %d of %d (%d wins, %d losses of the discordant trial pairs)", c.Candidate, c.Baseline, out.E, 1/s.Alpha, r, s.Rounds, wins, losses)
			return out
		case inference.SequentialFutility:
			out.Decision = inference.SequentialFutility
			out.Why = fmt.Sprintf("%s cannot be shown better than %s within the plan: E %.3g after round %d of %d (%d wins, %d losses), futile", c.Candidate, c.Baseline, out.E, r, s.Rounds, wins, losses)
			return out
		}
	}
	out.Why = "no round to read"
	return out
}

// missingCell names the cell a round lacks.
func missingCell(b, c grade.CellResult, okB bool) string {
	if !okB || !b.Valid() {
		return b.Cell
	}
	return c.Cell
}

// markNotNeeded lists the plan's cells every comparison reading them has
// stopped before their round; a cell no comparison reads is always needed.
func (s *Sequential) markNotNeeded(p *plan.Plan, comps []Comparison) {
	cases := caseIndex(p)
	for _, c := range p.Cells {
		if c.Rerun != 0 {
			continue
		}
		round := roundOf(c.Trial, s.Round)
		var by []string
		needed := false
		for i, cmp := range comps {
			if (c.Arm != cmp.Baseline && c.Arm != cmp.Candidate) || !cmp.Keeps(cases[c.Case]) {
				continue
			}
			sc := s.stopOf(i)
			if sc.Decision == SequentialPending || sc.Round >= round {
				needed = true
				break
			}
			by = append(by, fmt.Sprintf("%s %s after round %d (E %.3g)", sc.Rule, sc.Decision, sc.Round, sc.E))
		}
		if !needed && len(by) > 0 {
			s.NotNeeded = append(s.NotNeeded, NotNeededCell{Cell: c.ID, Round: round, StoppedBy: by})
		}
	}
}

// Needed is the plan without the cells the sequential rule did not need:
// what the verdict reads. Its digest is the plan's.
func (s *Sequential) Needed(p *plan.Plan) *plan.Plan {
	if s == nil || len(s.NotNeeded) == 0 {
		return p
	}
	skip := make(map[string]bool, len(s.NotNeeded))
	for _, c := range s.NotNeeded {
		skip[c.Cell] = true
	}
	q := *p
	q.Cells = make([]plan.Cell, 0, len(p.Cells)-len(skip))
	for _, c := range p.Cells {
		if !skip[c.ID] {
			q.Cells = append(q.Cells, c)
		}
	}
	return &q
}

// Lines say what sequential stopping did, one line per comparison and one
// for the cells, for the terminal and the reports.
func (s *Sequential) Lines() []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, c := range s.Comparisons {
		out = append(out, fmt.Sprintf("SEQUENTIAL %s %s: %s", c.Rule, c.Decision, c.Why))
	}
	ran := len(s.NotNeeded) - s.Saved
	line := fmt.Sprintf("SEQUENTIAL %d of %d planned cells not needed", len(s.NotNeeded), s.Planned)
	if ran > 0 {
		line += fmt.Sprintf(" (%d never ran; %d ran before the decision and are left out of the verdict)", s.Saved, ran)
	}
	return append(out, line)
}

// finite keeps an e-value JSON can hold.
func finite(x float64) float64 {
	if math.IsInf(x, 1) || x > math.MaxFloat64 {
		return math.MaxFloat64
	}
	return x
}

// SequentialPlanLine says, for `skillgate plan`, the rounds the plan's
// sequential stopping fixes before anything runs; "" without it.
func SequentialPlanLine(p *plan.Plan) string {
	cfg := p.Policy.Sequential
	if cfg == nil || cfg.Round < 1 {
		return ""
	}
	s := DecideSequential(p, nil)
	var rules []string
	for _, c := range s.Comparisons {
		if !slices.Contains(rules, c.Rule) { // a mutate plan tests each mutant under one rule
			rules = append(rules, c.Rule)
		}
	}
	return fmt.Sprintf("sequential stopping: at most %d rounds of %d trial(s) per case and arm, α %g; after each round each comparison (%s) may stop for effect or futility, and cells no comparison needs are not run\n",
		s.Rounds, s.Round, s.Alpha, orNoneList(rules))
}
