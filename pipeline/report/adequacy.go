package report

import (
	"fmt"
	"strings"

	"github.com/skillgate/skillgate/pipeline/verdict"
)

// AdequacyText says a mutate run's adequacy in plain text: the kill rate,
// one line per mutant (its outcome, the pass rate lost with its interval,
// the cases that did not notice it), then the ablation of SKILL.md's
// sections.
func AdequacyText(a *verdict.Adequacy) string {
	if a == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "adequacy: kill rate %s (%d of %d mutants killed)", rate(a.KillRate), a.Killed, a.Measured)
	if a.MinKillRate != nil {
		fmt.Fprintf(&b, ", required ≥ %s", rate(*a.MinKillRate))
	}
	b.WriteString("\n")
	if m := method(a); m != "" {
		fmt.Fprintf(&b, "  each mutant against its skill's arm, cases as the unit: %s\n", m)
	}
	if sequential(a) {
		b.WriteString("  sequential stopping decides each mutant: killed when its e-value reaches 1/α (anytime-valid); the interval describes the cells read\n")
	}
	width := 0
	for _, m := range a.Mutants {
		width = max(width, len(m.Arm))
	}
	for _, m := range a.Mutants {
		fmt.Fprintf(&b, "  %-12s %-*s  %s\n", m.Outcome, width, m.Arm, lost(m))
		if m.Stopped != "" {
			fmt.Fprintf(&b, "  %-12s %-*s  sequential: %s\n", "", width, "", m.Stopped)
		}
		if m.KilledBy == "routing" {
			fmt.Fprintf(&b, "  %-12s %-*s  killed by routing: the skill's arm opened the skill more often, %+.2f [%+.2f, %+.2f]\n", "", width, "", m.Routing.Estimate, m.Routing.CI95[0], m.Routing.CI95[1])
		}
		if !m.Killed && m.Outcome != verdict.MutantNotMeasured && len(m.Unnoticed) > 0 {
			fmt.Fprintf(&b, "  %-12s %-*s  not noticed by: %s\n", "", width, "", strings.Join(m.Unnoticed, ", "))
		}
	}
	if rows := ablation(a); len(rows) > 0 {
		b.WriteString("ablation: pass rate lost without each section of SKILL.md\n")
		w := 0
		for _, m := range rows {
			w = max(w, len(m.Section))
		}
		for _, m := range rows {
			fmt.Fprintf(&b, "  %-*s  %s  %s\n", w, m.Section, lost(m), m.Outcome)
		}
	}
	return b.String()
}

// ablation are the section mutants, in SKILL.md's order.
func ablation(a *verdict.Adequacy) []verdict.MutantOutcome {
	var out []verdict.MutantOutcome
	for _, m := range a.Mutants {
		if m.Section != "" {
			out = append(out, m)
		}
	}
	return out
}

// lost says the pass rate a mutant lost against the skill, with its 95%
// interval and p-value.
func lost(m verdict.MutantOutcome) string {
	inf := m.Inference
	if inf == nil || inf.N == 0 {
		return "no valid pair of cells"
	}
	return fmt.Sprintf("lost %+.2f [%+.2f, %+.2f] p=%.3g, %d cases", unsigned(inf.Estimate), unsigned(inf.CI95[0]), unsigned(inf.CI95[1]), inf.P, inf.N)
}

// unsigned is x with a rounding's negative zero made zero, so a bound a
// hair below 0 reads +0.00, not -0.00.
func unsigned(x float64) float64 {
	if x > -0.005 && x < 0.005 {
		return 0
	}
	return x
}

// method names the comparisons' method when they share one.
func method(a *verdict.Adequacy) string {
	m := ""
	for _, o := range a.Mutants {
		if o.Inference == nil || o.Inference.N == 0 {
			continue
		}
		if m != "" && o.Inference.Method != m {
			return "methods as report.json names them"
		}
		m = o.Inference.Method
	}
	return m
}

// sequential says the mutants were decided by sequential stopping.
func sequential(a *verdict.Adequacy) bool {
	for _, o := range a.Mutants {
		if o.Stopped != "" {
			return true
		}
	}
	return false
}

// rate writes a rate as a whole percentage.
func rate(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }

// adequacyMarkdown is report.md's section on a mutate run's mutants.
func adequacyMarkdown(a *verdict.Adequacy) string {
	if a == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### Mutants\n\nKill rate **%s** (%d of %d mutants killed", rate(a.KillRate), a.Killed, a.Measured)
	if a.MinKillRate != nil {
		fmt.Fprintf(&b, "; required ≥ %s", rate(*a.MinKillRate))
	}
	if sequential(a) {
		b.WriteString("). Sequential stopping decided each mutant: killed when the skill's arm beats the mutant's by the anytime-valid test, its e-value at or above 1/α, read after every round; the interval describes the cells read and decides nothing.\n\n")
	} else {
		b.WriteString("). A mutant is killed when its arm passes less often than the skill's, the paired 95% interval of the difference above 0")
		if m := method(a); m != "" {
			fmt.Fprintf(&b, " (cases as the unit: %s)", mdText(m))
		}
		b.WriteString(".\n\n")
	}
	b.WriteString("| mutant | against | what was done | outcome | pass rate lost [95% CI] | cases that did not notice it |\n|---|---|---|---|---|---|\n")
	for _, m := range a.Mutants {
		outcome := m.Outcome
		if m.Stopped != "" {
			outcome += " (" + mdText(m.Stopped) + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", mdText(m.Arm), mdText(m.Against), mdText(m.What), outcome, mdText(lost(m)), mdText(strings.Join(m.Unnoticed, ", ")))
	}
	if rows := ablation(a); len(rows) > 0 {
		b.WriteString("\n#### Ablation of SKILL.md\n\n| section | pass rate lost [95% CI] | outcome |\n|---|---|---|\n")
		for _, m := range rows {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", mdText(m.Section), mdText(lost(m)), m.Outcome)
		}
	}
	b.WriteString("\n")
	return b.String()
}
