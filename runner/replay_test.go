package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/runner/readback"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/gateway"
	"github.com/skillgate/skillgate/runner/gateway/standin"
	"github.com/skillgate/skillgate/runner/store"
)

// TestClaudeCodeRecordReplay: the real Claude Code CLI in a real cell,
// against the stand-in provider reached the way a team reaches a proxy:
// the suite names no upstream, the host's ANTHROPIC_BASE_URL does (with
// its /v1), the key goes as a bearer token, an extra header comes from a
// host variable, and the case sets temperature 0 and an effort. The
// stand-in receives all that, the run folder records every exchange with
// no secret in it; then the stand-in stops, the credential is unset, and
// the run is replayed into a fresh run folder with no network: the same
// answers and grades.
func TestClaudeCodeRecordReplay(t *testing.T) {
	e := dockertest.Engine(t)
	const key, org = "sk-ant-stand-in-key-7788", "org-stand-in-9911"
	t.Setenv("SKILLGATE_TEST_KEY", key)
	t.Setenv("SKILLGATE_TEST_ORG", org)
	up := standin.New(t, false)
	up.Reply("recorded stand-in reply")
	t.Setenv("ANTHROPIC_BASE_URL", up.URL+"/v1")
	root := writeRepo(t, map[string]string{
		"s/fx/README.md": "# fixture\n",
		"s/suite.cue": `package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
)

schema.#Suite & {
	name: "gateway-claude-replay"
	agent: agents.claudeCode & {
		credentialEnv: "SKILLGATE_TEST_KEY"
		auth:          "bearer"
		headers: "X-Team": "SKILLGATE_TEST_ORG"
		env: CLAUDE_CODE_MAX_RETRIES: "0"
		prices: {inputPerMTok: 3, outputPerMTok: 15}
	}
	trials: 1
	limits: {timeout: "2m", stall: "30s"}
	arms: none: {}
	cases: q: {
		prompt:      "Say hello."
		fixture:     "fx"
		temperature: 0
		effort:      "low"
		assert: [{answer: contains: "recorded stand-in reply"}]
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
	s := runSuite{Dir: dir, Plan: p}
	c := p.Cells[0]

	out := t.TempDir()
	sum, rep, log, err := evaluateLogged(t, s, out)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	st := &store.Store{Dir: out}
	ro, _, _ := st.Rollout(c.Rollout)
	if !sum.Complete() || ro.Status != store.StatusCompleted || !strings.Contains(ro.Answer, "recorded stand-in reply") {
		t.Fatalf("summary %+v, rollout %s %q %q\n%s\n%s", sum, ro.Status, ro.Error, ro.Answer, readStored(t, out, c, store.FileStdout), log)
	}
	var models int
	for _, r := range up.Received() {
		if r.Path != "/v1/messages?beta=true" && r.Path != "/v1/messages" {
			continue
		}
		models++
		var body map[string]any
		json.Unmarshal(r.Body, &body)
		oc, _ := body["output_config"].(map[string]any)
		if temp, ok := body["temperature"].(float64); !ok || temp != 0 || oc["effort"] != "low" {
			t.Errorf("forwarded sampling: temperature %v, output_config %v", body["temperature"], body["output_config"])
		}
		if r.Header.Get("Authorization") != "Bearer "+key || r.Header.Get("X-Api-Key") != "" || r.Header.Get("X-Team") != org {
			t.Errorf("forwarded headers %v", r.Header)
		}
	}
	g := ro.Gateway
	if models == 0 || g == nil || g.Exchanges == "" || g.ExchangeCount < models || g.Upstream != up.URL ||
		g.Sampling == nil || g.Sampling.Effort != "low" || g.USD == nil || g.ModelAnswered != "stand-in-model" {
		t.Fatalf("model calls %d, gateway usage %+v", models, g)
	}
	filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(key)) || bytes.Contains(b, []byte(org)) {
				t.Errorf("%s holds a secret", p)
			}
		}
		return err
	})
	if rep.Verdict.Verdict != "PASS" {
		t.Errorf("verdict %s %v", rep.Verdict.Verdict, rep.Verdict.Reasons)
	}

	// Offline: the stand-in is gone and so is the key.
	up.Close()
	os.Unsetenv("SKILLGATE_TEST_KEY")
	os.Unsetenv("SKILLGATE_TEST_ORG")
	replayed := t.TempDir()
	var logBuf bytes.Buffer
	sum2, rep2, err := Evaluate(context.Background(), p, Options{Out: replayed, SuiteDir: dir, Jobs: 1, Log: &logBuf, Replay: out})
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, logBuf.String())
	}
	ro2, _, _ := (&store.Store{Dir: replayed}).Rollout(c.Rollout)
	if !sum2.Complete() || ro2.Status != store.StatusCompleted || ro2.Answer != ro.Answer {
		t.Fatalf("replay: summary %+v, rollout %s %q %q\n%s", sum2, ro2.Status, ro2.Error, ro2.Answer, readStored(t, replayed, c, store.FileStdout))
	}
	if ro2.Gateway == nil || ro2.Gateway.Replayed != g.Exchanges || ro2.Gateway.Requests != g.Requests {
		t.Errorf("replay usage %+v\nrecorded %+v", ro2.Gateway, g)
	}
	r1, _ := store.Results(p, st)
	r2, _ := store.Results(p, &store.Store{Dir: replayed})
	if passes(r1) != passes(r2) || rep2.Verdict.Verdict != rep.Verdict.Verdict {
		t.Errorf("grades: recorded %v %s, replayed %v %s", passes(r1), rep.Verdict.Verdict, passes(r2), rep2.Verdict.Verdict)
	}
	// The report's cell view: requests, models, latency, tokens in both
	// conventions, USD, the sampling set, and each exchange's stored bodies.
	ev, err := readback.CellEvidence(p, st, r1)
	if err != nil {
		t.Fatal(err)
	}
	ce := ev.Cells[c.ID]
	if ce.Requests != g.Requests || ce.ModelAnswered != "stand-in-model" || ce.LatencySeconds <= 0 || ce.USD == nil ||
		ce.ProviderTokens == nil || ce.Sampling != "temperature 0, effort low" || len(ce.Exchanges) != g.ExchangeCount || ce.Files["exchanges"] == "" {
		t.Errorf("evidence %+v", ce)
	}
	for _, x := range ce.Exchanges {
		for _, f := range []string{x.Request, x.Response} {
			if _, err := os.Stat(filepath.Join(out, f)); f == "" || err != nil {
				t.Errorf("exchange %d: stored body %q: %v", x.Seq, f, err)
			}
		}
	}
	t.Logf("recorded %d exchanges (%d model calls); replayed from %s", g.ExchangeCount, models, gateway.LogPath(g.Exchanges))
}

// passes is each result's cell, status and pass, for comparing two runs.
func passes(rs []grade.CellResult) string {
	var b strings.Builder
	for _, r := range rs {
		b.WriteString(r.Cell + " " + r.Status)
		if r.Passed {
			b.WriteString(" passed")
		}
		for _, ch := range r.Checks {
			b.WriteString(" " + ch.Name + "=" + strconv.FormatBool(ch.Passed))
		}
		b.WriteString("; ")
	}
	return b.String()
}

// TestCodexStandInProvider: the real Codex CLI in a real cell, its
// provider a stand-in reached through the host's OPENAI_BASE_URL written
// the usual way, with /v1: the requests reach /v1/responses (never
// /v1/v1), carry the reasoning effort and temperature the suite sets, the
// preset's model is one the CLI knows (no missing-metadata warning), and
// the cached tokens the Responses API counts inside its input are counted
// apart, in the transcript's figures as in the gateway's.
func TestCodexStandInProvider(t *testing.T) {
	e := dockertest.Engine(t)
	t.Setenv("SKILLGATE_TEST_KEY", "sk-stand-in-openai-key")
	up := standin.New(t, false)
	up.Reply("codex stand-in reply")
	up.CacheRead(100)
	t.Setenv("OPENAI_BASE_URL", up.URL+"/v1")
	root := writeRepo(t, map[string]string{
		"s/fx/README.md": "# fixture\n",
		"s/suite.cue": `package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
)

schema.#Suite & {
	name: "gateway-codex-standin"
	agent: agents.codex & {
		credentialEnv: "SKILLGATE_TEST_KEY"
		temperature:   0.2
		effort:        "low"
	}
	trials: 1
	limits: {timeout: "2m", stall: "30s"}
	arms: none: {}
	cases: q: {
		prompt:  "Say hello."
		fixture: "fx"
		assert: [{answer: contains: "codex stand-in reply"}]
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
	c := p.Cells[0]
	out := t.TempDir()
	sum, _, log, err := evaluateLogged(t, runSuite{Dir: dir, Plan: p}, out)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	ro, _, _ := (&store.Store{Dir: out}).Rollout(c.Rollout)
	stdout, stderr := readStored(t, out, c, store.FileStdout), readStored(t, out, c, store.FileStderr)
	if !sum.Complete() || ro.Status != store.StatusCompleted || !strings.Contains(ro.Answer, "codex stand-in reply") {
		t.Fatalf("summary %+v, rollout %s %q %q\n%s\n%s", sum, ro.Status, ro.Error, ro.Answer, stdout, stderr)
	}
	if strings.Contains(stdout+stderr, "Model metadata for") {
		t.Errorf("the CLI does not know the preset's model %s:\n%s%s", p.Agent.Model, stdout, stderr)
	}
	if n := up.Count("POST /v1/responses"); n == 0 || up.Count("POST /v1/v1/responses") != 0 {
		t.Errorf("the stand-in served %v", up.Requests())
	}
	for _, r := range up.Received() {
		if r.Method != "POST" {
			continue
		}
		var body map[string]any
		json.Unmarshal(r.Body, &body)
		reasoning, _ := body["reasoning"].(map[string]any)
		if body["temperature"] != 0.2 || reasoning["effort"] != "low" {
			t.Errorf("forwarded temperature %v, reasoning %v", body["temperature"], body["reasoning"])
		}
	}
	g, tel := ro.Gateway, ro.Telemetry
	if g == nil || g.Tokens == nil || tel.Tokens == nil || g.ProviderTokens == nil {
		t.Fatalf("gateway %+v, telemetry tokens %+v", g, tel.Tokens)
	}
	want := int64(g.Requests) * (standin.Input - 100)
	if g.Tokens.Input != want || tel.Tokens.Input != want || tel.Tokens.CacheRead != g.Tokens.CacheRead || g.ProviderTokens.Input != int64(g.Requests)*standin.Input {
		t.Errorf("tokens: gateway %+v, transcript %+v, provider's %+v; want input %d", g.Tokens, tel.Tokens, g.ProviderTokens, want)
	}
}
