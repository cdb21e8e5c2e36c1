package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// TestClaudeCodeRepliesAndReport runs the real Claude Code CLI on the scripted model
// through a case with a scripted user reply (testdata/agents/turns). The second turn
// resumes the first one's session by its ID: the model answers "Painted it cobalt."
// only when its request holds the user's reply and the first turn's question, which
// only the resumed session can hold. Each turn's final answer is the structured report
// the suite asks for (--json-schema); the last one's skills_used is reported routing,
// "fences:s" canonicalized to s; the router is declared, counted in routerDeclared and
// in neither precision nor recall; a routing rule that asks for inferred evidence no
// longer counts the reported skill. The forced arm installs the case's target beside
// the router and names only the target.
func TestClaudeCodeRepliesAndReport(t *testing.T) {
	e := dockertest.Engine(t)
	s := copyAgentSuite(t, e, "turns")
	out := t.TempDir()
	var log bytes.Buffer
	sum, rep, err := Evaluate(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 2, Log: &log})
	if err != nil {
		t.Fatalf("evaluate: %v\n%s", err, log.String())
	}
	if !sum.Complete() || sum.Statuses[store.StatusCompleted] != len(s.Plan.Cells) {
		t.Fatalf("summary %+v\n%s", sum, log.String())
	}
	st := &store.Store{Dir: out}
	results := map[string]*grade.CellResult{}
	for _, c := range s.Plan.Cells {
		ro, ok, err := st.Rollout(c.Rollout)
		if err != nil || !ok {
			t.Fatalf("%s: rollout: %v", c.ID, err)
		}
		stdout, _ := os.ReadFile(filepath.Join(st.RolloutDir(c.Rollout), store.FileStdout))
		r, ok, err := st.Grade(c.Grade)
		if err != nil || !ok {
			t.Fatalf("%s: grade: %v", c.ID, err)
		}
		results[c.Arm] = r
		// Both invocations ran in one session, the one the cell named.
		if n := strings.Count(string(stdout), `"session_id":"`+SessionID(c.Rollout)+`"`); n < 4 || strings.Count(string(stdout), `"type":"result"`) != 2 {
			t.Errorf("%s: %d events of session %s, want both turns' in it\n%s", c.ID, n, SessionID(c.Rollout), stdout)
		}
		if ro.Answer != "Painted it cobalt." || !r.Passed {
			t.Errorf("%s: answer %q, passed %v, checks %+v\n%s", c.ID, ro.Answer, r.Passed, r.Checks, stdout)
		}
		if want := []string{"Which colour do you want? (asked-7f3)", "Painted it cobalt."}; !reflect.DeepEqual(ro.Messages, want) {
			t.Errorf("%s: messages %q, want %q", c.ID, ro.Messages, want)
		}
		if ro.Gateway == nil || ro.Gateway.Requests != 2 {
			t.Errorf("%s: gateway %+v, want one model request a turn", c.ID, ro.Gateway)
		}
	}

	forced := results["forced"]
	if want := []grade.RoutingEvent{{Name: "r", Evidence: grade.EvidenceReported}, {Name: "s", Evidence: grade.EvidenceReported}}; !reflect.DeepEqual(forced.Telemetry.Skills, want) {
		t.Errorf("forced: skills %v, want %v", forced.Telemetry.Skills, want)
	}
	if sk := forced.Routing.Skills; sk.TP != 1 || sk.FP != 0 || sk.FN != 0 || !sk.Router || sk.Evidence != grade.EvidenceReported {
		t.Errorf("forced: routing %+v, want s a reported TP and the router seen", sk)
	}
	if none := results["none"]; len(none.Telemetry.Skills) != 0 || none.Routing.Skills.FN != 1 {
		t.Errorf("none: skills %v, routing %+v", none.Telemetry.Skills, none.Routing.Skills)
	}
	arms := map[string]verdict.ArmReport{}
	for _, a := range rep.Arms {
		arms[a.Name] = a
	}
	if m, ok := arms["forced"].Metrics[verdict.MetricRouterDeclared]; !ok || m.Value != 1 || m.Samples != 1 {
		t.Errorf("forced: routerDeclared %+v (present %v), want 1 of 1", m, ok)
	}
	if _, ok := arms["none"].Metrics[verdict.MetricRouterDeclared]; ok {
		t.Errorf("none: routerDeclared given for an arm without the router")
	}
	if got := arms["forced"].Installed; len(got) != 2 {
		t.Errorf("forced: installed %v, want the router and the target", got)
	}
	pc, arm := s.Plan.Cases[0], plan.CaseArm(s.Plan, s.Plan.Cases[0], s.Plan.Arms[1])
	if got := plan.Prompt(s.Plan, pc, arm); !strings.HasPrefix(got, "Use the s skill ") || !reflect.DeepEqual(arm.Skills, []string{"r", "s"}) {
		t.Errorf("forced: prompt %q, skills %v, want s named and r, s installed", got, arm.Skills)
	}

	// The same cells under a routing rule on the forced arm: reported evidence counts
	// by default; asking for inferred evidence, the reported skill is not seen.
	var cells []grade.CellResult
	for _, c := range s.Plan.Cells {
		r, _, _ := st.Grade(c.Grade)
		cells = append(cells, *r)
	}
	for _, tc := range []struct {
		evidence string
		passed   bool
	}{{grade.EvidenceReported, true}, {grade.EvidenceInferred, false}, {grade.EvidenceObserved, false}} {
		p := *s.Plan
		pol := p.Policy
		rule := *pol.Routing
		rule.Arm, rule.MinEvidence = "forced", tc.evidence
		pol.Routing = &rule
		p.Policy = pol
		var o *verdict.RuleOutcome
		for i, r := range verdict.BuildReport(&p, cells).Verdict.Rules {
			if r.Rule == "routing" {
				o = &verdict.BuildReport(&p, cells).Verdict.Rules[i]
			}
		}
		if o == nil || o.Met != tc.passed {
			t.Errorf("routing at %s evidence: %+v, want met %v", tc.evidence, o, tc.passed)
		}
	}
}
