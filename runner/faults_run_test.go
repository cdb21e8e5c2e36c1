package runner

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

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
