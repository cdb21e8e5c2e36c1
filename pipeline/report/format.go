package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/runfolder"
	"github.com/skillgate/skillgate/pipeline/verdict"

	"github.com/opencontainers/go-digest"
)

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func reportPtr[T any](v T) *T { return &v }

// reportArmNames lists the arms in authored order, then any arm that only
// cases mention, sorted.
func reportArmNames(r *verdict.Report) []string {
	var names []string
	seen := map[string]bool{}
	for _, a := range r.Arms {
		if !seen[a.Name] {
			seen[a.Name] = true
			names = append(names, a.Name)
		}
	}
	var extra []string
	for _, c := range r.Cases {
		for arm := range c.Trials {
			if !seen[arm] {
				seen[arm] = true
				extra = append(extra, arm)
			}
		}
	}
	sort.Strings(extra)
	return append(names, extra...)
}

func reportArm(r *verdict.Report, name string) *verdict.ArmReport {
	for i := range r.Arms {
		if r.Arms[i].Name == name {
			return &r.Arms[i]
		}
	}
	return nil
}

// trialClass is "pass", "fail", "missing" or "invalid".
func trialClass(t verdict.TrialOutcome) string {
	switch {
	case t.Status == grade.StatusMissing || t.Status == "":
		return "missing"
	case t.Status == grade.StatusInvalid:
		return "invalid"
	case t.Passed:
		return "pass"
	default:
		return "fail"
	}
}

func trialSymbol(t verdict.TrialOutcome) string {
	switch trialClass(t) {
	case "pass":
		return "✓"
	case "fail":
		return "✗"
	case "invalid":
		return "!"
	default:
		return "–"
	}
}

func cellName(caseID, arm string, t verdict.TrialOutcome) string {
	if t.Cell != "" {
		return t.Cell
	}
	return fmt.Sprintf("%s/%s/%d", caseID, arm, t.Trial)
}

// failSummary says why a valid cell failed.
func failSummary(t verdict.TrialOutcome) string {
	if t.Status != grade.StatusCompleted && t.Status != "" {
		if len(t.Failed) > 0 {
			return t.Status + "; failed: " + strings.Join(t.Failed, ", ")
		}
		return t.Status
	}
	if len(t.Failed) > 0 {
		return "failed: " + strings.Join(t.Failed, ", ")
	}
	return "failed"
}

// trialTitle describes one trial for a tooltip.
func trialTitle(t verdict.TrialOutcome) string {
	s := fmt.Sprintf("trial %d: ", t.Trial)
	switch trialClass(t) {
	case "pass":
		return s + "passed"
	case "missing":
		return s + "not run"
	case "invalid":
		return s + "invalid run (neither pass nor fail)"
	default:
		return s + failSummary(t)
	}
}

// rolloutHref is the link, relative to the run folder, to a file of the
// trial's stored rollout; "" when the cell has no rollout.
func rolloutHref(t verdict.TrialOutcome, file string) string {
	if t.Rollout == "" || t.Status == grade.StatusMissing {
		return ""
	}
	return runfolder.DirRollouts + "/" + digestHex(t.Rollout) + "/" + file
}

func digestHex(d digest.Digest) string {
	s := string(d)
	if i := strings.IndexByte(s, ':'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// shortDigest is "sha256:" and the first 12 hex digits.
func shortDigest(d digest.Digest) string {
	s := string(d)
	if s == "" {
		return "—"
	}
	alg, hex := "", s
	if i := strings.IndexByte(s, ':'); i >= 0 {
		alg, hex = s[:i+1], s[i+1:]
	}
	if len(hex) > 12 {
		hex = hex[:12]
	}
	return alg + hex
}

// pct formats a rate as a whole percentage.
func fmtPct(v float64) string {
	return fmt.Sprintf("%.0f%%", v*100)
}

// ciText is "[lo–hi%]" for a metric with an interval, else "".
func ciText(m verdict.Metric) string {
	if m.CI95 == nil {
		return ""
	}
	return fmt.Sprintf("[%.0f–%.0f%%]", m.CI95[0]*100, m.CI95[1]*100)
}

// fmtNum formats a mean: thousands separated and whole above 100, else
// with one or two decimals.
func fmtNum(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return groupThousands(fmt.Sprintf("%.0f", v))
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func fmtInt(v int64) string {
	return groupThousands(fmt.Sprintf("%d", v))
}

func groupThousands(s string) string {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func fmtUSD(v float64) string {
	if math.Abs(v) >= 1 {
		return fmt.Sprintf("$%.2f", v)
	}
	return fmt.Sprintf("$%.4f", v)
}

// passCount is "passed/valid" over a case's trials in one arm.
func passCount(ts []verdict.TrialOutcome) string {
	pass, valid := 0, 0
	for _, t := range ts {
		switch trialClass(t) {
		case "pass":
			pass++
			valid++
		case "fail":
			valid++
		}
	}
	if valid == 0 {
		// Not 0/0: nothing was measured here.
		return "no valid trial"
	}
	return fmt.Sprintf("%d/%d passed", pass, valid)
}

var metricLabels = map[string]string{
	"taskSuccess":        "task success",
	"openedSkill":        "opened skill",
	"routerDeclared":     "router declared",
	"skillPrecision":     "skill precision",
	"skillRecall":        "skill recall",
	"referencePrecision": "reference precision",
	"referenceRecall":    "reference recall",
	"invalidRun":         "invalid runs",
	"prohibitedOutcome":  "prohibited outcome",
	"noChange":           "no-change controls",
}

func metricLabel(name string) string {
	if l, ok := metricLabels[name]; ok {
		return l
	}
	return name
}

// notApplicable stands for skill precision and recall in a suite whose
// cases name no skill to load (a gstack suite): with nothing expected,
// every skill the agent opens would count against precision.
const notApplicable = "n/a (no case expects a skill)"

// noRoutingExpected reports whether no case of the report expects a skill:
// skill recall's denominator (the expected skills) is 0 in every arm that
// has it, which the verdict records as 1 with no standard error and no
// interval.
func noRoutingExpected(r *verdict.Report) bool {
	seen := false
	for _, a := range r.Arms {
		m, ok := a.Metrics[verdict.MetricSkillRecall]
		if !ok {
			continue
		}
		if m.Value != 1 || m.StdErr != nil || m.CI95 != nil {
			return false
		}
		seen = true
	}
	return seen
}

// rateMetricOrder fixes the order of the rate metrics shown first.
var rateMetricOrder = []string{
	"taskSuccess", "openedSkill", "routerDeclared", "skillPrecision", "skillRecall",
	"referencePrecision", "referenceRecall", "prohibitedOutcome", "invalidRun",
}

// rateMetrics lists the rate metrics any arm has: the known ones in a fixed
// order, then every other metric with an interval (or a passAtK), sorted.
func rateMetrics(r *verdict.Report) []string {
	isRate := map[string]bool{}
	for _, a := range r.Arms {
		for k, m := range a.Metrics {
			if m.CI95 != nil || strings.HasPrefix(k, "passAtK.") {
				isRate[k] = true
			}
		}
	}
	var out []string
	for _, k := range rateMetricOrder {
		for _, a := range r.Arms {
			if _, ok := a.Metrics[k]; ok {
				out = append(out, k)
				delete(isRate, k)
				break
			}
		}
	}
	var rest []string
	for k := range isRate {
		rest = append(rest, k)
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// pairGroup is the pairwise judgements of one candidate against one
// baseline, by case in authored order, by trial.
type pairGroup struct {
	candidate, baseline string
	rows                []pairRow
}

type pairRow struct {
	caseID  string
	results []grade.PairwiseResult
}

func pairGroups(r *verdict.Report) []pairGroup {
	caseOrder := map[string]int{}
	for i, c := range r.Cases {
		caseOrder[c.ID] = i
	}
	var groups []pairGroup
	index := map[[2]string]int{}
	for _, p := range r.Pairwise {
		k := [2]string{p.Candidate, p.Baseline}
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, pairGroup{candidate: p.Candidate, baseline: p.Baseline})
		}
		g := &groups[i]
		j := -1
		for n := range g.rows {
			if g.rows[n].caseID == p.Case {
				j = n
			}
		}
		if j < 0 {
			g.rows = append(g.rows, pairRow{caseID: p.Case})
			j = len(g.rows) - 1
		}
		g.rows[j].results = append(g.rows[j].results, p)
	}
	for gi := range groups {
		rows := groups[gi].rows
		sort.SliceStable(rows, func(a, b int) bool {
			oa, aok := caseOrder[rows[a].caseID]
			ob, bok := caseOrder[rows[b].caseID]
			if aok != bok {
				return aok
			}
			if !aok {
				return rows[a].caseID < rows[b].caseID
			}
			return oa < ob
		})
		for _, row := range rows {
			sort.SliceStable(row.results, func(a, b int) bool { return row.results[a].Trial < row.results[b].Trial })
		}
	}
	return groups
}

// pairSymbol is W, T or L, with "≠" when the two presentation orders
// disagreed.
func pairSymbol(p grade.PairwiseResult) string {
	s := "T"
	switch p.Outcome {
	case grade.PairwiseWin:
		s = "W"
	case grade.PairwiseLoss:
		s = "L"
	}
	if pairDisagrees(p) {
		s += "≠"
	}
	return s
}

func pairDisagrees(p grade.PairwiseResult) bool {
	for _, o := range p.Orders {
		if o != p.Orders[0] {
			return true
		}
	}
	return false
}

func pairTitle(p grade.PairwiseResult) string {
	s := fmt.Sprintf("trial %d: %s for %s against %s", p.Trial, p.Outcome, p.Candidate, p.Baseline)
	if len(p.Orders) > 0 {
		s += " (by presentation order: " + strings.Join(p.Orders, ", ") + ")"
	}
	return s
}
