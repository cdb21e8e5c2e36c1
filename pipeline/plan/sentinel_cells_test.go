package plan

import (
	"fmt"
	"slices"
	"testing"
)

func sentinelPool() []Cell {
	var cells []Cell
	for _, cs := range []string{"a", "b", "c", "d"} {
		for _, arm := range []string{"none", "other"} {
			for trial := 1; trial <= 3; trial++ {
				id := CellID(cs, arm, trial)
				cells = append(cells, Cell{ID: id, Case: cs, Arm: arm, Trial: trial, Rollout: DigestJSON(id), Grade: DigestJSON(id + "g")})
			}
		}
	}
	return cells
}

// TestSentinelSample: the draw is the same for the same seed whatever the
// cells' order, another for another seed; it covers every case before any
// case twice; it keeps to the arms asked; it never draws one rollout key
// twice.
func TestSentinelSample(t *testing.T) {
	cells := sentinelPool()
	ids := func(cs []Cell) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	a := SentinelSample(cells, 6, nil, "sha256:plan/m")
	rev := slices.Clone(cells)
	slices.Reverse(rev)
	if b := SentinelSample(rev, 6, nil, "sha256:plan/m"); !slices.Equal(ids(a), ids(b)) {
		t.Errorf("the cells' order changed the draw: %v, %v", ids(a), ids(b))
	}
	differs := false
	for i := range 5 {
		if o := SentinelSample(cells, 6, nil, fmt.Sprintf("sha256:other%d", i)); !slices.Equal(ids(a), ids(o)) {
			differs = true
		}
	}
	if !differs {
		t.Errorf("five other seeds all drew %v", ids(a))
	}
	count := map[string]int{}
	for _, c := range a[:4] {
		count[c.Case]++
	}
	if len(count) != 4 || len(a) != 6 {
		t.Errorf("the first 4 of %v do not cover the 4 cases", ids(a))
	}
	for _, c := range SentinelSample(cells, 8, []string{"other"}, "s") {
		if c.Arm != "other" {
			t.Errorf("arms [other] drew %s", c.ID)
		}
	}
	dup := append(slices.Clone(cells), cells...)
	if got := SentinelSample(dup, 100, nil, "s"); len(got) != len(cells) {
		t.Errorf("drew %d of %d distinct keys", len(got), len(cells))
	}
	if got := SentinelSample(cells, 0, nil, "s"); len(got) != 0 {
		t.Errorf("0 sentinels drew %v", ids(got))
	}
}

// TestSentinelCellKeys: a sentinel's keys are its own: not the cell's,
// not any rerun's.
func TestSentinelCellKeys(t *testing.T) {
	c := sentinelPool()[0]
	s := SentinelCell(c)
	for n := 0; n <= 3; n++ {
		other := c
		if n > 0 {
			other = RerunCell(c, n)
		}
		if s.Rollout == other.Rollout || s.Grade == other.Grade {
			t.Errorf("sentinel keys collide with rerun %d", n)
		}
	}
	if s.Case != c.Case || s.Arm != c.Arm || s.Trial != c.Trial || s.Rerun != 0 || s.ID != c.ID+"/sentinel" {
		t.Errorf("sentinel cell %+v", s)
	}
}
