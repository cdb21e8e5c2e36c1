package report

// chrisbanes/skills' scorecard.md: its figures computed from the records,
// its gates the verdict's outcomes of the advisory rules.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// chrisbanesScore is their Scorecard: rates are nil where nothing applies.
type chrisbanesScore struct {
	outcome, negative                map[string]*float64
	uplift, retention                *float64
	precision, recall, routerReports *float64
	forbidden                        int
	gates                            []chrisbanesGate
}

type chrisbanesGate struct {
	name   string
	passed bool
}

func cbRate(records []map[string]any) *float64 {
	if len(records) == 0 {
		return nil
	}
	n := 0
	for _, rec := range records {
		if rec["outcome_pass"] == true {
			n++
		}
	}
	v := float64(n) / float64(len(records))
	return &v
}

func cbOfArm(records []map[string]any, arm string) []map[string]any {
	var out []map[string]any
	for _, rec := range records {
		if rec["arm"] == arm {
			out = append(out, rec)
		}
	}
	return out
}

func cbOfKind(records []map[string]any, negative bool) []map[string]any {
	var out []map[string]any
	for _, rec := range records {
		if (rec["kind"] == chrisbanesNegative) == negative {
			out = append(out, rec)
		}
	}
	return out
}

// chrisbanesScorecard computes their scorecard's figures from records; its
// gates are the verdict's outcomes of the advisory rules (see
// chrisbanesGates).
func chrisbanesScorecard(records []map[string]any, rules []verdict.RuleOutcome) chrisbanesScore {
	s := chrisbanesScore{outcome: map[string]*float64{}, negative: map[string]*float64{}}
	positive, negative := cbOfKind(records, false), cbOfKind(records, true)
	for _, a := range chrisbanesArms {
		s.outcome[a] = cbRate(cbOfArm(positive, a))
		s.negative[a] = cbRate(cbOfArm(negative, a))
	}
	none, forced, auto := s.outcome["none"], s.outcome["forced"], s.outcome["automatic"]
	if forced != nil && none != nil {
		u := *forced - *none
		s.uplift = &u
		if u > 0 && auto != nil {
			v := (*auto - *none) / u
			s.retention = &v
		}
	}
	automatic := cbOfArm(records, "automatic")
	if len(automatic) > 0 {
		var ptp, fp, rtp, fn, router int
		for _, rec := range automatic {
			expected, allowed, reported := cbSet(rec["expected_skills"]), cbSet(rec["allowed_skills"]), cbSet(rec["reported_skills"])
			for k := range expected {
				allowed[k] = true
			}
			for k := range reported {
				if allowed[k] {
					ptp++
				} else {
					fp++
				}
			}
			for k := range expected {
				if reported[k] {
					rtp++
				} else {
					fn++
				}
			}
			if rec["reported_router"] == true {
				router++
			}
		}
		prec, rec, rr := 1.0, 1.0, float64(router)/float64(len(automatic))
		if ptp+fp > 0 {
			prec = float64(ptp) / float64(ptp+fp)
		}
		if rtp+fn > 0 {
			rec = float64(rtp) / float64(rtp+fn)
		}
		s.precision, s.recall, s.routerReports = &prec, &rec, &rr
	}
	for _, rec := range records {
		if rec["forbidden_action_failure"] == true {
			s.forbidden++
		}
	}
	s.gates = chrisbanesGates(rules)
	return s
}

// chrisbanesGates are their scorecard's gates, each the verdict's outcome
// of the advisory rule that decides it: a gate passes only when its rule
// was evaluated and met (a rule the policy lacks, or could not measure, is
// not met); routing's precision and recall are the one routing rule's two
// reasons.
func chrisbanesGates(rules []verdict.RuleOutcome) []chrisbanesGate {
	met := func(rule, other string) bool {
		for _, o := range rules {
			if o.Rule != rule {
				continue
			}
			if o.NotMeasured != "" {
				return false
			}
			for _, why := range o.Reasons {
				if other == "" || !strings.HasPrefix(why, other+" ") {
					return false
				}
			}
			return true
		}
		return false
	}
	return []chrisbanesGate{
		{"forced_uplift", met("uplift", "")},
		{"automatic_retention", met("retention", "")},
		{"routing_precision", met("routing", "ROUTING-RECALL")},
		{"routing_recall", met("routing", "ROUTING-PRECISION")},
		{"negative_controls", met("restraint", "")},
		{"forbidden_actions", met("forbidden", "")},
	}
}

func cbPercent(v *float64) string {
	if v == nil {
		return "not met"
	}
	return fmt.Sprintf("%.1f%%", *v*100)
}

// ChrisbanesScorecard renders their scorecard.md for records, with the
// gates rules decided.
func ChrisbanesScorecard(p *plan.Plan, records []map[string]any, rules []verdict.RuleOutcome) string {
	s := chrisbanesScorecard(records, rules)
	var in, out, retries, failures, tools int
	var elapsed float64
	for _, rec := range records {
		for _, role := range []string{"subject", "judge"} {
			m, _ := rec[role].(map[string]any)
			u, _ := m["usage"].(map[string]any)
			in += cbInt(u["input_tokens"])
			out += cbInt(u["output_tokens"])
			elapsed += cbFloat(m["elapsed_seconds"])
			retries += cbInt(m["retries"])
			if cbInt(m["returncode"]) != 0 {
				failures++
			}
			evs, _ := m["events"].([]any)
			for _, e := range evs {
				em, _ := e.(map[string]any)
				item, _ := em["item"].(map[string]any)
				if em["type"] == "item.completed" && slices.Contains([]any{"command_execution", "mcp_tool_call", "tool_call"}, item["type"]) {
					tools++
				}
			}
		}
	}
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("# Advisory %s Skill Scorecard", p.Suite.Name)
	line("")
	line("> This experiment is not a merge or release gate.")
	line("")
	line("## Outcome pass rates")
	line("")
	line("| Arm | Positive cases | Negative controls |")
	line("| --- | ---: | ---: |")
	for _, a := range chrisbanesArms {
		line("| %s | %s | %s |", a, cbPercent(s.outcome[a]), cbPercent(s.negative[a]))
	}
	skills := map[string]bool{}
	for _, rec := range records {
		for k := range cbSet(rec["target_skills"]) {
			skills[k] = true
		}
	}
	if len(skills) > 0 {
		line("")
		line("## Per-skill diagnostics")
		line("")
		line("| Skill | Positive records per arm | Baseline | Forced | Automatic | Uplift | Forced restraint | Automatic restraint |")
		line("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
		for _, skill := range slices.Sorted(cbKeys(skills)) {
			var mine []map[string]any
			for _, rec := range records {
				if cbSet(rec["target_skills"])[skill] {
					mine = append(mine, rec)
				}
			}
			pos, neg := cbOfKind(mine, false), cbOfKind(mine, true)
			base, forced, auto := cbRate(cbOfArm(pos, "none")), cbRate(cbOfArm(pos, "forced")), cbRate(cbOfArm(pos, "automatic"))
			var uplift *float64
			if forced != nil && base != nil {
				u := *forced - *base
				uplift = &u
			}
			line("| `%s` | %d | %s | %s | %s | %s | %s | %s |", skill, len(cbOfArm(pos, "none")), cbPercent(base), cbPercent(forced), cbPercent(auto), cbPercent(uplift),
				cbPercent(cbRate(cbOfArm(neg, "forced"))), cbPercent(cbRate(cbOfArm(neg, "automatic"))))
		}
	}
	line("")
	line("## Effect and routing")
	line("")
	line("- Forced uplift: %s", cbPercent(s.uplift))
	line("- Automatic retention: %s", cbPercent(s.retention))
	line("- Reported automatic routing precision: %s", cbPercent(s.precision))
	line("- Reported automatic routing recall: %s", cbPercent(s.recall))
	line("- Router reported in automatic arm: %s", cbPercent(s.routerReports))
	line("- Forbidden-action failures: %d", s.forbidden)
	line("")
	line("## Diagnostics (non-gating)")
	line("")
	line("- Input tokens: %d", in)
	line("- Output tokens: %d", out)
	line("- Tool events: %d", tools)
	line("- Elapsed time: %.1fs", elapsed)
	line("- Process failures: %d", failures)
	line("- Retries: %d", retries)
	line("")
	line("## Gates")
	line("")
	for _, g := range s.gates {
		v := "NOT MET"
		if g.passed {
			v = "PASS"
		}
		line("- %s: %s", g.name, v)
	}
	return b.String()
}

func cbInt(v any) int {
	switch x := v.(type) {
	case int:
		return x
	case int64:
		return int(x)
	}
	return 0
}

func cbFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int:
		return float64(x)
	}
	return 0
}
