package agent

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
)

// ApplyReport reads a session's final answer as the structured report its agent was
// asked for (agent.report): a JSON object whose answerField is the final answer and
// whose skillsField lists the skills the agent says it used. The answer becomes the
// answer field's text, and each skill named a routing event of evidence "reported"
// (an event the transcript shows with stronger evidence keeps that). An answer that is
// not such an object is left as it was, and Telemetry.ReportError says why.
func ApplyReport(s Session, answerField, skillsField string) Session {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(strings.TrimSpace(s.Answer)), &obj); err != nil || obj == nil {
		s.Telemetry.ReportError = "the final answer is not a JSON object"
		return s
	}
	var answer string
	if err := json.Unmarshal(obj[answerField], &answer); err != nil || obj[answerField] == nil {
		s.Telemetry.ReportError = fmt.Sprintf("the final answer has no text field %q", answerField)
		return s
	}
	var skills []string
	if err := json.Unmarshal(obj[skillsField], &skills); err != nil || obj[skillsField] == nil {
		s.Telemetry.ReportError = fmt.Sprintf("the final answer has no list of skill names %q", skillsField)
		return s
	}
	s.Answer = answer
	// Each turn's structured answer reads as its text, as the final one does.
	for i, m := range s.Messages {
		var turn map[string]json.RawMessage
		var text string
		if json.Unmarshal([]byte(strings.TrimSpace(m)), &turn) == nil && json.Unmarshal(turn[answerField], &text) == nil && turn[answerField] != nil {
			s.Messages[i] = text
		}
	}
	r := newRouting()
	for _, e := range s.Telemetry.Skills {
		r.skill(e.Name, e.Evidence)
	}
	for _, name := range skills {
		if n := CanonicalSkill(name); n != "" {
			r.skill(n, grade.EvidenceReported)
		}
	}
	refs := s.Telemetry.References
	tel := r.telemetry()
	s.Telemetry.Skills, s.Telemetry.References = tel.Skills, refs
	return s
}

// CanonicalSkill is the installed name a reported skill identifier stands for: a
// plugin-qualified "plugin:skill" is the skill "skill" (a suite's skill names hold no
// colon), and the invocation forms "$skill" and "/skill" are the skill too.
func CanonicalSkill(id string) string {
	id = strings.TrimSpace(id)
	if i := strings.LastIndex(id, ":"); i >= 0 {
		id = id[i+1:]
	}
	return strings.TrimLeft(id, "$/")
}
