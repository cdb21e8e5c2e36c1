package runner

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/skillgate/skillgate/runner/judge"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"
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
