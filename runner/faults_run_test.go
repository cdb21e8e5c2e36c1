package runner

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/gateway/standin"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// faultSuite writes a suite of cases one-trial cells whose command agent runs
// script, where ASK asks its model once through the gateway with wget; its
// provider is the stand-in up.
func faultSuite(t *testing.T, e *docker.Engine, up *standin.Server, cases int, script, limits string) runSuite {
	t.Helper()
	var cs strings.Builder
	for i := range cases {
		cs.WriteString("\t\t\"c" + string(rune('a'+i)) + "\": {prompt: \"p" + string(rune('a'+i)) + "\"}\n")
	}
	const ask = `wget -q -O- --header \"x-api-key: $SKILLGATE_MODEL_KEY\" --header 'content-type: application/json' --post-data '{\"model\":\"m\",\"max_tokens\":10,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}' $SKILLGATE_MODEL_URL/v1/messages`
	root := writeRepo(t, map[string]string{
		"s/skill/SKILL.md": "---\nname: s\ndescription: A test skill.\n---\n",
		"s/suite.cue": `package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
)

schema.#Suite & {
	name: "runtest-faults"
	skills: s: path: "skill"
	agent: agents.command & {
		provider:      "anthropic"
		upstream:      "` + up.URL + `"
		credentialEnv: "SKILLGATE_TEST_KEY"
		command: ["sh", "-c", "` + strings.ReplaceAll(script, "ASK", ask) + `"]
	}
	trials: 1
	limits: ` + limits + `
	arms: none: {}
	cases: {
` + cs.String() + `	}
	policy: uncovered: {}
}
`,
	})
	dir := filepath.Join(root, "s")
	p, err := plan.CompileDir(dir)
	if err != nil {
		t.Fatal(suite.PrintError(err, root))
	}
	t.Cleanup(func() { e.RemoveImages(context.Background(), docker.LabelSuite+"="+p.Suite.Name) })
	return runSuite{Dir: dir, Plan: p}
}

// TestFaultStallCutByTimeout: the provider goes silent on a cell whose timeout
// ends it before limits.stall would: the cell is invalid, the provider's, not a
// timed-out trial; the rerun retries it, and once the provider answers, the run
// completes.
func TestFaultStallCutByTimeout(t *testing.T) {
	e := dockertest.Engine(t)
	t.Setenv("SKILLGATE_TEST_KEY", "sk-ant-stand-in")
	up := standin.New(t, false)
	s := faultSuite(t, e, up, 1, "sleep 3; ASK", `{timeout: "7s", stall: "6s", retry: {attempts: 1, delay: "50ms", maxDelay: "1s"}}`)
	up.FailAlways(&standin.Fault{StallBeforeHeaders: true})
	out := t.TempDir()
	sum, err := Run(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := s.Plan.Cells[0]
	ro, ok, _ := (&store.Store{Dir: out}).Rollout(c.Rollout)
	if !ok || ro.Status != store.StatusInvalid || !strings.Contains(ro.Error, "provider: stalled: the cell ended while the provider had sent nothing for") {
		t.Fatalf("rollout %+v, want invalid: the provider stalled", ro)
	}
	if sum.Statuses[store.StatusInvalid] != 1 || sum.Complete() {
		t.Errorf("summary %+v", sum)
	}
	up.FailAlways(nil)
	sum, err = Run(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	ro, _, _ = (&store.Store{Dir: out}).Rollout(c.Rollout)
	if sum.Ran != 1 || !sum.Complete() || ro.Status != store.StatusCompleted {
		t.Errorf("rerun: summary %+v, rollout %s %q", sum, ro.Status, ro.Error)
	}
}

// TestFaultTimeoutWhileStreamingIsTheAgents: a cell its timeout ends while the
// provider has been answering is the agent's timed-out trial, not a fault.
func TestFaultTimeoutWhileStreamingIsTheAgents(t *testing.T) {
	e := dockertest.Engine(t)
	t.Setenv("SKILLGATE_TEST_KEY", "sk-ant-stand-in")
	up := standin.New(t, false)
	// The agent answers, then idles past its timeout: the provider is not to blame.
	s := faultSuite(t, e, up, 1, "ASK; sleep 30", `{timeout: "5s", stall: "4s"}`)
	out := t.TempDir()
	if _, err := Run(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 1}); err != nil {
		t.Fatal(err)
	}
	ro, ok, _ := (&store.Store{Dir: out}).Rollout(s.Plan.Cells[0].Rollout)
	if !ok || ro.Status != store.StatusTimeout || ro.Error != "" {
		t.Fatalf("rollout %s %q, want a timed-out trial", ro.Status, ro.Error)
	}
}

// TestFaultRefusedKeyStopsRun: the provider lists its models but refuses the key
// on model calls. The first model call stops the run within seconds, naming the
// variable; no other cell starts, the stopped cells store nothing, and once the
// key is taken a rerun finishes every cell.
func TestFaultRefusedKeyStopsRun(t *testing.T) {
	e := dockertest.Engine(t)
	t.Setenv("SKILLGATE_TEST_KEY", "sk-ant-stand-in-bad")
	up := standin.New(t, false)
	s := faultSuite(t, e, up, 6, "ASK || sleep 60", `{timeout: "2m", stall: "30s"}`)
	up.FailAlways(&standin.Fault{Status: 401, Type: "authentication_error", Message: "invalid x-api-key"})
	out := t.TempDir()
	start := time.Now()
	sum, err := Run(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 2})
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "refused the key in SKILLGATE_TEST_KEY") || !strings.Contains(err.Error(), "HTTP 401 authentication_error: invalid x-api-key") {
		t.Fatalf("error %v, want the refused key named", err)
	}
	if took > 30*time.Second {
		t.Errorf("the run took %s to stop", took)
	}
	if n := up.Count("POST /v1/messages"); n > 2 {
		t.Errorf("%d model calls: cells went on starting after the key was refused", n)
	}
	if sum == nil || sum.Complete() || sum.ProviderStopped == "" {
		t.Errorf("summary %+v", sum)
	}
	if left := runContainers(t, out); len(left) != 0 {
		t.Errorf("containers left: %v", left)
	}
	up.FailAlways(nil)
	sum, err = Run(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 2})
	if err != nil || !sum.Complete() || sum.Statuses[store.StatusCompleted] != 6 {
		t.Fatalf("rerun: %v, summary %+v", err, sum)
	}
	t.Logf("the refused key stopped the run in %s", took.Round(time.Millisecond))
}

// TestFaultsInARowStopRun: a provider failing with a persistent 529 fails
// limits.providerFaults model calls in a row: the run starts no more cells and
// ends INCOMPLETE, saying so, and resumes once the provider answers.
func TestFaultsInARowStopRun(t *testing.T) {
	e := dockertest.Engine(t)
	t.Setenv("SKILLGATE_TEST_KEY", "sk-ant-stand-in")
	up := standin.New(t, false)
	s := faultSuite(t, e, up, 8, "ASK || ASK || ASK || sleep 60", `{timeout: "2m", stall: "30s", providerFaults: 3, retry: {attempts: 2, delay: "50ms", maxDelay: "1s"}}`)
	up.FailAlways(&standin.Fault{Status: 529, Type: "overloaded_error", Message: "Overloaded"})
	out := t.TempDir()
	start := time.Now()
	sum, err := Run(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 1})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Complete() || !strings.Contains(sum.ProviderStopped, "3 model calls in a row failed through the provider (limits.providerFaults)") || !strings.Contains(sum.ProviderStopped, "HTTP 529 overloaded_error: Overloaded") {
		t.Fatalf("summary %+v", sum)
	}
	if n := up.Count("POST /v1/messages"); n != 3*2 {
		t.Errorf("%d model calls, want 3 cells × 2 attempts", n)
	}
	if !strings.Contains(DescribeSummary(sum, out, false), "stopped: 3 model calls in a row") {
		t.Errorf("summary text: %s", DescribeSummary(sum, out, false))
	}
	if took > time.Minute {
		t.Errorf("the run took %s to stop", took)
	}
	up.FailAlways(nil)
	sum, err = Run(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 2})
	if err != nil || !sum.Complete() || sum.Statuses[store.StatusCompleted] != 8 {
		t.Fatalf("rerun: %v, summary %+v", err, sum)
	}
}

// TestFaultJudgeCheckedFirst: a real judge whose key the provider refuses, or
// whose model it does not know, stops Evaluate before any cell is paid for,
// naming the variable or the model.
func TestFaultJudgeCheckedFirst(t *testing.T) {
	t.Setenv("SKILLGATE_JUDGE_KEY", "sk-ant-judge-bad")
	up := standin.New(t, false)
	root := writeRepo(t, map[string]string{
		"s/suite.cue": `package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
)

schema.#Suite & {
	name: "runtest-judge-check"
	agent: agents.command & {command: ["sh", "-c", "echo hi"]}
	judge: {provider: "anthropic", model: "judge-model", upstream: "` + up.URL + `", credentialEnv: "SKILLGATE_JUDGE_KEY"}
	trials: 1
	arms: none: {}
	cases: a: {prompt: "p", rubric: ["It says hi."]}
	policy: uncovered: {}
}
`,
	})
	dir := filepath.Join(root, "s")
	p, err := plan.CompileDir(dir)
	if err != nil {
		t.Fatal(suite.PrintError(err, root))
	}
	for _, tc := range []struct {
		fault standin.Fault
		want  string
	}{
		{standin.Fault{Status: 401, Type: "authentication_error", Message: "invalid x-api-key"},
			"check judge anthropic: " + up.URL + " answered GET /v1/models/judge-model with HTTP 401 authentication_error: invalid x-api-key; the key in SKILLGATE_JUDGE_KEY is refused: fix it and run again (no cell was started)"},
		{standin.Fault{Status: 404, Type: "not_found_error", Message: "model: judge-model"},
			`check judge anthropic: ` + up.URL + ` does not know judge model "judge-model" (GET /v1/models/judge-model: HTTP 404 not_found_error: model: judge-model): fix judge.model and run again (no cell was started)`},
	} {
		up.FailModels(&tc.fault)
		out := t.TempDir()
		_, _, err := Evaluate(context.Background(), p, Options{Out: out, SuiteDir: dir, Jobs: 1})
		if err == nil || err.Error() != tc.want {
			t.Errorf("got %v\nwant %s", err, tc.want)
		}
		if rollouts, _ := filepath.Glob(filepath.Join(out, "store", "rollouts", "*")); len(rollouts) != 0 {
			t.Errorf("cells ran before the judge was checked: %v", rollouts)
		}
	}
}
