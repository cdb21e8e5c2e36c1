package verdict

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
)

// PortabilityHeader is the header of the portability table every report
// shows.
var PortabilityHeader = []string{"agent", "kind", "pass rates", "uplift", "95% interval", "p", "activation", "verdict"}

// PortabilityRows are the portability table's rows, one an agent, as every
// report shows them, and the line under it that says how the uplift's
// difference between the agents was tested.
func PortabilityRows(pt *Portability) (rows [][]string, note string) {
	for _, a := range pt.Agents {
		var rates []string
		for _, arm := range sortedArms(a) {
			rates = append(rates, fmt.Sprintf("%s %s (%d)", arm, percent(a.PassRates[arm].Value), a.PassRates[arm].Samples))
		}
		up, ci, p := "n/a", "", ""
		if u := a.Uplift; u != nil {
			up = fmt.Sprintf("%+.1f points (%s − %s, %s × %s)", 100*u.Estimate, a.Treatment, a.Baseline, plan.Plural(u.N, "case"), plan.Plural(u.TrialsPerCase, "trial"))
			ci = fmt.Sprintf("[%+.1f, %+.1f]", 100*u.CI95[0], 100*u.CI95[1])
			p = fmt.Sprintf("%.3g", u.P)
		}
		var act []string
		for _, arm := range slices.Sorted(maps.Keys(a.Activation)) {
			var levels []string
			for _, lv := range []string{grade.EvidenceObserved, grade.EvidenceInferred, grade.EvidenceReported, grade.EvidenceUnobservable, "none"} {
				if n := a.Activation[arm][lv]; n > 0 {
					levels = append(levels, fmt.Sprintf("%s %d", lv, n))
				}
			}
			act = append(act, arm+": "+strings.Join(levels, ", "))
		}
		rows = append(rows, []string{a.Agent, a.Kind, strings.Join(rates, " · "), up, ci, p, strings.Join(act, "; "), a.Verdict})
	}
	if h := pt.Heterogeneity; h != nil {
		note = fmt.Sprintf("Does the uplift differ between agents? p = %.3g over %d cases paired on all %d agents (%s).", h.P, h.N, h.Groups, h.Method)
	} else {
		note = "Whether the uplift differs between agents was not tested: no case has paired trials on every agent."
	}
	return rows, note
}

// sortedArms lists an agent's arms with a pass rate: baseline, treatment,
// then the others by name.
func sortedArms(a PortabilityAgent) []string {
	var out []string
	for _, arm := range []string{a.Baseline, a.Treatment} {
		if _, ok := a.PassRates[arm]; ok && !slices.Contains(out, arm) {
			out = append(out, arm)
		}
	}
	for _, arm := range slices.Sorted(maps.Keys(a.PassRates)) {
		if !slices.Contains(out, arm) {
			out = append(out, arm)
		}
	}
	return out
}
