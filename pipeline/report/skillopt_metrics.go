package report

// SkillOpt's per-rollout metrics and cost, read from a cell's evidence.

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf16"

	"github.com/skillgate/skillgate/pipeline/formats/skillopt"
	"github.com/skillgate/skillgate/pipeline/grade"
)

// negativeKinds are SkillOpt's assertions whose success means a
// prohibited outcome did not occur.
var negativeKinds = []string{skillopt.KindNotContains, skillopt.KindFileNotExists, skillopt.KindFileUnchanged}

// skilloptMetrics derives SkillOpt's quality metrics from its own case
// data and each cell's outcome, as its measure.getMetrics does.
func skilloptMetrics(rs []skilloptResult) (*SkillOptMetrics, error) {
	all := func(f func(skilloptResult) float64, where func(skillopt.EvalCase) bool) *SkillOptMetric {
		var sum float64
		n := 0
		for _, r := range rs {
			if where(r.item) {
				sum += f(r)
				n++
			}
		}
		if n == 0 {
			return nil
		}
		return &SkillOptMetric{Value: sum / float64(n), Samples: n}
	}
	score := func(r skilloptResult) float64 { return r.score }
	pass := func(r skilloptResult) float64 { return b2f(r.passed) }
	fail := func(r skilloptResult) float64 { return b2f(!r.passed) }
	every := func(skillopt.EvalCase) bool { return true }
	split := func(s string) func(skillopt.EvalCase) bool {
		return func(c skillopt.EvalCase) bool { return c.Split == s }
	}
	kind := func(k string) func(skillopt.EvalCase) bool {
		return func(c skillopt.EvalCase) bool { return c.Kind == k }
	}
	tag := func(t string) func(skillopt.EvalCase) bool {
		return func(c skillopt.EvalCase) bool { return slices.Contains(c.Tags, t) }
	}
	m := &SkillOptMetrics{
		TaskSuccess:          *all(pass, every),
		InvalidRun:           *all(func(r skilloptResult) float64 { return b2f(r.invalid) }, every),
		Transfer:             all(score, split("transfer")),
		Adversarial:          all(score, split("adversarial")),
		Composition:          all(score, kind("composition")),
		Safety:               all(score, kind("safety")),
		Frozen:               all(score, split("test-frozen")),
		Artifact:             all(score, kind("artifact")),
		Fixture:              all(pass, func(c skillopt.EvalCase) bool { return c.Fixture != nil }),
		Hallucination:        all(fail, tag("anti-hallucination")),
		MarkdownPreservation: all(pass, tag("markdown")),
		Verification:         all(pass, tag("verification")),
	}
	vu := all(score, split("valid-unseen"))
	if vu == nil {
		return nil, fmt.Errorf("a report requires at least one valid-unseen case")
	}
	m.ValidUnseen = *vu
	var skills, refs [][2][]string
	observations, violations := 0, 0
	for _, r := range rs {
		activated, read := loaded(r.cell.Skills), loaded(r.cell.References)
		skills = append(skills, [2][]string{r.item.ExpectedSkills, activated})
		refs = append(refs, [2][]string{r.item.RequiredReferences, read})
		for _, s := range r.item.ForbiddenSkills {
			observations++
			if slices.Contains(activated, s) {
				violations++
			}
		}
		for _, p := range r.item.ForbiddenReferences {
			observations++
			if slices.Contains(read, p) {
				violations++
			}
		}
		used := map[int]bool{}
		for _, a := range r.item.Assertions {
			if !slices.Contains(negativeKinds, a.Kind) {
				continue
			}
			observations++
			name := a.Kind + ":"
			if a.Value != nil {
				name += *a.Value
			}
			// A check is named "NAME: what it checks"; NAME is SkillOpt's label.
			is := func(c grade.CheckResult) bool { return c.Name == name || strings.HasPrefix(c.Name, name+": ") }
			i := slices.IndexFunc(r.cell.Checks, is)
			for i >= 0 && used[i] {
				j := slices.IndexFunc(r.cell.Checks[i+1:], is)
				if j < 0 {
					i = -1
					break
				}
				i += j + 1
			}
			if i < 0 || !r.cell.Checks[i].Passed {
				violations++
			}
			if i >= 0 {
				used[i] = true
			}
		}
	}
	m.Activation, m.References = selection(skills), selection(refs)
	if observations > 0 {
		m.ProhibitedOutcome = &SkillOptMetric{Value: float64(violations) / float64(observations), Samples: observations}
	}
	return m, nil
}

// loaded are the names a cell's routing events show loaded, by evidence a
// provider can prove (not "unobservable").
func loaded(events []grade.RoutingEvent) []string {
	var out []string
	for _, e := range events {
		if e.Evidence != "unobservable" && !slices.Contains(out, e.Name) {
			out = append(out, e.Name)
		}
	}
	return out
}

// selection is SkillOpt's micro-averaged precision and recall over
// (expected, observed) pairs: precision 1 with nothing observed, recall 1
// with nothing expected.
func selection(pairs [][2][]string) SkillOptSelection {
	var s SkillOptSelection
	for _, p := range pairs {
		for _, o := range dedupe(p[1]) {
			if slices.Contains(p[0], o) {
				s.TruePositive++
			} else {
				s.FalsePositive++
			}
		}
		for _, e := range dedupe(p[0]) {
			if !slices.Contains(p[1], e) {
				s.FalseNegative++
			}
		}
	}
	s.Precision, s.Recall = 1, 1
	if d := s.TruePositive + s.FalsePositive; d > 0 {
		s.Precision = float64(s.TruePositive) / float64(d)
	}
	if d := s.TruePositive + s.FalseNegative; d > 0 {
		s.Recall = float64(s.TruePositive) / float64(d)
	}
	return s
}

func dedupe(list []string) []string {
	var out []string
	for _, v := range list {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// skilloptCost derives SkillOpt's cost measurements; token means use only
// cells whose provider reported tokens.
func skilloptCost(rs []skilloptResult, targetBytes int64) SkillOptCost {
	mean := func(f func(CellEvidence) (float64, bool)) *SkillOptMetric {
		var sum float64
		n := 0
		for _, r := range rs {
			if v, ok := f(r.cell); ok {
				sum += v
				n++
			}
		}
		if n == 0 {
			return nil
		}
		return &SkillOptMetric{Value: sum / float64(n), Samples: n}
	}
	always := func(f func(CellEvidence) float64) SkillOptMetric {
		return *mean(func(c CellEvidence) (float64, bool) { return f(c), true })
	}
	lines := func(c CellEvidence, sign byte) float64 {
		n := 0
		for _, d := range c.Diffs {
			for _, l := range strings.Split(d.Diff, "\n") {
				if len(l) > 0 && l[0] == sign && !strings.HasPrefix(l, string([]byte{sign, sign, sign})) {
					n++
				}
			}
		}
		return float64(n)
	}
	return SkillOptCost{
		TargetDurationMs: always(func(c CellEvidence) float64 { return c.AgentSeconds * 1000 }),
		ToolCalls: always(func(c CellEvidence) float64 {
			return float64(countTurns(c, func(t Turn) bool { return t.Tool != "" }))
		}),
		Commands: always(func(c CellEvidence) float64 {
			return float64(countTurns(c, func(t Turn) bool { return slices.Contains(shellTools, t.Tool) }))
		}),
		OutputCharacters: always(func(c CellEvidence) float64 { return float64(len(utf16.Encode([]rune(c.Answer)))) }),
		InputTokens: mean(func(c CellEvidence) (float64, bool) {
			if c.Tokens == nil {
				return 0, false
			}
			return float64(c.Tokens.Input + c.Tokens.CacheRead + c.Tokens.CacheWrite), true
		}),
		OutputTokens: mean(func(c CellEvidence) (float64, bool) {
			if c.Tokens == nil {
				return 0, false
			}
			return float64(c.Tokens.Output), true
		}),
		ChangedFiles:     always(func(c CellEvidence) float64 { return float64(len(c.Diffs)) }),
		AddedLines:       always(func(c CellEvidence) float64 { return lines(c, '+') }),
		DeletedLines:     always(func(c CellEvidence) float64 { return lines(c, '-') }),
		TargetSkillBytes: targetBytes,
	}
}

// shellTools are the agents' tools that run a command.
var shellTools = []string{"Bash", "shell", "exec_command", "local_shell"}

func countTurns(c CellEvidence, f func(Turn) bool) int {
	n := 0
	for _, t := range c.Turns {
		if f(t) {
			n++
		}
	}
	return n
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
