package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/runner/gateway/standin"

	"github.com/opencontainers/go-digest"
)

// gwPost sends one model request of a cell to the gateway, its dummy key as
// header names it ("key" puts it in the query), and reads the whole answer.
func gwModelPost(t *testing.T, c *http.Client, target, header, tok, payload string) (int, string, error) {
	t.Helper()
	if header == "key" {
		sep := "?"
		if strings.Contains(target, "?") {
			sep = "&"
		}
		target += sep + "key=" + tok
	}
	req, _ := http.NewRequest(http.MethodPost, "http://gateway"+target, strings.NewReader(payload))
	req.Header.Set("Content-Type", "application/json")
	switch header {
	case "x-goog-api-key":
		req.Header.Set("X-Goog-Api-Key", tok)
	case "bearer":
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

const (
	geminiStreamPath = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
	geminiFirst      = `{"systemInstruction":{"parts":[{"text":"# Available Agent Skills\n<available_skills>\n  <skill>\n    <name>s</name>\n  </skill>\n</available_skills>"}]},` +
		`"contents":[{"role":"user","parts":[{"text":"<session_context>cwd</session_context>"},{"text":"Use the s skill. What is the answer?"}]}]}`
	geminiSecond = `{"contents":[{"role":"user","parts":[{"text":"Use the s skill. What is the answer?"}]},` +
		`{"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"cat README.md"}}}]},` +
		`{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"output":"<untrusted_context>\nOutput: A fixture.\nProcess Group PGID: 12\n</untrusted_context>"}}}]}]}`
	chatFirst  = `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"<available_skills><skill><name>s</name></skill></available_skills>"},{"role":"user","content":"Use the s skill. What is the answer?"}]}`
	chatSecond = `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"Use the s skill. What is the answer?"}]},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"cat README.md\"}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"A fixture."}]}`
)

// geminiScript: with the skill s listed and the prompt asking for it, a tool
// call; after one tool result, the answer quoting it.
func geminiScript(tool string) *suite.Script {
	one, zero := 1, 0
	prompt := "^Use the s skill"
	listed := "s"
	answer := "ANSWER-42: {{lastToolResult}}"
	return &suite.Script{Model: "scripted-model", Rules: []suite.ScriptRule{
		{When: &suite.ScriptWhen{SkillListed: &listed, ToolResults: &zero, PromptMatches: &prompt},
			Reply: []suite.ScriptBlock{{Tool: tool, Input: map[string]any{"command": "cat README.md"}}}, Usage: suite.ScriptUsage{Input: 900, Output: 40}},
		{When: &suite.ScriptWhen{ToolResults: &one}, Reply: []suite.ScriptBlock{{Text: &answer}}, Usage: suite.ScriptUsage{Input: 950, Output: 12}},
	}}
}

// TestGatewayScriptedGemini: the scripted model answers Gemini's
// streamGenerateContent (server-sent events) and generateContent, reading the
// listed skills from the system instruction, the prompt from the user's text
// (the CLI's own tagged context left out) and the tool result from the
// function response (the shell tool's frame left out); the dummy key may come
// in x-goog-api-key or the key= query, and the usage is accounted.
func TestGatewayScriptedGemini(t *testing.T) {
	g := gwStart(t, GatewayConfig{Provider: "scripted", Script: geminiScript("run_shell_command")})
	c := gwUnixClient(g.Socket())
	status, body, err := gwModelPost(t, c, geminiStreamPath, "x-goog-api-key", g.NewCellToken("cell"), geminiFirst)
	if err != nil || status != 200 || !strings.HasPrefix(body, "data: ") ||
		!strings.Contains(body, `"functionCall":{"args":{"command":"cat README.md"},"id":"call_scripted_0001_1","name":"run_shell_command"}`) ||
		!strings.Contains(body, `"finishReason":"STOP"`) {
		t.Fatalf("stream: %d %v\n%s", status, err, body)
	}
	status, body, err = gwModelPost(t, c, "/v1beta/models/gemini-2.5-pro:generateContent", "key", g.NewCellToken("cell"), geminiSecond)
	var resp struct {
		Candidates []struct {
			Content struct {
				Parts []struct{ Text string } `json:"parts"`
			} `json:"content"`
		} `json:"candidates"`
		Usage struct {
			Prompt int64 `json:"promptTokenCount"`
		} `json:"usageMetadata"`
	}
	if err != nil || status != 200 || json.Unmarshal([]byte(body), &resp) != nil || len(resp.Candidates) != 1 ||
		resp.Candidates[0].Content.Parts[0].Text != "ANSWER-42: A fixture." || resp.Usage.Prompt != 950 {
		t.Fatalf("generateContent: %d %v\n%s", status, err, body)
	}
	u := g.Usage("cell")
	if u.Requests != 2 || u.Tokens == nil || u.Tokens.Input != 1850 || u.Tokens.Output != 52 || u.ModelAnswered != "scripted-model" {
		t.Errorf("usage %+v, tokens %+v", u, u.Tokens)
	}
	if status, body, _ := gwModelPost(t, c, geminiStreamPath, "x-goog-api-key", "sk-skillgate-unknown", geminiFirst); status != 401 || !strings.Contains(body, `"status":"UNAUTHENTICATED"`) {
		t.Errorf("an unknown key: %d %s", status, body)
	}
}

// TestGatewayScriptedChatCompletions: the scripted model answers
// OpenAI-compatible Chat Completions, streamed (chunks, the usage, [DONE]) or
// not, reading tool messages as tool results.
func TestGatewayScriptedChatCompletions(t *testing.T) {
	g := gwStart(t, GatewayConfig{Provider: "scripted", Script: geminiScript("bash")})
	c := gwUnixClient(g.Socket())
	status, body, err := gwModelPost(t, c, "/v1/chat/completions", "bearer", g.NewCellToken("cell"), chatFirst)
	if err != nil || status != 200 || !strings.Contains(body, `"tool_calls":[{"function":{"arguments":"{\"command\":\"cat README.md\"}","name":"bash"}`) ||
		!strings.Contains(body, `"finish_reason":"tool_calls"`) || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Fatalf("stream: %d %v\n%s", status, err, body)
	}
	status, body, err = gwModelPost(t, c, "/v1/chat/completions", "bearer", g.NewCellToken("cell"), chatSecond)
	if err != nil || status != 200 || !strings.Contains(body, `"content":"ANSWER-42: A fixture."`) || !strings.Contains(body, `"finish_reason":"stop"`) {
		t.Fatalf("chat completion: %d %v\n%s", status, err, body)
	}
	u := g.Usage("cell")
	if u.Requests != 2 || u.Tokens == nil || u.Tokens.Input != 1850 || u.Tokens.Output != 52 {
		t.Errorf("usage %+v, tokens %+v", u, u.Tokens)
	}
}

// TestGatewayGeminiProvider: in front of the stand-in speaking Gemini, the
// gateway forwards a model call whose dummy key came in the key= query with
// the real key in x-goog-api-key alone (the query's key dropped), counts the
// tokens (input without the cached ones), sets the sampling controls in
// generationConfig, refuses every path off the allowlist, and records the
// exchange with neither key in it.
func TestGatewayGeminiProvider(t *testing.T) {
	up := standin.New(t, false)
	up.CacheRead(20)
	out := t.TempDir()
	zero := 0.0
	g := gwStart(t, GatewayConfig{Provider: "gemini", Upstream: up.URL, APIKey: "sk-real-key-0123", Record: &Recorder{Out: out},
		Sampling: func(string) *Sampling { return &Sampling{Temperature: &zero, Effort: "low"} }})
	c := gwUnixClient(g.Socket())
	tok := g.NewCellToken("cell")
	status, body, err := gwModelPost(t, c, geminiStreamPath, "key", tok, geminiFirst)
	if err != nil || status != 200 || !strings.Contains(body, "stand-in reply"[7:]) {
		t.Fatalf("%d %v\n%s", status, err, body)
	}
	got := up.Received()
	if len(got) != 1 || got[0].Path != geminiStreamPath || got[0].Header.Get("X-Goog-Api-Key") != "sk-real-key-0123" ||
		got[0].Header.Get("Authorization") != "" || got[0].Header.Get("X-Api-Key") != "" {
		t.Fatalf("forwarded %+v", got)
	}
	var sent struct {
		GenerationConfig struct {
			Temperature    *float64 `json:"temperature"`
			ThinkingConfig struct {
				ThinkingLevel string `json:"thinkingLevel"`
			} `json:"thinkingConfig"`
		} `json:"generationConfig"`
		Contents []any `json:"contents"`
	}
	if json.Unmarshal(got[0].Body, &sent) != nil || sent.GenerationConfig.Temperature == nil || *sent.GenerationConfig.Temperature != 0 ||
		sent.GenerationConfig.ThinkingConfig.ThinkingLevel != "low" || len(sent.Contents) != 1 {
		t.Errorf("forwarded body %s", got[0].Body)
	}
	u := g.Usage("cell")
	if u.Tokens == nil || u.Tokens.Input != standin.Input-20 || u.Tokens.CacheRead != 20 || u.Tokens.Output != standin.Output ||
		u.ProviderTokens == nil || u.ProviderTokens.Convention != "gemini" || u.ProviderTokens.Input != standin.Input || u.ModelAnswered != "stand-in-model" {
		t.Errorf("usage %+v, tokens %+v, provider tokens %+v", u, u.Tokens, u.ProviderTokens)
	}
	for _, target := range []string{"/v1beta/files", "/v1beta/models/gemini-2.5-pro:embedContent", "/v1beta/models/../files:generateContent",
		"/v1beta/models/a/b:generateContent", "/v1beta/cachedContents", "/upload/v1beta/files"} {
		if status, _, _ := gwModelPost(t, c, target, "x-goog-api-key", tok, "{}"); status != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", target, status)
		}
	}
	if up.Total() != 1 {
		t.Errorf("the stand-in served %d requests, want 1", up.Total())
	}
	l, err := ReadLog(out, g.Usage("cell").Exchanges)
	if err != nil || len(l.Exchanges) != 1 {
		t.Fatalf("log %+v: %v", l, err)
	}
	var all bytes.Buffer
	filepath.Walk(out, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			b, _ := os.ReadFile(p)
			all.Write(b)
		}
		return nil
	})
	if strings.Contains(all.String(), "sk-real-key-0123") || strings.Contains(all.String(), tok) {
		t.Errorf("a key is in the recorded exchanges")
	}
}

// TestGatewayChatCompletionsProvider: a streamed Chat Completions call goes
// through the openai provider, its usage chunk counted (cached input apart).
func TestGatewayChatCompletionsProvider(t *testing.T) {
	up := standin.New(t, false)
	up.CacheRead(20)
	g := gwStart(t, GatewayConfig{Provider: "openai", Upstream: up.URL, APIKey: "sk-real-key-0123"})
	status, body, err := gwModelPost(t, gwUnixClient(g.Socket()), "/v1/chat/completions", "bearer", g.NewCellToken("cell"), chatFirst)
	if err != nil || status != 200 || !strings.Contains(body, "data: [DONE]") {
		t.Fatalf("%d %v\n%s", status, err, body)
	}
	if got := up.Received(); len(got) != 1 || got[0].Header.Get("Authorization") != "Bearer sk-real-key-0123" {
		t.Fatalf("forwarded %+v", got)
	}
	u := g.Usage("cell")
	if u.Tokens == nil || u.Tokens.Input != standin.Input-20 || u.Tokens.CacheRead != 20 || u.Tokens.Output != standin.Output {
		t.Errorf("tokens %+v", u.Tokens)
	}
}

// TestGatewayGeminiFaults: the Gemini API's 401, persistent 429 and 500, its
// refusal of a key (400 API_KEY_INVALID, which is no bad request of the
// agent's) and a stall mid-stream reach the agent (a 429 and a 500 after
// retries) and are recorded as provider faults with the API's status name.
func TestGatewayGeminiFaults(t *testing.T) {
	for _, c := range []struct {
		name   string
		fault  standin.Fault
		served int
		want   string
	}{
		{"401", standin.Fault{Status: 401, Type: "UNAUTHENTICATED", Message: "API key not valid"}, 1,
			"provider: HTTP 401 UNAUTHENTICATED: API key not valid (from URL" + geminiStreamPath[:len(geminiStreamPath)-8] + ")"},
		{"429", standin.Fault{Status: 429, Type: "RESOURCE_EXHAUSTED", Message: "Quota exceeded", RetryAfterMs: "5"}, 3,
			"provider: HTTP 429 RESOURCE_EXHAUSTED: Quota exceeded (from URL" + geminiStreamPath[:len(geminiStreamPath)-8] + ", after 2 retries)"},
		{"500", standin.Fault{Status: 500, Type: "INTERNAL", Message: "Internal error encountered."}, 3,
			"provider: HTTP 500 INTERNAL: Internal error encountered. (from URL" + geminiStreamPath[:len(geminiStreamPath)-8] + ", after 2 retries)"},
		{"refused key", standin.Fault{Status: 400, Type: KeyInvalid, Message: "API key not valid. Please pass a valid API key."}, 1,
			"provider: HTTP 400 API_KEY_INVALID: API key not valid. Please pass a valid API key. (from URL" + geminiStreamPath[:len(geminiStreamPath)-8] + ")"},
		{"stall", standin.Fault{StallAfterStart: true}, 1, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := standin.New(t, false)
			up.FailAlways(&c.fault)
			g, client := gwFaultsGateway(t, up, "gemini", 3, 300*time.Millisecond)
			status, body, _ := gwModelPost(t, client, geminiStreamPath, "x-goog-api-key", g.NewCellToken("cell"), geminiFirst)
			if c.fault.Status != 0 && (status != c.fault.Status || !strings.Contains(body, c.fault.Message)) {
				t.Errorf("the agent got %d %s", status, body)
			}
			if n := up.Count("POST /v1beta/models/gemini-2.5-pro:streamGenerateContent"); n != c.served {
				t.Errorf("the stand-in served %d requests, want %d", n, c.served)
			}
			u := g.Usage("cell")
			if len(u.Faults) != 1 || u.Unrecovered == "" {
				t.Fatalf("faults %+v, unrecovered %q", u.Faults, u.Unrecovered)
			}
			if c.want != "" && u.Unrecovered != strings.ReplaceAll(c.want, "URL", up.URL) {
				t.Errorf("unrecovered %q\nwant        %q", u.Unrecovered, strings.ReplaceAll(c.want, "URL", up.URL))
			}
			if c.fault.StallAfterStart && u.Faults[0].Kind != FaultStall {
				t.Errorf("fault %+v, want a stall", u.Faults[0])
			}
		})
	}
}

// TestGatewayGeminiRecordReplay: a Gemini session recorded in front of the
// stand-in is served again by a replay gateway, offline, byte for byte, the
// cell's dummy key in the key= query of either run.
func TestGatewayGeminiRecordReplay(t *testing.T) {
	up := standin.New(t, false)
	up.Reply("recorded answer")
	out := t.TempDir()
	rec := gwStart(t, GatewayConfig{Provider: "gemini", Upstream: up.URL, APIKey: "sk-real-key-0123", Record: &Recorder{Out: out}})
	status, recorded, err := gwModelPost(t, gwUnixClient(rec.Socket()), geminiStreamPath, "key", rec.NewCellToken("c1"), geminiFirst)
	if err != nil || status != 200 {
		t.Fatalf("record: %d %v %s", status, err, recorded)
	}
	u := rec.Usage("c1")
	up.Close()
	g := gwStart(t, GatewayConfig{Provider: "replay", Replay: &Recording{Dir: out, Logs: map[string]digest.Digest{"c1": u.Exchanges}}})
	status, replayed, err := gwModelPost(t, gwUnixClient(g.Socket()), geminiStreamPath, "key", g.NewCellToken("c1"), geminiFirst)
	if err != nil || status != 200 || replayed != recorded {
		t.Fatalf("replay: %d %v\n%s\nwant\n%s", status, err, replayed, recorded)
	}
	if ru := g.Usage("c1"); ru.Unrecovered != "" || ru.Tokens == nil || ru.Tokens.Output != standin.Output || ru.ModelAnswered != "stand-in-model" {
		t.Errorf("replay usage %+v", ru)
	}
}

// TestGatewayGeminiPreflight: before any cell, the Gemini provider's model
// list is asked for with the real key in x-goog-api-key; a refused key stops
// the run.
func TestGatewayGeminiPreflight(t *testing.T) {
	up := standin.New(t, false)
	g := gwStart(t, GatewayConfig{Provider: "gemini", Upstream: up.URL, APIKey: "sk-real-key-0123"})
	if note, err := g.Preflight(context.Background()); err != nil || note != "" {
		t.Fatalf("preflight: %q %v", note, err)
	}
	if got := up.Received(); len(got) != 1 || got[0].Path != "/v1beta/models" || got[0].Header.Get("X-Goog-Api-Key") != "sk-real-key-0123" {
		t.Fatalf("preflight sent %+v", got)
	}
	// The Gemini API refuses a bad key with 400 and the reason API_KEY_INVALID.
	up.FailModels(&standin.Fault{Status: 400, Type: KeyInvalid, Message: "API key not valid. Please pass a valid API key."})
	_, err := g.Preflight(context.Background())
	var pe *PreflightError
	if !errors.As(err, &pe) || pe.Fault.Status != 400 || pe.Fault.Type != KeyInvalid {
		t.Errorf("preflight with a refused key: %v", err)
	}
}
