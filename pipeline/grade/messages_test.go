package grade

import (
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// TestMessagesAll: an answer or code check with messages "all" reads every assistant
// message of the session, the last (default) only the final answer: a positive
// condition holds when one message meets it, a negative one only when none does.
func TestMessagesAll(t *testing.T) {
	str := func(s string) *string { return &s }
	pc := plan.PlanCase{Case: suite.Case{ID: "c", Assert: []suite.Assertion{
		{Name: "asked", Answer: &suite.TextCheck{Contains: str("Which colour")}, Messages: MessagesAll},
		{Name: "asked last", Answer: &suite.TextCheck{Contains: str("Which colour")}},
		{Name: "never rude", Answer: &suite.TextCheck{NotContains: str("idiot")}, Messages: MessagesAll},
		{Name: "no rm", Code: &suite.TextCheck{NotContains: str("rm -rf")}, Messages: MessagesAll},
		{Name: "no rm last", Code: &suite.TextCheck{NotContains: str("rm -rf")}},
	}}}
	in := GradeInput{Status: StatusCompleted, Answer: "Painted it.",
		Messages: []string{"Which colour, idiot?", "Run:\n```sh\nrm -rf /\n```", "Painted it."}}
	r, err := GradeCell(&plan.Plan{}, pc, plan.Cell{ID: "c/none/1"}, in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"asked": true, "asked last": false, "never rude": false, "no rm": false, "no rm last": true}
	for _, ch := range r.Checks {
		name, _, _ := strings.Cut(ch.Name, ":")
		if w, ok := want[name]; !ok || ch.Passed != w {
			t.Errorf("%s: passed %v, want %v", ch.Name, ch.Passed, w)
		}
		delete(want, name)
	}
	if len(want) != 0 {
		t.Errorf("checks missing: %v", want)
	}
	// Without messages (a transcript that told none apart), "all" reads the answer.
	in.Messages = nil
	if r, _ := GradeCell(&plan.Plan{}, pc, plan.Cell{ID: "c/none/1"}, in); r.Checks[0].Passed || !r.Checks[2].Passed {
		t.Errorf("no messages: %+v", r.Checks)
	}
}
