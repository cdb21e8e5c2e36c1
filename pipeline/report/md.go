package report

import (
	"fmt"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// mdWriter accumulates report.md; p writes a formatted piece.
type mdWriter struct{ strings.Builder }

func (w *mdWriter) p(format string, args ...any) { fmt.Fprintf(&w.Builder, format, args...) }

// renderReportMD renders report.md: a summary that fits a GitHub CI step
// summary (verdict, reasons, arms, the case × arm grid, the policy).
func renderReportMD(r *verdict.Report) ([]byte, error) {
	w := &mdWriter{}
	mdHeader(w, r)
	mdFindings(w, r)
	mdSequential(w, r)
	mdReuseSentinels(w, r)
	mdArms(w, r)
	arms := reportArmNames(r)
	mdCases(w, r, arms)
	mdCellCosts(w, r, arms)
	mdFailedTrials(w, r, arms)
	mdPairwise(w, r)
	mdDisputed(w, r)
	mdPolicy(w, r)
	w.WriteString(adequacyMarkdown(r.Verdict.Adequacy))
	w.WriteString(portabilityMarkdown(r.Portability))
	mdNoiseFloor(w, r)
	return []byte(w.String()), nil
}

// mdHeader writes the title, the verdict, a stand-in warning, and the run's identity.
func mdHeader(w *mdWriter, r *verdict.Report) {
	p := w.p
	p("## skillgate · %s\n\n", mdText(r.Suite))
	p("**Verdict: %s** (exit %d)\n\n", mdText(r.Verdict.Verdict), r.Verdict.ExitCode)
	if r.StandIn != "" {
		p("> [!WARNING]\n> **Stand-in run:** %s. These results come from a scripted stand-in, not a real model: they exercise the pipeline, not the skill.\n\n", mdText(r.StandIn))
	}

	id := []string{"policy " + mdCode(r.Policy), fmt.Sprintf("%d trials", r.Trials), "plan " + mdCode(shortDigest(r.Plan))}
	agent := "agent " + mdCode(r.Agent.Kind)
	if r.Agent.Model != "" {
		agent += " " + mdCode(r.Agent.Model)
	}
	if r.Agent.Image != "" {
		agent += " on " + mdCode(r.Agent.Image)
	}
	id = append(id, agent)
	if r.Judge != nil {
		j := "judge " + mdCode(r.Judge.Provider)
		if r.Judge.Model != "" {
			j += " " + mdCode(r.Judge.Model)
		}
		id = append(id, j+" ("+mdText(r.Judge.Mode)+")")
	}
	p("%s\n\n", strings.Join(id, " · "))
	p("%s\n\n", strings.Join(observedLine(r, mdCode), " · "))
}

// mdFindings writes the verdict's reasons and warnings, each with the cells it names.
func mdFindings(w *mdWriter, r *verdict.Report) {
	p := w.p
	reasons, warnings := findingsView(r)
	for _, sec := range []struct {
		title string
		list  []htmlFinding
	}{{"Reasons", reasons}, {"Warnings", warnings}} {
		if len(sec.list) == 0 {
			continue
		}
		p("**%s**\n\n", sec.title)
		for _, f := range sec.list {
			line := "- " + mdReason(f)
			if f.Text != "" {
				line += ": " + mdText(f.Text)
			}
			if len(f.Cells) > 0 {
				ids := make([]string, len(f.Cells))
				for i, c := range f.Cells {
					ids[i] = mdSpan(c.ID)
				}
				line += " (" + strings.Join(ids, ", ")
				if f.More > 0 {
					line += fmt.Sprintf(" and %d more", f.More)
				}
				line += ")"
			}
			p("%s\n", line)
		}
		p("\n")
	}
	if len(reasons) > 0 {
		p("Open %s in the run folder for each cell's prompt, session, diff and checks.\n\n", mdCode(FileReportHTML))
	}
}

// mdSequential writes what sequential stopping saved, when the run used it.
func mdSequential(w *mdWriter, r *verdict.Report) {
	sq := r.Sequential
	if sq == nil {
		return
	}
	p := w.p
	p("**Sequential stopping** (α %g, %d trial(s) per round, %d rounds planned): %d of %d planned cells not needed, %d of them never ran.\n\n", sq.Alpha, sq.Round, sq.Rounds, len(sq.NotNeeded), sq.Planned, sq.Saved)
	for _, c := range sq.Comparisons {
		p("- %s %s: %s\n", mdCode(c.Rule), mdText(c.Decision), mdText(c.Why))
	}
	p("\n")
}

// mdReuseSentinels writes run --reuse's drift check, when the run folder
// took rollouts.
func mdReuseSentinels(w *mdWriter, r *verdict.Report) {
	if r.ReuseSentinels == nil || len(r.ReuseSentinels.Groups) == 0 {
		return
	}
	w.p("**Reuse drift sentinels** (reused cells run again, not counted in the results):\n\n")
	for _, l := range r.ReuseSentinels.Lines() {
		w.p("- %s\n", mdText(l))
	}
	w.p("\n")
}

// mdArms writes the arms table and the router's declaration rates.
func mdArms(w *mdWriter, r *verdict.Report) {
	p := w.p
	p("### Arms\n\n")
	p("| arm | skills | pass rate (95%% CI) | opened skill | skill precision / recall | tokens/run (in / out) | USD/run | turns/run | latency s/run (agent / cell) | skill bytes |\n")
	p("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	noRouting := noRoutingExpected(r)
	for _, a := range r.Arms {
		skills := "no skill"
		if len(a.Skills) > 0 {
			skills = mdText(strings.Join(a.Skills, ", "))
			if a.Activation != "" {
				skills += " (" + mdText(a.Activation) + ")"
			}
		}
		pass := absentMark
		if m, ok := a.Metrics["taskSuccess"]; ok {
			pass = fmtPct(m.Value)
			if ci := ciText(m); ci != "" {
				pass += " " + ci
			}
			pass += fmt.Sprintf(" n=%d", m.Samples)
		}
		opened := absentMark
		if m, ok := a.Metrics["openedSkill"]; ok {
			opened = fmt.Sprintf("%s n=%d", fmtPct(m.Value), m.Samples)
		}
		routing := rateOr(a.Metrics, "skillPrecision") + " / " + rateOr(a.Metrics, "skillRecall")
		if noRouting {
			routing = notApplicable
		}
		tokens := absentMark
		in, okIn := a.Cost["tokensInput"]
		out, okOut := a.Cost["tokensOutput"]
		if okIn || okOut {
			tokens = numOr(in, okIn) + " / " + numOr(out, okOut)
		}
		turns, okT := a.Cost["turns"]
		secs, okS := a.Cost["agentSeconds"]
		total, okTotal := a.Cost["totalSeconds"]
		usd := absentMark
		if m, ok := a.Cost["usd"]; ok {
			usd = fmtUSD(m.Value)
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s |\n",
			mdCode(a.Name), skills, pass, opened, routing, tokens, usd, numOr(turns, okT), numOr(secs, okS), numOr(total, okTotal), fmtInt(a.SkillBytes))
	}
	p("\n%s means not measured (no applicable sample), never zero.\n\n", absentMark)
	// The suite's router: how often each arm installing it declared or loaded it.
	var declared []string
	for _, a := range r.Arms {
		if m, ok := a.Metrics[verdict.MetricRouterDeclared]; ok {
			declared = append(declared, fmt.Sprintf("%s %s n=%d", mdCode(a.Name), fmtPct(m.Value), m.Samples))
		}
	}
	if len(declared) > 0 {
		p("%s: %s (a diagnostic, never gated).\n\n", metricLabels[verdict.MetricRouterDeclared], strings.Join(declared, ", "))
	}
}

// mdCases writes the case × arm grid.
func mdCases(w *mdWriter, r *verdict.Report, arms []string) {
	p := w.p
	p("### Cases\n\n")
	p("| case | split · kind |")
	for _, arm := range arms {
		p(" %s |", mdCode(arm))
	}
	p("\n| --- | --- |")
	for range arms {
		p(" :---: |")
	}
	p("\n")
	for _, c := range r.Cases {
		name := mdCode(c.ID)
		if c.Safety {
			name += " (safety)"
		}
		p("| %s | %s · %s |", name, mdText(c.Split), mdText(c.Kind))
		for _, arm := range arms {
			ts := c.Trials[arm]
			if len(ts) == 0 {
				p(" |")
				continue
			}
			var sym strings.Builder
			for _, t := range ts {
				sym.WriteString(trialSymbol(t))
			}
			p(" %s %s |", sym.String(), passCount(ts))
		}
		p("\n")
	}
	p("\n✓ passed · ✗ failed · – not run · ! invalid (neither pass nor fail); n/m passed counts passes over valid trials.\n\n")
}

// mdCellCosts writes what each cell cost, where prices made it known.
func mdCellCosts(w *mdWriter, r *verdict.Report, arms []string) {
	var costs []string
	for _, c := range r.Cases {
		for _, arm := range arms {
			for _, t := range c.Trials[arm] {
				if t.USD != nil {
					costs = append(costs, fmt.Sprintf("| %s | %s | %s |", mdCode(t.Cell), mdText(orAbsent(t.Model)), fmtUSD(*t.USD)))
				}
			}
		}
	}
	if len(costs) > 0 {
		w.p("<details><summary>Cost per cell (%d)</summary>\n\n| cell | model answering | USD |\n| --- | --- | --- |\n%s\n\n</details>\n\n", len(costs), strings.Join(costs, "\n"))
	}
}

// mdFailedTrials writes the failed checks, so a red cell can be read without the HTML report.
func mdFailedTrials(w *mdWriter, r *verdict.Report, arms []string) {
	var failed []string
	for _, c := range r.Cases {
		for _, arm := range arms {
			for _, t := range c.Trials[arm] {
				if trialClass(t) == "fail" {
					failed = append(failed, fmt.Sprintf("- %s %s trial %d: %s", mdSpan(c.ID), mdSpan(arm), t.Trial, mdFailure(t)))
				}
			}
		}
	}
	if len(failed) > 0 {
		w.p("<details><summary>Failed trials (%d)</summary>\n\n%s\n\n</details>\n\n", len(failed), strings.Join(failed, "\n"))
	}
}

// mdPairwise writes the pairwise judgements, one row per case and comparison.
func mdPairwise(w *mdWriter, r *verdict.Report) {
	groups := pairGroups(r)
	if len(groups) == 0 {
		return
	}
	p := w.p
	p("### Pairwise judgements\n\n")
	p("| case | candidate vs baseline | trials | wins / ties / losses |\n| --- | --- | --- | --- |\n")
	for _, g := range groups {
		for _, row := range g.rows {
			var syms []string
			win, tie, loss := 0, 0, 0
			for _, pr := range row.results {
				syms = append(syms, pairSymbol(pr))
				switch pr.Outcome {
				case grade.PairwiseWin:
					win++
				case grade.PairwiseLoss:
					loss++
				default:
					tie++
				}
			}
			p("| %s | %s vs %s | %s | %d / %d / %d |\n", mdCode(row.caseID), mdCode(g.candidate), mdCode(g.baseline), strings.Join(syms, " "), win, tie, loss)
		}
	}
	p("\nW win · T tie (a non-win) · L loss, for the candidate; ≠ the two presentation orders disagreed.\n\n")
}

// mdDisputed writes the disputed answers and what adjudication made of them.
func mdDisputed(w *mdWriter, r *verdict.Report) {
	a := r.Adjudication
	if a == nil || len(a.Disputed) == 0 {
		return
	}
	p := w.p
	p("### Disputed answers\n\n")
	if a.Enabled {
		p("Each went to a fresh blinded judge (%s), which saw the task and the answer, not the arm; its decision stands, and never passes a failed check.\n\n", mdText(strings.TrimSpace(a.Provider+" "+a.Model)))
	} else {
		p("Listed only: adjudication is off, so the first judgement stands.\n\n")
	}
	p("| cell | what disagreed | adjudicator | outcome |\n| --- | --- | --- | --- |\n")
	for _, d := range a.Disputed {
		decision := d.Decision
		if len(d.Failed) > 0 {
			decision += ": " + strings.Join(d.Failed, "; ")
		}
		p("| %s | %s | %s | %s |\n", mdCode(d.Cell), mdText(d.Disagreed), mdText(decision), map[bool]string{true: "passed", false: "failed"}[d.Passed])
	}
	p("\n")
}

// mdPolicy writes the policy table: each rule, its severity, whether it was met, and why.
func mdPolicy(w *mdWriter, r *verdict.Report) {
	if len(r.Verdict.Rules) == 0 {
		return
	}
	p := w.p
	p("### Policy %s\n\n", mdCode(r.Policy))
	p("| rule | severity | result | detail |\n| --- | --- | --- | --- |\n")
	for _, ro := range r.Verdict.Rules {
		p("| %s | %s | %s | %s |\n", mdCode(ro.Rule), mdText(ro.Severity), mdRuleResult(ro), mdRuleDetail(ro))
	}
	p("\n")
}

// mdRuleResult says whether a rule was met, and what not meeting it does.
func mdRuleResult(ro verdict.RuleOutcome) string {
	switch {
	case ro.NotMeasured != "":
		return "not measured: " + mdText(ro.NotMeasured)
	case !ro.Met && ro.Severity == verdict.SeverityFail:
		return "**not met**: fails the verdict"
	case !ro.Met:
		return "not met: a warning"
	}
	return "met"
}

// mdRuleDetail joins a rule's detail, reasons, inference, flags and warnings.
func mdRuleDetail(ro verdict.RuleOutcome) string {
	detail := mdText(ro.Detail)
	if ro.NotMeasured != "" && ro.Detail == "not measured: "+ro.NotMeasured {
		detail = ""
	}
	if len(ro.Reasons) > 0 {
		var rs []string
		for _, s := range ro.Reasons {
			rs = append(rs, mdCode(s))
		}
		detail = joinNonEmpty(detail, strings.Join(rs, ", "))
	}
	if ro.Inference != nil {
		detail = joinNonEmpty(detail, "paired inference: "+mdText(ro.Inference.String()))
	}
	if len(ro.Flags) > 0 {
		var fs []string
		for _, s := range ro.Flags {
			fs = append(fs, mdText(s))
		}
		detail = joinNonEmpty(detail, "flagged for review: "+strings.Join(fs, "; "))
	}
	if len(ro.Warnings) > 0 {
		var ws []string
		for _, s := range ro.Warnings {
			ws = append(ws, mdCode(s))
		}
		detail = joinNonEmpty(detail, "warnings: "+strings.Join(ws, ", "))
	}
	return detail
}

// mdNoiseFloor writes the noise floor's lines, when the suite measured one.
func mdNoiseFloor(w *mdWriter, r *verdict.Report) {
	nf := r.Verdict.NoiseFloor
	if nf == nil {
		return
	}
	w.p("### Noise floor\n\n")
	for _, line := range verdict.NoiseFloorLines(nf) {
		w.p("- %s\n", mdText(line))
	}
	w.p("\n")
}
