package mutate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/plan"
)

// DiffText says, for `skillgate diff --mutants`, what each mutant arm of
// two mutate plans does after an edit: how many of its cells need a new
// rollout, a regrade only, are new or gone, and why, as d gives the
// reasons. A mutant whose tree the edit did not touch (a section mutant
// of an edited section deletes the edit) keeps every cell.
func DiffText(a, b *plan.Plan, d *plan.PlanDiff) string {
	arms := map[string]string{} // mutant arm → mutant ID
	var order []string
	for _, p := range []*plan.Plan{b, a} {
		for _, m := range p.Mutants {
			if _, ok := arms[m.Arm]; !ok {
				arms[m.Arm] = m.Mutant
				order = append(order, m.Arm)
			}
		}
	}
	if len(order) == 0 {
		return ""
	}
	type tally struct {
		counts  map[string]int
		reasons []string
	}
	byArm := map[string]*tally{}
	for _, c := range d.Cells {
		arm := cellArm(c.ID)
		if _, ok := arms[arm]; !ok {
			continue
		}
		t := byArm[arm]
		if t == nil {
			t = &tally{counts: map[string]int{}}
			byArm[arm] = t
		}
		t.counts[c.Class]++
		for _, r := range c.Reasons {
			if !slices.Contains(t.reasons, r) {
				t.reasons = append(t.reasons, r)
			}
		}
	}
	width := 0
	for _, arm := range order {
		width = max(width, len(arm))
	}
	var out strings.Builder
	fmt.Fprintf(&out, "\nmutant arms (%d):\n", len(order))
	for _, arm := range order {
		t := byArm[arm]
		if t == nil {
			t = &tally{counts: map[string]int{}}
		}
		var parts []string
		for _, class := range []string{plan.DiffRollout, plan.DiffRegrade, plan.DiffAdded, plan.DiffRemoved, plan.DiffUnchanged} {
			if n := t.counts[class]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, diffWord(class)))
			}
		}
		line := fmt.Sprintf("  %-*s  %s", width, arm, strings.Join(parts, ", "))
		if len(t.reasons) > 0 {
			line += ": " + strings.Join(t.reasons, "; ")
		}
		out.WriteString(line + "\n")
	}
	return out.String()
}

// diffWord says a diff class of a cell in words.
func diffWord(class string) string {
	switch class {
	case plan.DiffRollout:
		return "rerun"
	case plan.DiffRegrade:
		return "regrade only"
	}
	return class
}

// cellArm is the arm of a cell ID (CASE/ARM/TRIAL; a case ID holds no
// slash, an arm may hold dots).
func cellArm(id string) string {
	parts := strings.Split(id, "/")
	if len(parts) < 3 {
		return ""
	}
	return strings.Join(parts[1:len(parts)-1], "/")
}

// PlanLine says, for `skillgate plan --mutants`, how many mutants run in
// how many mutant arms beside how many arms of the skill's; "" for a
// plan without mutants.
func PlanLine(p *plan.Plan) string {
	if len(p.Mutants) == 0 {
		return ""
	}
	mutants, against := map[string]bool{}, map[string]bool{}
	cells := 0
	arms := map[string]bool{}
	for _, m := range p.Mutants {
		mutants[m.Skill+"."+m.Mutant] = true
		against[m.Against] = true
		arms[m.Arm] = true
	}
	for _, c := range p.Cells {
		if arms[c.Arm] {
			cells++
		}
	}
	return fmt.Sprintf("%s in %s beside %s of the skill's (the baseline is not rerun): %s of the mutants\n",
		plan.Plural(len(mutants), "mutant"), plan.Plural(len(p.Mutants), "mutant arm"), plan.Plural(len(against), "arm"), plan.Plural(cells, "cell"))
}

// SequentialLine says, for `skillgate plan --mutants` under
// policy.sequential, the fewest cells the run can cost: every mutant
// decided after round 1 (no test decides before a round is whole); the
// plan's cells are the most. "" without sequential stopping.
func SequentialLine(p *plan.Plan) string {
	cfg := p.Policy.Sequential
	if cfg == nil || cfg.Round < 1 || len(p.Mutants) == 0 {
		return ""
	}
	first := 0
	for _, c := range p.Cells {
		if c.Rerun == 0 && c.Trial <= cfg.Round {
			first++
		}
	}
	line := fmt.Sprintf("with sequential stopping: between %s (every mutant decided after round 1) and %s", plan.Plural(first, "cell"), plan.Plural(len(p.Cells), "cell"))
	if s := p.Summary(); s.CostUSD != nil && len(p.Cells) > 0 {
		line += fmt.Sprintf(", $%.2f to $%.2f", *s.CostUSD*float64(first)/float64(len(p.Cells)), *s.CostUSD)
	}
	return line + "\n"
}
