package judge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// TestJudgeCommand: the command judge reads {"prompt", "packet"} on stdin
// and replies on stdout, within its timeout.
func TestJudgeCommand(t *testing.T) {
	dir := t.TempDir()
	script := "cat > stdin.json; echo '{\"winner\": \"B\"}'"
	j := &commandJudge{argv: []string{"sh", "-c", script}, dir: dir, timeout: 10 * time.Second}
	reply, _, err := askJudge(context.Background(), j, "the prompt", []byte(`{"task": {"prompt": "x"}}`))
	if err != nil || strings.TrimSpace(reply) != `{"winner": "B"}` {
		t.Fatalf("reply %q, %v", reply, err)
	}
	var in CommandJudgeInput
	b, _ := os.ReadFile(filepath.Join(dir, "stdin.json"))
	if err := json.Unmarshal(b, &in); err != nil || in.Prompt != "the prompt" || string(in.Packet) != `{"task":{"prompt":"x"}}` {
		t.Errorf("stdin %s: %+v %v", b, in, err)
	}
	j = &commandJudge{argv: []string{"sh", "-c", "echo oops >&2; exit 3"}, dir: dir, timeout: 10 * time.Second}
	if _, _, err := j.Ask(context.Background(), "p"); err == nil || !strings.Contains(err.Error(), "exit status 3: oops") {
		t.Errorf("failing command: %v", err)
	}
	j = &commandJudge{argv: []string{"sleep", "10"}, dir: dir, timeout: 200 * time.Millisecond}
	start := time.Now()
	if _, _, err := j.Ask(context.Background(), "p"); err == nil || !strings.Contains(err.Error(), "timed out") || time.Since(start) > 5*time.Second {
		t.Errorf("slow command: %v after %s", err, time.Since(start))
	}
}

// TestJudgeHTTPProviders: the anthropic and openai judges call the host's
// upstream with the key from credentialEnv, non-streaming; a missing key is
// a clear error before anything runs.
func TestJudgeHTTPProviders(t *testing.T) {
	var got struct {
		path, key, auth, version, team string
		body                           map[string]any
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.path, got.key, got.auth, got.version = r.URL.Path, r.Header.Get("X-Api-Key"), r.Header.Get("Authorization"), r.Header.Get("Anthropic-Version")
		got.team = r.Header.Get("X-Team")
		b, _ := io.ReadAll(r.Body)
		got.body = nil
		json.Unmarshal(b, &got.body)
		switch r.URL.Path {
		case "/v1/messages":
			fmt.Fprint(w, `{"model": "claude-x", "content": [{"type": "text", "text": "{\"winner\": \"A\"}"}], "usage": {"input_tokens": 12, "output_tokens": 3}}`)
		case "/v1/responses":
			fmt.Fprint(w, `{"model": "gpt-x", "status": "completed", "output": [{"type": "reasoning"}, {"type": "message", "content": [{"type": "output_text", "text": "{\"winner\": \"tie\"}"}]}], "usage": {"input_tokens": 20, "output_tokens": 4, "input_tokens_details": {"cached_tokens": 5}}}`)
		default:
			http.Error(w, "no", http.StatusNotFound)
		}
	}))
	defer srv.Close()
	t.Setenv("JUDGE_TEST_KEY", "sk-test-123")
	plan := func(provider string) *plan.Plan {
		return &plan.Plan{Limits: plan.PlanLimits{Limits: suite.Limits{Timeout: "10s"}},
			Judge: &plan.PlanJudge{Judge: suite.Judge{Provider: provider, Model: "m1", Upstream: srv.URL + "/", CredentialEnv: "JUDGE_TEST_KEY"}}}
	}
	j, closeJ, err := NewJudge(plan("anthropic"), "")
	if err != nil {
		t.Fatal(err)
	}
	defer closeJ()
	reply, u, err := j.Ask(context.Background(), "judge this")
	if err != nil || reply != `{"winner": "A"}` || u.Model != "claude-x" || u.Tokens == nil || u.Tokens.Input != 12 {
		t.Errorf("anthropic: %q %+v %v", reply, u, err)
	}
	msgs, _ := got.body["messages"].([]any)
	if got.path != "/v1/messages" || got.key != "sk-test-123" || got.version == "" || got.body["model"] != "m1" || got.body["stream"] != nil || len(msgs) != 1 {
		t.Errorf("anthropic request: %+v", got)
	}
	j, _, err = NewJudge(plan("openai"), "")
	if err != nil {
		t.Fatal(err)
	}
	reply, u, err = j.Ask(context.Background(), "judge this")
	if err != nil || reply != `{"winner": "tie"}` || u.Tokens == nil || u.Tokens.Input != 15 || u.Tokens.CacheRead != 5 {
		t.Errorf("openai: %q %+v %v", reply, u, err)
	}
	if got.path != "/v1/responses" || got.auth != "Bearer sk-test-123" || got.body["input"] != "judge this" {
		t.Errorf("openai request: %+v", got)
	}
	p := plan("anthropic")
	p.Judge.CredentialEnv = "JUDGE_TEST_UNSET_KEY"
	if _, _, err := NewJudge(p, ""); err == nil || !strings.Contains(err.Error(), "JUDGE_TEST_UNSET_KEY is not set") {
		t.Errorf("missing key: %v", err)
	}
	p = plan("openai")
	p.Judge.Upstream = ""
	if _, _, err := NewJudge(p, ""); err == nil || !strings.Contains(err.Error(), "judge.upstream") {
		t.Errorf("missing upstream: %v", err)
	}
	// No upstream in the suite: the host's base-URL variable gives it, with
	// its /v1; the key goes as a bearer token, an extra header from its
	// variable.
	t.Setenv("JUDGE_TEST_BASE_URL", srv.URL+"/v1")
	t.Setenv("JUDGE_TEST_TEAM", "team-secret-42")
	p = plan("anthropic")
	p.Judge.Upstream, p.Judge.UpstreamEnv, p.Judge.UpstreamDefault = "", "JUDGE_TEST_BASE_URL", "https://api.anthropic.com"
	p.Judge.Auth, p.Judge.Headers = "bearer", map[string]string{"X-Team": "JUDGE_TEST_TEAM"}
	if j, _, err = NewJudge(p, ""); err != nil {
		t.Fatal(err)
	}
	if reply, _, err := j.Ask(context.Background(), "judge this"); err != nil || reply != `{"winner": "A"}` {
		t.Errorf("host base URL: %q %v", reply, err)
	}
	if got.path != "/v1/messages" || got.key != "" || got.auth != "Bearer sk-test-123" || got.team != "team-secret-42" {
		t.Errorf("host base URL request: %+v", got)
	}
	if s := judgeSecrets(p); !slices.Contains(s, "team-secret-42") || !slices.Contains(s, "sk-test-123") {
		t.Errorf("secrets %v", s)
	}
	// An HTTP error is an error, not a reply.
	mj := &messagesJudge{client: srv.Client(), url: srv.URL + "/nope", model: "m", timeout: 5 * time.Second}
	if _, _, err := mj.Ask(context.Background(), "x"); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("404: %v", err)
	}
}

// TestJudgeScriptedGateway: the scripted judge is the scripted model behind
// a gateway on a unix socket, asked with Anthropic Messages requests.
func TestJudgeScriptedGateway(t *testing.T) {
	marked := `"A": {` + "\n" + `    "answer": "MARKED`
	text := func(s string) *string { return &s }
	p := &plan.Plan{Limits: plan.PlanLimits{Limits: suite.Limits{Timeout: "10s"}},
		Judge: &plan.PlanJudge{Judge: suite.Judge{Provider: "scripted", Script: &suite.Script{Model: "judge-stand-in", Rules: []suite.ScriptRule{
			{When: &suite.ScriptWhen{Contains: &marked}, Reply: []suite.ScriptBlock{{Text: text(`{"winner": "A"}`)}}, Usage: suite.ScriptUsage{Input: 7, Output: 2}},
			{Reply: []suite.ScriptBlock{{Text: text(`{"winner": "B"}`)}}, Usage: suite.ScriptUsage{Input: 7, Output: 2}},
		}}}}}
	j, closeJ, err := NewJudge(p, "")
	if err != nil {
		t.Fatal(err)
	}
	pk := grade.EncodePacket(grade.PairwisePacket{A: grade.PacketAttempt{Answer: "MARKED x"}, B: grade.PacketAttempt{Answer: "PLAIN"}})
	reply, u, err := j.Ask(context.Background(), grade.RenderJudgePrompt("Compare.\n\n{{packet}}", pk))
	if err != nil || reply != `{"winner": "A"}` || u.Model != "judge-stand-in" || u.Tokens.Output != 2 {
		t.Errorf("reply %q %+v %v", reply, u, err)
	}
	pk = grade.EncodePacket(grade.PairwisePacket{A: grade.PacketAttempt{Answer: "PLAIN"}, B: grade.PacketAttempt{Answer: "MARKED x"}})
	if reply, _, err := j.Ask(context.Background(), grade.RenderJudgePrompt("Compare.\n\n{{packet}}", pk)); err != nil || reply != `{"winner": "B"}` {
		t.Errorf("reply %q %v", reply, err)
	}
	closeJ()
	if _, _, err := j.Ask(context.Background(), "x"); err == nil {
		t.Error("asked a closed judge")
	}
}
