package runner

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/skillgate/skillgate/runner/judge"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// Shard is one share of a plan's cells, the Index-th of Count (from 1), as
// `skillgate run --shard I/N` asks for it: N machines each run one share
// into a run folder of their own, and `skillgate merge` unions the folders.
// The zero Shard, and 1/1, is the whole plan.
//
// The shares are a function of the plan alone, so every machine computes
// the same ones whatever the order of the plan's cells:
//
//   - Cells that must run in one place form a unit: the cells of one
//     rollout key (they share one rollout); when the policy reruns red
//     panels (rerunRed), every cell of a case (the case's panels decide
//     the rerun); with a pairwise judge, every cell of a case and trial
//     (they are judged against each other).
//   - Units go to shards largest first (by rollout keys), ties broken by
//     the unit's smallest rollout key, each to the shard holding the
//     fewest rollout keys so far, ties to the lowest index. Shares differ
//     by at most one unit; a shard may get none when N exceeds the units.
//   - A rerun cell belongs to the shard of the cell it reruns.
//   - Calibration cells belong to every shard that has a cell: each shard
//     calibrates before its cells, so a failed check stops every shard.
type Shard struct {
	Index, Count int
}

// ParseShard reads "I/N", I from 1 to N.
func ParseShard(s string) (Shard, error) {
	is, ns, ok := strings.Cut(strings.TrimSpace(s), "/")
	i, ierr := strconv.Atoi(is)
	n, nerr := strconv.Atoi(ns)
	switch {
	case !ok || ierr != nil || nerr != nil:
		return Shard{}, fmt.Errorf("parse --shard %q: want I/N, the I-th of N shares, as in 2/3", s)
	case n < 1:
		return Shard{}, fmt.Errorf("parse --shard %q: N is the number of shards, at least 1", s)
	case i < 1 || i > n:
		return Shard{}, fmt.Errorf("parse --shard %q: I counts the shards from 1 to %d", s, n)
	}
	return Shard{Index: i, Count: n}, nil
}

// String is "I/N".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Whole reports whether the shard is the whole plan.
func (s Shard) Whole() bool { return s.Count <= 1 }

// ShardsOf gives each of the plan's cells, by ID, the shard (from 1) of n
// that runs it, by the rule Shard describes.
func ShardsOf(p *plan.Plan, n int) map[string]int {
	if len(p.Agents) > 1 {
		return agentShards(p, n)
	}
	out := make(map[string]int, len(p.Cells))
	if n <= 1 {
		for _, c := range p.Cells {
			out[c.ID] = 1
		}
		return out
	}
	// Union the cells that must run together.
	parent := make([]int, len(p.Cells))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	union := func(a, b int) {
		if ra, rb := find(a), find(b); ra != rb {
			parent[max(ra, rb)] = min(ra, rb)
		}
	}
	pairwise := p.Judge != nil && p.Judge.Mode == "pairwise"
	first := map[string]int{}
	for i, c := range p.Cells {
		keys := []string{"rollout " + c.Rollout.String()}
		if p.Policy.RerunRed > 0 {
			keys = append(keys, "case "+c.Case)
		} else if pairwise {
			keys = append(keys, "trial "+c.Case+"\x00"+strconv.Itoa(c.Trial))
		}
		for _, k := range keys {
			if j, ok := first[k]; ok {
				union(i, j)
			} else {
				first[k] = i
			}
		}
	}
	type unit struct {
		cells []int
		keys  map[string]bool
		least string
	}
	byRoot := map[int]*unit{}
	var units []*unit
	for i, c := range p.Cells {
		r := find(i)
		u := byRoot[r]
		if u == nil {
			u = &unit{keys: map[string]bool{}}
			byRoot[r] = u
			units = append(units, u)
		}
		u.cells = append(u.cells, i)
		k := c.Rollout.String()
		u.keys[k] = true
		if u.least == "" || k < u.least {
			u.least = k
		}
	}
	slices.SortFunc(units, func(a, b *unit) int {
		if d := cmp.Compare(len(b.keys), len(a.keys)); d != 0 {
			return d
		}
		return strings.Compare(a.least, b.least)
	})
	load := make([]int, n)
	for _, u := range units {
		to := 0
		for s := 1; s < n; s++ {
			if load[s] < load[to] {
				to = s
			}
		}
		load[to] += len(u.keys)
		for _, i := range u.cells {
			out[p.Cells[i].ID] = to + 1
		}
	}
	return out
}

// shardPlan is the plan with only the cells of the shard: what grading,
// reruns and judging of one shard see. Its digest is the plan's.
func shardPlan(p *plan.Plan, s Shard) *plan.Plan {
	if s.Whole() {
		return p
	}
	of := ShardsOf(p, s.Count)
	q := *p
	q.Cells = nil
	for _, c := range p.Cells {
		if of[c.ID] == s.Index {
			q.Cells = append(q.Cells, c)
		}
	}
	return &q
}

// selectCells is the cells a run selects: the filters' (Select), in the
// shard's share.
func selectCells(p *plan.Plan, opts Options) ([]plan.Cell, error) {
	cells, err := Select(p, opts.Cases, opts.Arms, opts.Split)
	if err == nil && opts.only != nil {
		cells = slices.DeleteFunc(cells, func(c plan.Cell) bool { return !opts.only[c.ID] })
	}
	if err != nil || opts.Shard.Whole() {
		return cells, err
	}
	of := ShardsOf(p, opts.Shard.Count)
	var out []plan.Cell
	for _, c := range cells {
		if of[c.ID] == opts.Shard.Index {
			out = append(out, c)
		}
	}
	return out, nil
}

// recordShard writes the run folder's shard record before a sharded run,
// adding this shard to those of the same plan and count already run into
// the folder; an unsharded run removes it, its folder being the plan's.
func recordShard(out string, p *plan.Plan, s Shard) error {
	if s.Whole() {
		return store.RemoveShard(out)
	}
	rec := store.ShardRecord{Plan: p.Digest, Count: s.Count, Shards: []int{s.Index}}
	if prev, ok, err := store.ReadShard(out, p); err != nil {
		return err
	} else if ok && prev.Count == s.Count {
		rec.Shards = prev.Shards
		if !slices.Contains(rec.Shards, s.Index) {
			rec.Shards = append(rec.Shards, s.Index)
			slices.Sort(rec.Shards)
		}
	}
	return store.WriteShard(out, rec)
}

// shareComplete reports whether every cell of the shard's share has a valid
// result, judged where the plan judges it: all a shard can do.
func shareComplete(out string, p *plan.Plan, s Shard) (bool, error) {
	sp := shardPlan(p, s)
	st := &store.Store{Dir: out}
	results, err := store.Results(sp, st)
	if err != nil {
		return false, err
	}
	for _, r := range results {
		if !r.Valid() {
			return false, nil
		}
	}
	_, _, notJudged, _, err := judge.JudgedResults(sp, st, results)
	return err == nil && len(notJudged) == 0, err
}

// markShard makes the report of a shard's run folder say so: INCOMPLETE,
// whatever its cells show, with the shard as its first reason. A failed
// calibration keeps its verdict: it stops every shard alike.
func markShard(r *verdict.Report, p *plan.Plan, rec store.ShardRecord) {
	of := ShardsOf(p, rec.Count)
	held := 0
	for _, c := range p.Cells {
		if slices.Contains(rec.Shards, of[c.ID]) {
			held++
		}
	}
	names := make([]string, len(rec.Shards))
	for i, s := range rec.Shards {
		names[i] = strconv.Itoa(s)
	}
	word := "SHARD"
	if len(names) > 1 {
		word = "SHARDS"
	}
	reason := fmt.Sprintf("%s %s of %d: %d of the plan's %d cells; merge the %d shards' run folders for the verdict",
		word, strings.Join(names, ", "), rec.Count, held, len(p.Cells), rec.Count)
	v := &r.Verdict
	v.Reasons = append([]string{reason}, v.Reasons...)
	v.Resumable = false // a rerun into the shard's folder never finishes the plan
	if v.Verdict == verdict.VerdictCalibration {
		return
	}
	v.Verdict = verdict.VerdictIncomplete
	v.ExitCode = verdict.ExitCode(verdict.VerdictIncomplete)
}
