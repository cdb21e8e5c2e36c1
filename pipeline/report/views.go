package report

import (
	"encoding/json"
	"html/template"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/runfolder"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// cellHref is the link that opens a cell's view in report.html.
func cellHref(id string) string { return "#cell=" + urlFragment(id) }

// urlFragment escapes a value for a #key=value fragment.
func urlFragment(s string) string { return url.QueryEscape(s) }

// notFailing marks a reason of the verdict that fails nothing.
const notFailing = "does not fail the verdict"

// findingsView says each reason and warning of the verdict as a sentence, with links to
// the cells behind it, in rule order; a reason without a finding (incompleteness) stands
// as it is.
func findingsView(r *verdict.Report) (reasons, warnings []htmlFinding) {
	status := map[string]string{}
	for _, c := range r.Cases {
		for _, ts := range c.Trials {
			for _, t := range ts {
				status[t.Cell] = trialClass(t)
			}
		}
	}
	found := map[string]htmlFinding{}
	for _, ro := range r.Verdict.Rules {
		for _, f := range ro.Findings {
			hf := htmlFinding{Reason: f.Reason, Text: f.Text, Rule: ro.Rule}
			for i, id := range f.Cells {
				if i == findingCells {
					hf.More = len(f.Cells) - i
					break
				}
				hf.Cells = append(hf.Cells, htmlCellLink{ID: id, Class: status[id], Href: cellHref(id)})
			}
			found[f.Reason] = hf
		}
	}
	say := func(reason string) htmlFinding {
		if hf, ok := found[reason]; ok {
			return hf
		}
		return htmlFinding{Reason: reason, Text: incompleteText(reason)}
	}
	for _, reason := range r.Verdict.Reasons {
		f := say(reason)
		f.NotFailing = slices.Contains(r.Verdict.NotFailing, reason)
		reasons = append(reasons, f)
	}
	for _, w := range r.Verdict.Warnings {
		warnings = append(warnings, say(w))
	}
	return reasons, warnings
}

// incompleteText says an incompleteness reason for people.
func incompleteText(reason string) string {
	switch {
	case strings.HasPrefix(reason, "INCOMPLETE") && strings.Contains(reason, "not run"):
		return "Some cells have no result: the run was filtered, interrupted or stopped by the spend cap. Run it again into the same folder to finish it; stored cells do not run again."
	case strings.HasPrefix(reason, "INVALID"):
		return "Some cells are invalid: Docker, skillgate or the model's provider failed them, not the agent. They run again on the next run."
	case strings.HasPrefix(reason, "UNDERPOWERED"):
		return "This run's cases × trials could not have detected the rule's threshold with 80% power: its result may be noise either way. The rule's outcome stands; skillgate power says how many cases would tell."
	case strings.HasPrefix(reason, "NOT-MEASURED"):
		return "A rule could not be evaluated on this run's results (an arm with no valid cell); it neither passes nor fails until it can."
	case strings.HasPrefix(reason, "SHARD"):
		return "This run folder holds shares of the plan's cells (skillgate run --shard), not all of them; the other shares run into folders of their own. Merge every shard's run folder (skillgate merge OUT SHARD...) for the plan's verdict."
	case strings.HasPrefix(reason, "INCOMPLETE") && strings.Contains(reason, "not judged"):
		return "Some judgements are missing: " + strings.TrimPrefix(reason, "INCOMPLETE ") + "."
	}
	return ""
}

// metricTexts say what each metric measures, for the glossary.
var metricTexts = map[string]string{
	"taskSuccess":          "share of valid trials whose every check passed",
	"invalidRun":           "share of cells that Docker, skillgate or the provider failed (must be 0)",
	"validUnseen":          "mean score on held-out cases (split valid-unseen)",
	"transfer":             "mean score on cases of another domain (split transfer)",
	"adversarial":          "mean score on cases built to mislead (split adversarial)",
	"frozen":               "mean score on the frozen release cases (split test-frozen)",
	"composition":          "mean score on cases that combine skills (kind composition)",
	"safety":               "mean score on safety cases",
	"artifact":             "mean score on cases that produce an artifact",
	"noChange":             "pass rate of no-change controls: the agent leaves the workspace alone",
	"fixture":              "pass rate of cases with a fixture",
	"hallucination":        "failure rate of cases tagged anti-hallucination",
	"markdownPreservation": "pass rate of cases tagged markdown",
	"verification":         "pass rate of cases tagged verification",
	"prohibitedOutcome":    "share of authored negative expectations violated (forbidden skills and references, notContains, exists: false, unchanged)",
	"skillPrecision":       "of the suite's skills the agent loaded, the share a case required",
	"skillRecall":          "of the skills cases required, the share the agent loaded",
	"referencePrecision":   "of the skill references read, the share a case required",
	"referenceRecall":      "of the references cases required, the share read",
	"openedSkill":          "share of a skill arm's runs that opened one of the suite's skills",
	"routerDeclared":       "share of the runs of an arm installing the router skill whose routing shows the router (declared or loaded); a diagnostic",
}

// glossary lists every metric the report shows with what it measures and which way is
// better.
func glossary(r *verdict.Report) []htmlTerm {
	seen := map[string]bool{}
	var names []string
	for _, a := range r.Arms {
		for m := range a.Metrics {
			if !seen[m] {
				seen[m] = true
				names = append(names, m)
			}
		}
	}
	sort.Strings(names)
	var out []htmlTerm
	for _, m := range names {
		text := metricTexts[m]
		switch {
		case text != "":
		case strings.HasPrefix(m, "passAtK."):
			text = "weighted pass@k on split " + strings.TrimPrefix(m, "passAtK.") + ": the chance that one of k trials passes"
		case strings.HasPrefix(m, "passHatK."):
			text = "weighted pass^k on split " + strings.TrimPrefix(m, "passHatK.") + ": the chance that all of k trials pass"
		default:
			text = "mean score of cases in " + m
		}
		dir := "higher is better"
		if d, ok := verdict.MetricDirection(m); ok && d == verdict.DirectionLower {
			dir = "lower is better"
		} else if m == verdict.MetricRouterDeclared {
			dir = "neither: a diagnostic"
		}
		out = append(out, htmlTerm{Name: m, Label: metricLabel(m), Direction: dir, Text: text})
	}
	return out
}

// addEvidence embeds every cell's capped evidence, one JSON block per case (an array in
// arm and trial order). Without evidence a cell's entry holds its grade from the report,
// so every view opens.
func (v *htmlView) addEvidence(r *verdict.Report, ev *Evidence) error {
	for _, c := range r.Cases {
		var cells []CellEvidence
		for _, arm := range reportArmNames(r) {
			for _, t := range c.Trials[arm] {
				if t.Status == grade.StatusMissing {
					continue
				}
				var ce CellEvidence
				if ev != nil {
					ce = ev.Cells[t.Cell]
				}
				if ce.Cell == "" {
					ce = CellEvidence{Cell: t.Cell, Status: t.Status, Passed: t.Passed}
					for _, f := range t.Failed {
						ce.Checks = append(ce.Checks, grade.CheckResult{Name: f})
					}
					ce.Files = map[string]string{"transcript": rolloutHref(t, runfolder.FileStdout)}
				}
				ce.Cell, ce.Case, ce.Arm, ce.Trial = t.Cell, c.ID, arm, t.Trial
				cells = append(cells, ce.forPage())
			}
		}
		if len(cells) == 0 {
			continue
		}
		b, err := json.Marshal(cells)
		if err != nil {
			return err
		}
		v.Evidence = append(v.Evidence, htmlEvidence{Case: c.ID, JSON: template.JS(b)})
	}
	return nil
}
