package plan

import (
	"cmp"
	"crypto/sha256"
	"slices"

	"github.com/opencontainers/go-digest"
)

// SentinelCell is a reused cell run again to check the reuse for drift
// (run --reuse): the cell's inputs, keys of its own, derived apart from
// RerunCell's, so its outcome is stored beside the reused one and neither
// replaces the other, nor a rerun.
func SentinelCell(c Cell) Cell {
	return Cell{
		ID: c.ID + "/sentinel", Case: c.Case, Arm: c.Arm, Trial: c.Trial, Agent: c.Agent,
		Rollout: DigestJSON(struct {
			Rollout  digest.Digest `json:"rollout"`
			Sentinel string        `json:"sentinel"`
		}{c.Rollout, "reuse"}),
		Grade: DigestJSON(struct {
			Grade    digest.Digest `json:"grade"`
			Sentinel string        `json:"sentinel"`
		}{c.Grade, "reuse"}),
	}
}

// SentinelSample draws n of cells (one group's reused cells) to run again
// as sentinels: only cells of arms (every arm when empty), one per rollout
// key, spread over distinct cases first. The draw is a function of seed
// (the plan digest and the group) and of the cells, whatever their order.
func SentinelSample(cells []Cell, n int, arms []string, seed string) []Cell {
	type drawn struct {
		c    Cell
		rank [32]byte
	}
	var pool []drawn
	seen := map[digest.Digest]bool{}
	for _, c := range cells {
		if seen[c.Rollout] || len(arms) > 0 && !slices.Contains(arms, c.Arm) {
			continue
		}
		seen[c.Rollout] = true
		pool = append(pool, drawn{c, sha256.Sum256([]byte(seed + "\x00" + c.ID))})
	}
	slices.SortFunc(pool, func(a, b drawn) int {
		return cmp.Or(slices.Compare(a.rank[:], b.rank[:]), cmp.Compare(a.c.ID, b.c.ID))
	})
	byCase := map[string][]Cell{}
	var order []string
	for _, d := range pool {
		if byCase[d.c.Case] == nil {
			order = append(order, d.c.Case)
		}
		byCase[d.c.Case] = append(byCase[d.c.Case], d.c)
	}
	var out []Cell
	for round := 0; len(out) < n && len(out) < len(pool); round++ {
		for _, id := range order {
			if round < len(byCase[id]) && len(out) < n {
				out = append(out, byCase[id][round])
			}
		}
	}
	return out
}
