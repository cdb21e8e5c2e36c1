package plan

import (
	"fmt"

	"github.com/opencontainers/go-digest"
)

// RerunCell is the n-th same-tree rerun of a cell: the cell's inputs, keys of its own, so
// the rerun's outcome is stored beside the first and neither replaces the other.
func RerunCell(c Cell, n int) Cell {
	return Cell{
		ID: fmt.Sprintf("%s/rerun%d", c.ID, n), Case: c.Case, Arm: c.Arm, Trial: c.Trial, Rerun: n,
		Rollout: DigestJSON(struct {
			Rollout digest.Digest `json:"rollout"`
			Rerun   int           `json:"rerun"`
		}{c.Rollout, n}),
		Grade: DigestJSON(struct {
			Grade digest.Digest `json:"grade"`
			Rerun int           `json:"rerun"`
		}{c.Grade, n}),
	}
}

// Panel is one case's trials in one arm.
type Panel struct {
	Case string `json:"case"`
	Arm  string `json:"arm"`
}

// PanelCells are the plan's cells of a panel, reran n times when n > 0.
func PanelCells(p *Plan, panel Panel, n int) []Cell {
	var out []Cell
	for _, c := range p.Cells {
		if c.Case == panel.Case && c.Arm == panel.Arm {
			if n > 0 {
				c = RerunCell(c, n)
			}
			out = append(out, c)
		}
	}
	return out
}
