package report

// The text helpers of report.md: escaping, code spans, and the short phrases
// (a failed trial, a finding's reason, what was observed) its sections share.

import (
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

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
