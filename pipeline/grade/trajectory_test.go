package grade

import (
	"testing"

	"github.com/skillgate/skillgate/pipeline/suite"
)

func ptr[T any](v T) *T { return &v }

// TestTrajectoryChecks: each trajectory check passes or fails on the calls
// of a session, and carries the session's evidence level.
func TestTrajectoryChecks(t *testing.T) {
	ok, fail := 0, 1
	calls := []ToolCall{
		{Tool: "Skill", Input: "gradle-run"},
		{Tool: "Bash", Input: "python3 'gradle_run.py' create", Command: "python3 'gradle_run.py' create", ExitCode: &ok},
		{Tool: "Bash", Input: "./gradlew test --offline && ./gradlew build", Command: "./gradlew test --offline && ./gradlew build", ExitCode: &fail},
		{Tool: "Read", Input: "/workspace/build.gradle.kts"},
	}
	for _, tc := range []struct {
		name string
		a    suite.Assertion
		want bool
	}{
		{"matches", suite.Assertion{Commands: &suite.CommandCheck{Matches: ptr(`gradle_run\.py create`)}}, true},
		{"matches unquoted only", suite.Assertion{Commands: &suite.CommandCheck{Matches: ptr(`python3 gradle_run`)}}, true},
		{"matches none", suite.Assertion{Commands: &suite.CommandCheck{Matches: ptr(`curl`)}}, false},
		{"matches succeeded", suite.Assertion{Commands: &suite.CommandCheck{Matches: ptr(`gradlew build`), Succeeded: true}}, false},
		{"notMatches", suite.Assertion{Commands: &suite.CommandCheck{NotMatches: ptr(`gradlew`)}}, false},
		{"notMatches clean", suite.Assertion{Commands: &suite.CommandCheck{NotMatches: ptr(`rm -rf`)}}, true},
		{"unless: one part online", suite.Assertion{Commands: &suite.CommandCheck{NotMatches: ptr(`gradlew`), Unless: ptr(`--offline`)}}, false},
		{"none", suite.Assertion{Commands: &suite.CommandCheck{None: true}}, false},
		{"tool", suite.Assertion{Tool: &suite.ToolCheck{Name: "Skill", Called: true}}, true},
		{"tool args", suite.Assertion{Tool: &suite.ToolCheck{Name: "Read", Args: &suite.ArgsCheck{Matches: ptr(`\.kts$`)}, Called: true}}, true},
		{"tool name whole", suite.Assertion{Tool: &suite.ToolCheck{Name: "Bas", Called: true}}, false},
		{"tool name pattern", suite.Assertion{Tool: &suite.ToolCheck{Name: "mcp__.*|WebFetch", Called: false}}, true},
		{"tool not called", suite.Assertion{Tool: &suite.ToolCheck{Name: "Read", Called: false}}, false},
		{"sequence", suite.Assertion{Sequence: []suite.Step{{Tool: "Skill"}, {Command: "gradlew"}, {Tool: "Read"}}}, true},
		{"sequence out of order", suite.Assertion{Sequence: []suite.Step{{Command: "gradlew"}, {Tool: "Skill"}}}, false},
	} {
		ch := trajectoryChecks(tc.a, Trajectory{Calls: calls, Evidence: EvidenceObserved})
		if ch.Passed != tc.want || ch.Evidence != EvidenceObserved || ch.Kind != CheckTrajectory {
			t.Errorf("%s: %+v, want passed %v, observed", tc.name, ch, tc.want)
		}
		if !ch.Passed && ch.Detail == "" {
			t.Errorf("%s: a failed check says nothing", tc.name)
		}
	}
	none := trajectoryChecks(suite.Assertion{Commands: &suite.CommandCheck{None: true}}, Trajectory{Calls: []ToolCall{{Tool: "Read", Input: "x"}}, Evidence: EvidenceReported})
	if !none.Passed || none.Evidence != EvidenceReported || !none.Negative {
		t.Errorf("none with no command: %+v", none)
	}
	// A session whose transcript tells nothing proves nothing either way.
	for _, a := range []suite.Assertion{
		{Commands: &suite.CommandCheck{None: true}},
		{Tool: &suite.ToolCheck{Name: "Bash", Called: false}},
	} {
		ch := trajectoryChecks(a, Trajectory{Evidence: EvidenceUnobservable})
		if ch.Passed || ch.Evidence != EvidenceUnobservable {
			t.Errorf("unobservable %s: %+v, want failed and unobservable", ch.Name, ch)
		}
	}
}
