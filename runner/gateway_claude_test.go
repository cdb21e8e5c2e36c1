package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/gateway/standin"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// claudeStandInSuite writes a one-cell suite whose agent is the real Claude Code CLI
// with provider "anthropic" and its upstream the stand-in provider, compiles it, and
// removes its cell images when the test ends.
func claudeStandInSuite(t *testing.T, e *docker.Engine, up *standin.Server) runSuite {
	t.Helper()
	root := writeRepo(t, map[string]string{
		"s/skill/SKILL.md": "---\nname: s\ndescription: A test skill.\n---\n# S\n",
		"s/fx/README.md":   "# fixture\n",
		"s/suite.cue": `package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
)

schema.#Suite & {
	name: "gateway-claude-faults"
	skills: s: path: "skill"
	agent: agents.claudeCode & {
		provider:      "anthropic"
		upstream:      "` + up.URL + `"
		credentialEnv: "SKILLGATE_TEST_KEY"
		// The gateway retries; the CLI's own retries would only slow the test.
		env: CLAUDE_CODE_MAX_RETRIES: "0"
	}
	trials: 1
	limits: {timeout: "2m", stall: "30s", retry: {attempts: 3, delay: "50ms", maxDelay: "5s"}}
	arms: none: {}
	cases: q: {
		prompt:  "Say hello."
		fixture: "fx"
		assert: [{answer: contains: "stand-in reply"}]
	}
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

// evaluateLogged runs Evaluate into out and returns what it logged.
func evaluateLogged(t *testing.T, s runSuite, out string) (*Summary, *verdict.Report, string, error) {
	t.Helper()
	var log bytes.Buffer
	sum, rep, err := Evaluate(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 1, Log: &log})
	return sum, rep, log.String(), err
}

// TestClaudeCodeBadKey: the real Claude Code CLI in a real cell, its provider a
// stand-in that refuses the key. The preflight stops the run before any cell, quoting
// the provider and naming the variable; when only the model endpoint refuses it, the
// first model call stops the run, naming the variable, and once the provider takes
// the key a rerun finishes the run.
func TestClaudeCodeBadKey(t *testing.T) {
	e := dockertest.Engine(t)
	t.Setenv("SKILLGATE_TEST_KEY", "sk-ant-stand-in-bad-key")
	up := standin.New(t, false)
	s := claudeStandInSuite(t, e, up)
	refuse := standin.Fault{Status: 401, Type: "authentication_error", Message: "invalid x-api-key"}
	out := t.TempDir()

	// 401 to everything: the preflight stops the run within seconds.
	up.FailModels(&refuse)
	up.FailAlways(&refuse)
	start := time.Now()
	_, _, log, err := evaluateLogged(t, s, out)
	want := "check provider anthropic: " + up.URL + " answered GET /v1/models with HTTP 401 authentication_error: invalid x-api-key; the key in SKILLGATE_TEST_KEY is refused: fix it and run again (no cell was started)"
	if err == nil || err.Error() != want || time.Since(start) > 10*time.Second {
		t.Fatalf("after %s:\n got %v\nwant %s\n%s", time.Since(start), err, want, log)
	}
	if up.Count("POST /v1/messages") != 0 || len(runContainers(t, out)) != 0 {
		t.Errorf("a cell ran: %v", up.Requests())
	}
	if rollouts, _ := filepath.Glob(filepath.Join(out, "store", "rollouts", "*")); len(rollouts) != 0 {
		t.Errorf("stored %v", rollouts)
	}

	// The model list answers, the model endpoint refuses: the first model call
	// stops the run, naming the variable; the stopped cell stores nothing.
	up.FailModels(nil)
	start = time.Now()
	_, _, log, err = evaluateLogged(t, s, out)
	c := s.Plan.Cells[0]
	wantErr := "provider anthropic refused the key in SKILLGATE_TEST_KEY on a model call of cell " + c.ID + " (provider: HTTP 401 authentication_error: invalid x-api-key (from " + up.URL + "/v1/messages))"
	if err == nil || !strings.Contains(err.Error(), wantErr) || time.Since(start) > time.Minute {
		t.Fatalf("after %s:\n got %v\nwant %s\n%s", time.Since(start), err, wantErr, log)
	}
	if _, ok, _ := (&store.Store{Dir: out}).Rollout(c.Rollout); ok {
		t.Errorf("the stopped cell stored a rollout")
	}

	// The key is fixed: the stopped cell runs again and the run completes.
	up.FailAlways(nil)
	sum, rep, log, err := evaluateLogged(t, s, out)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	ro, _, _ := (&store.Store{Dir: out}).Rollout(c.Rollout)
	if !sum.Complete() || sum.Ran != 1 || ro.Status != store.StatusCompleted || !strings.Contains(ro.Answer, "stand-in reply") {
		t.Fatalf("rerun: summary %+v, rollout %s %q\n%s", sum, ro.Status, ro.Answer, readStored(t, out, c, store.FileStdout))
	}
	if rep.Verdict.Verdict != verdict.VerdictPass {
		t.Errorf("verdict %s %v", rep.Verdict.Verdict, rep.Verdict.Reasons)
	}
	t.Logf("the stand-in served %v", up.Requests())
}

// TestClaudeCodeRateLimited: the real Claude Code CLI meets a provider that
// rate-limits it. Twice, with retry-after: the gateway waits and asks again, the cell
// completes and the CLI never saw a 429. For good: the cell is invalid, with the
// provider's message.
func TestClaudeCodeRateLimited(t *testing.T) {
	e := dockertest.Engine(t)
	t.Setenv("SKILLGATE_TEST_KEY", "sk-ant-stand-in-key")
	up := standin.New(t, false)
	s := claudeStandInSuite(t, e, up)
	limited := standin.Fault{Status: 429, Type: "rate_limit_error", Message: "Number of request tokens has exceeded your per-minute rate limit", RetryAfter: "1"}
	c := s.Plan.Cells[0]

	out := t.TempDir()
	up.FailNext(2, limited)
	start := time.Now()
	sum, _, log, err := evaluateLogged(t, s, out)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	ro, _, _ := (&store.Store{Dir: out}).Rollout(c.Rollout)
	stdout := readStored(t, out, c, store.FileStdout)
	if !sum.Complete() || ro.Status != store.StatusCompleted || !strings.Contains(ro.Answer, "stand-in reply") {
		t.Fatalf("summary %+v, rollout %s %q\n%s", sum, ro.Status, ro.Error, stdout)
	}
	if n := up.Count("POST /v1/messages"); n != 3 || ro.Gateway.Requests != 1 || ro.Gateway.Retries != 2 || len(ro.Gateway.Faults) != 0 {
		t.Errorf("the stand-in served %d model calls (want 2 refused, 1 answered); gateway %+v", n, ro.Gateway)
	}
	// "429" as a status, never inside an ID or a hash the transcript holds.
	if strings.Contains(stdout, "API Error") || regexp.MustCompile(`\b429\b`).MatchString(stdout) || strings.Contains(stdout, "rate_limit") {
		t.Errorf("the CLI saw the rate limit:\n%s", stdout)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("done in %s: the gateway did not wait as retry-after asked", took)
	}

	// For good: invalid, with the provider's message, after the gateway's retries.
	out = t.TempDir()
	limited.RetryAfter, limited.RetryAfterMs = "", "20"
	up.FailAlways(&limited)
	sum, rep, log, err := evaluateLogged(t, s, out)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	ro, _, _ = (&store.Store{Dir: out}).Rollout(c.Rollout)
	want := "provider: HTTP 429 rate_limit_error: Number of request tokens has exceeded your per-minute rate limit (from " + up.URL + "/v1/messages, after 2 retries)"
	if ro.Status != store.StatusInvalid || ro.Error != want || rep.Verdict.Verdict != verdict.VerdictIncomplete {
		t.Errorf("rollout %s %q, verdict %s\nwant %q\n%s", ro.Status, ro.Error, rep.Verdict.Verdict, want, readStored(t, out, c, store.FileStdout))
	}
	os.RemoveAll(out)
}
