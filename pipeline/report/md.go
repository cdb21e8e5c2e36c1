package report

import (
	"fmt"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// renderReportMD renders report.md: a summary that fits a GitHub CI step
// summary (verdict, reasons, arms, the case × arm grid, the policy).
func renderReportMD(r *verdict.Report) ([]byte, error) {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

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

	if sq := r.Sequential; sq != nil {
		p("**Sequential stopping** (α %g, %d trial(s) per round, %d rounds planned): %d of %d planned cells not needed, %d of them never ran.\n\n", sq.Alpha, sq.Round, sq.Rounds, len(sq.NotNeeded), sq.Planned, sq.Saved)
		for _, c := range sq.Comparisons {
			p("- %s %s: %s\n", mdCode(c.Rule), mdText(c.Decision), mdText(c.Why))
		}
		p("\n")
	}

	// Arms.
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

	// Case × arm grid.
	arms := reportArmNames(r)
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

	// What each cell cost, where prices made it known.
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
		p("<details><summary>Cost per cell (%d)</summary>\n\n| cell | model answering | USD |\n| --- | --- | --- |\n%s\n\n</details>\n\n", len(costs), strings.Join(costs, "\n"))
	}

	// Failed checks, so a red cell can be read without the HTML report.
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
		p("<details><summary>Failed trials (%d)</summary>\n\n%s\n\n</details>\n\n", len(failed), strings.Join(failed, "\n"))
	}

	// Pairwise judgements.
	if groups := pairGroups(r); len(groups) > 0 {
		p("### Pairwise judgements\n\n")
		p("| case | candidate vs baseline | trials | wins / ties / losses |\n| --- | --- | --- | --- |\n")
		for _, g := range groups {
			for _, row := range g.rows {
				var syms []string
				w, ti, l := 0, 0, 0
				for _, pr := range row.results {
					syms = append(syms, pairSymbol(pr))
					switch pr.Outcome {
					case grade.PairwiseWin:
						w++
					case grade.PairwiseLoss:
						l++
					default:
						ti++
					}
				}
				p("| %s | %s vs %s | %s | %d / %d / %d |\n", mdCode(row.caseID), mdCode(g.candidate), mdCode(g.baseline), strings.Join(syms, " "), w, ti, l)
			}
		}
		p("\nW win · T tie (a non-win) · L loss, for the candidate; ≠ the two presentation orders disagreed.\n\n")
	}

	// Disputed answers.
	if a := r.Adjudication; a != nil && len(a.Disputed) > 0 {
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

	// Policy.
	if len(r.Verdict.Rules) > 0 {
		p("### Policy %s\n\n", mdCode(r.Policy))
		p("| rule | severity | result | detail |\n| --- | --- | --- | --- |\n")
		for _, ro := range r.Verdict.Rules {
			result := "met"
			switch {
			case ro.NotMeasured != "":
				result = "not measured: " + mdText(ro.NotMeasured)
			case !ro.Met && ro.Severity == verdict.SeverityFail:
				result = "**not met**: fails the verdict"
			case !ro.Met:
				result = "not met: a warning"
			}
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
			p("| %s | %s | %s | %s |\n", mdCode(ro.Rule), mdText(ro.Severity), result, detail)
		}
		p("\n")
	}
	b.WriteString(adequacyMarkdown(r.Verdict.Adequacy))
	b.WriteString(portabilityMarkdown(r.Portability))
	if nf := r.Verdict.NoiseFloor; nf != nil {
		p("### Noise floor\n\n")
		for _, line := range verdict.NoiseFloorLines(nf) {
			p("- %s\n", mdText(line))
		}
		p("\n")
	}
	return []byte(b.String()), nil
}

// mdFailure says why a trial failed with each failed check as a code span, so a check's
// pattern reads as it is named (quoted once, as in the grades), never escaped again.
func mdFailure(t verdict.TrialOutcome) string {
	checks := make([]string, len(t.Failed))
	for i, f := range t.Failed {
		checks[i] = mdSpan(f)
	}
	switch {
	case t.Status != grade.StatusCompleted && t.Status != "" && len(checks) > 0:
		return mdText(t.Status) + "; failed: " + strings.Join(checks, ", ")
	case t.Status != grade.StatusCompleted && t.Status != "":
		return mdText(t.Status)
	case len(checks) > 0:
		return "failed: " + strings.Join(checks, ", ")
	}
	return "failed"
}

// absentMark marks a metric with no applicable sample.
const absentMark = "—"

func rateOr(m map[string]verdict.Metric, key string) string {
	if v, ok := m[key]; ok {
		return fmtPct(v.Value)
	}
	return absentMark
}

func numOr(m verdict.Metric, ok bool) string {
	if !ok {
		return absentMark
	}
	return fmtNum(m.Value)
}

func joinNonEmpty(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return a + "<br>" + b
}

// mdText escapes text for a Markdown table cell or list item: no raw HTML,
// no table breaks, one line.
var mdEscaper = strings.NewReplacer(
	"\\", "\\\\", "|", "\\|", "<", "&lt;", ">", "&gt;", "&", "&amp;",
	"*", "\\*", "_", "\\_", "`", "\\`", "[", "\\[", "]", "\\]",
	"\r\n", " ", "\n", " ", "\r", " ",
)

func mdText(s string) string { return mdEscaper.Replace(s) }

// mdCode is s as a code span in a table cell, where "|" must be escaped (GitHub shows
// "\|" in a table's code span as "|").
func mdCode(s string) string { return mdSpan(strings.ReplaceAll(s, "|", "\\|")) }

// mdSpan is s as a code span outside a table: shown as it is, newlines aside.
func mdSpan(s string) string {
	if s == "" {
		return absentMark
	}
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// observedLine is the report's identity beyond the plan: the case set,
// the models that answered, the agent CLI versions, the git revisions and
// skillgate's version, each quoted by code.
func observedLine(r *verdict.Report, code func(string) string) []string {
	o := r.Observed
	out := []string{"case set " + code(shortDigest(r.CaseSet))}
	quote := func(xs []string) string {
		q := make([]string, len(xs))
		for i, x := range xs {
			q[i] = code(x)
		}
		return strings.Join(q, ", ")
	}
	if len(o.Models) > 0 {
		out = append(out, "answered by "+quote(o.Models))
	}
	if v := append(append([]string{}, o.AgentVersions...), o.CLIVersions...); len(v) > 0 {
		seen := map[string]bool{}
		var distinct []string
		for _, x := range v {
			if !seen[x] {
				seen[x] = true
				distinct = append(distinct, x)
			}
		}
		out = append(out, "agent CLI "+quote(distinct))
	}
	if len(o.Git) > 0 {
		var revs []string
		for _, g := range o.Git {
			rev := g.Revision
			if len(rev) > 12 {
				rev = rev[:12]
			}
			if g.Dirty {
				rev += " (dirty)"
			}
			revs = append(revs, rev)
		}
		git := "git " + quote(revs)
		if o.GitMixed {
			git += " (mixed)"
		}
		out = append(out, git)
	}
	h := r.Harness
	if h == "" {
		h = "unknown"
	}
	return append(out, "skillgate "+code(h))
}

// mdReason is a finding's reason, marked when it fails nothing.
func mdReason(f htmlFinding) string {
	if f.NotFailing {
		return mdSpan(f.Reason) + " (" + notFailing + ")"
	}
	return mdSpan(f.Reason)
}
