package readback

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/verdict"
	"github.com/skillgate/skillgate/runner/store"
)

// ShardsOf gives each of the plan's cells, by ID, the shard (from 1) of n
// that runs it, by the rule the runner's Shard describes: the same on
// every machine, and cells that must run together in one shard.
func ShardsOf(p *plan.Plan, n int) map[string]int {
	if len(p.Agents) > 1 {
		// A suite on several agents: each agent's share of the plan is
		// shared out as when it runs (one agent at a time), so a shard
		// runs, grades and completes the same cells whichever plan it reads.
		out := make(map[string]int, len(p.Cells))
		for _, name := range p.AgentNames() {
			maps.Copy(out, ShardsOf(p.ForAgent(name), n))
		}
		return out
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

// MarkShard makes the report of a shard's run folder say so: INCOMPLETE,
// whatever its cells show, with the shard as its first reason. A failed
// calibration keeps its verdict: it stops every shard alike.
func MarkShard(r *verdict.Report, p *plan.Plan, rec store.ShardRecord) {
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
