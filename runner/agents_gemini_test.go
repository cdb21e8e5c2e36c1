package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/runner/cell"
	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/gateway/standin"
	"github.com/skillgate/skillgate/runner/store"
)

// TestGeminiOnStandIn: the real Gemini CLI behind the gateway's gemini provider, the
// stand-in provider answering Gemini's stream: every request the CLI makes is on the
// allowlist (none refused), carries the real key only upstream, and the answer, model
// and tokens read back from both the transcript and the gateway.
func TestGeminiOnStandIn(t *testing.T) {
	e := dockertest.Engine(t)
	key := "AIza-standin-" + cell.NewRunID()
	t.Setenv("SKILLGATE_TEST_GEMINI_KEY", key)
	up := standin.New(t, false)
	up.Reply("GEMINI-STANDIN-ANSWER")
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, ".git"), 0o755)
	dir := filepath.Join(root, "s")
	os.MkdirAll(filepath.Join(dir, "skill"), 0o755)
	os.WriteFile(filepath.Join(dir, "skill", "SKILL.md"), []byte("---\nname: s\ndescription: A test skill.\n---\n"), 0o644)
	src := `package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/policies"
)

schema.#Suite & {
	name: "runtest-gemini-standin"
	skills: s: path: "skill"
	agent: agents.gemini & {
		upstream: "` + up.URL + `", credentialEnv: "SKILLGATE_TEST_GEMINI_KEY"
		standIn: "the tests' stand-in provider behind the real Gemini CLI"
	}
	trials: 1
	limits: timeout: "10m"
	arms: none: {}
	cases: c: {prompt: "Say the answer.", assert: [{answer: contains: "GEMINI-STANDIN-ANSWER"}]}
	policy: policies.advisory
}
`
	os.WriteFile(filepath.Join(dir, "suite.cue"), []byte(src), 0o644)
	p, err := plan.CompileDir(dir)
	if err != nil {
		t.Fatal(suite.PrintError(err, root))
	}
	t.Cleanup(func() { e.RemoveImages(context.Background(), docker.LabelSuite+"=runtest-gemini-standin") })
	out := t.TempDir()
	var log strings.Builder
	sum, err := Run(context.Background(), p, Options{Out: out, SuiteDir: dir, Jobs: 1, Log: &log})
	if err != nil || !sum.Complete() || sum.Statuses[store.StatusCompleted] != 1 {
		t.Fatalf("run: %v, summary %+v\n%s", err, sum, log.String())
	}
	st := &store.Store{Dir: out}
	c := p.Cells[0]
	ro, _, _ := st.Rollout(c.Rollout)
	stdout := readStored(t, out, c, store.FileStdout)
	if ro.Answer != "GEMINI-STANDIN-ANSWER" || ro.Telemetry.Tokens == nil || ro.Telemetry.Tokens.Input == 0 || ro.Telemetry.Model != "gemini-2.5-pro" {
		t.Errorf("answer %q, telemetry %+v\n%s\n%s", ro.Answer, ro.Telemetry, stdout, readStored(t, out, c, store.FileStderr))
	}
	if g := ro.Gateway; g == nil || g.Requests == 0 || len(g.Refused) != 0 || len(g.Faults) != 0 || g.ModelAnswered != "stand-in-model" {
		t.Errorf("gateway usage %+v", ro.Gateway)
	}
	for _, r := range up.Received() {
		if r.Header.Get("X-Goog-Api-Key") != key || strings.Contains(r.Path, "key=") {
			t.Errorf("%s %s: headers %v", r.Method, r.Path, r.Header)
		}
	}
	t.Logf("the stand-in served %v", up.Requests())
}
