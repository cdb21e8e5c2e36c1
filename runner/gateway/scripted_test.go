package gateway

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// gwEvent is one parsed server-sent event.
type gwEvent struct {
	name string
	data map[string]any
	raw  string
}

// gwParseSSE parses an event stream strictly: every event has an event line and one JSON
// data line whose type is the event's name.
func gwParseSSE(t *testing.T, s string) []gwEvent {
	t.Helper()
	var evs []gwEvent
	for _, chunk := range strings.Split(strings.TrimSuffix(s, "\n\n"), "\n\n") {
		if chunk == "" {
			continue
		}
		lines := strings.Split(chunk, "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "event: ") || !strings.HasPrefix(lines[1], "data: ") {
			t.Fatalf("malformed event %q", chunk)
		}
		ev := gwEvent{name: strings.TrimPrefix(lines[0], "event: "), raw: strings.TrimPrefix(lines[1], "data: ")}
		if err := json.Unmarshal([]byte(ev.raw), &ev.data); err != nil {
			t.Fatalf("event %s: %v", ev.name, err)
		}
		if ev.data["type"] != ev.name {
			t.Errorf("event %s has type %v", ev.name, ev.data["type"])
		}
		evs = append(evs, ev)
	}
	return evs
}

func gwNames(evs []gwEvent) []string {
	var n []string
	for _, e := range evs {
		n = append(n, e.name)
	}
	return n
}

// gwGet walks a decoded JSON value: gwGet(v, "message", "usage", "input_tokens").
func gwGet(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func gwSample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "gateway", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// gwSampleScript plays the demo scenario of the sample transcripts.
func gwSampleScript() *suite.Script {
	return &suite.Script{Model: "scripted-demo", Rules: []suite.ScriptRule{
		{
			When:  &suite.ScriptWhen{ToolResults: gwPtr(1), Contains: gwPtr("Base directory for this skill")},
			Reply: []suite.ScriptBlock{{Text: gwPtr("DEMO-SKILL-ACTIVE")}},
			Usage: suite.ScriptUsage{Input: 300, Output: 7},
		},
		{
			When: &suite.ScriptWhen{SkillListed: gwPtr("demo"), ToolResults: gwPtr(0), Contains: gwPtr("SCENARIO:skill")},
			Reply: []suite.ScriptBlock{
				{Text: gwPtr("I'll use the demo skill.")},
				{Tool: "Skill", Input: map[string]any{"skill": "demo"}},
			},
			Usage: suite.ScriptUsage{Input: 12379, Output: 25},
		},
		{
			When: &suite.ScriptWhen{SkillListed: gwPtr("demo2"), ToolResults: gwPtr(0)},
			Reply: []suite.ScriptBlock{
				{Text: gwPtr("Reading the skill.")},
				{Tool: "exec_command", Input: map[string]any{"cmd": "cat .agents/skills/demo/SKILL.md"}},
			},
			Usage: suite.ScriptUsage{Input: 9000, Output: 40},
		},
		{
			When:  &suite.ScriptWhen{NotContains: gwPtr("Launching skill"), SkillListed: gwPtr("Explore")},
			Reply: []suite.ScriptBlock{{Text: gwPtr("agent types are not skills")}},
		},
	}}
}

func TestScriptedRuleSelection(t *testing.T) {
	sm, err := newScriptedModel(gwSampleScript())
	if err != nil {
		t.Fatal(err)
	}
	ruleOf := func(req *scriptRequest) int {
		r := sm.pick(req)
		for i := range sm.script.Rules {
			if r == &sm.script.Rules[i] {
				return i
			}
		}
		return -1
	}

	c1, err := parseAnthropicRequest(gwSample(t, "claude-code-request-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Claude Code lists skills inside messages; a listed skill whose description spans
	// lines (claude-api) does not hide the ones after it; agent types are not skills.
	for _, s := range []string{"demo", "dataviz", "claude-api", "workflow-authoring", "security-review"} {
		if !c1.skills[s] {
			t.Errorf("claude request 1: skill %s not listed; found %v", s, c1.skills)
		}
	}
	for _, s := range []string{"Explore", "claude", "general-purpose", "demo2"} {
		if c1.skills[s] {
			t.Errorf("claude request 1: %s taken for a listed skill", s)
		}
	}
	if c1.toolResults != 0 || !c1.stream || !strings.Contains(c1.text, "SCENARIO:skill Please use the demo skill.") || !strings.Contains(c1.text, "You are a Claude agent") {
		t.Errorf("claude request 1: %d tool results, stream %v", c1.toolResults, c1.stream)
	}
	if got := ruleOf(c1); got != 1 {
		t.Errorf("claude request 1 picked rule %d, want 1 (skillListed demo, no tool result)", got)
	}

	c2, err := parseAnthropicRequest(gwSample(t, "claude-code-request-2-after-skill.json"))
	if err != nil {
		t.Fatal(err)
	}
	if c2.toolResults != 1 || !strings.Contains(c2.text, "Launching skill: demo") || !strings.Contains(c2.text, `{"skill":"demo"}`) {
		t.Errorf("claude request 2: %d tool results; tool result or call text missing", c2.toolResults)
	}
	if got := ruleOf(c2); got != 0 {
		t.Errorf("claude request 2 picked rule %d, want 0 (one tool result)", got)
	}

	codexBody := gwSample(t, "codex-exec-request-1.json")
	x1, err := parseResponsesRequest(codexBody)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"demo", "demo2", "demo3", "imagegen", "skill-creator"} {
		if !x1.skills[s] {
			t.Errorf("codex request: skill %s not listed; found %v", s, x1.skills)
		}
	}
	if x1.skills["r0"] || x1.toolResults != 0 || !x1.stream || !strings.Contains(x1.text, "Use $demo now.") {
		t.Errorf("codex request: skills %v, %d tool results", x1.skills, x1.toolResults)
	}
	if got := ruleOf(x1); got != 2 {
		t.Errorf("codex request picked rule %d, want 2", got)
	}

	// The same conversation after one tool call: a function_call_output counts.
	var m map[string]any
	json.Unmarshal(codexBody, &m)
	m["input"] = append(m["input"].([]any),
		map[string]any{"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": `{"cmd":"cat x"}`},
		map[string]any{"type": "function_call_output", "call_id": "c1", "output": "TOOL-OUTPUT-TEXT"})
	b, _ := json.Marshal(m)
	x2, err := parseResponsesRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	if x2.toolResults != 1 || !strings.Contains(x2.text, "TOOL-OUTPUT-TEXT") || !strings.Contains(x2.text, `{"cmd":"cat x"}`) {
		t.Errorf("codex request 2: %d tool results", x2.toolResults)
	}
	if got := ruleOf(x2); got != -1 {
		t.Errorf("codex request 2 picked rule %d, want none", got)
	}
}

func TestScriptedAnthropicStream(t *testing.T) {
	script := gwSampleScript()
	g := gwStart(t, GatewayConfig{Provider: "scripted", Script: script})
	c := gwUnixClient(g.Socket())
	tok := g.NewCellToken("claude-cell")

	// A probe needs no answer.
	if resp, err := c.Head("http://gateway/api/hello"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("HEAD probe: %v", err)
	}

	resp, body := gwPost(t, c, "/v1/messages?beta=true", "x-api-key", tok, string(gwSample(t, "claude-code-request-1.json")))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	evs := gwParseSSE(t, string(body))
	wantOrder := []string{"message_start", "ping",
		"content_block_start", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop"}
	if !slices.Equal(gwNames(evs), wantOrder) {
		t.Fatalf("events %v\nwant %v", gwNames(evs), wantOrder)
	}
	msg := evs[0].data["message"]
	if gwGet(msg, "id") != "msg_scripted_0001" || gwGet(msg, "type") != "message" || gwGet(msg, "role") != "assistant" ||
		gwGet(msg, "model") != "scripted-demo" || gwGet(msg, "stop_reason") != nil || len(gwGet(msg, "content").([]any)) != 0 ||
		gwGet(msg, "usage", "input_tokens") != 12379.0 || gwGet(msg, "usage", "cache_read_input_tokens") != 0.0 ||
		gwGet(msg, "usage", "cache_creation_input_tokens") != 0.0 {
		t.Errorf("message_start %s", evs[0].raw)
	}
	if gwGet(evs[2].data, "content_block") == nil || gwGet(evs[2].data, "content_block", "type") != "text" || gwGet(evs[2].data, "index") != 0.0 ||
		gwGet(evs[3].data, "delta", "type") != "text_delta" || gwGet(evs[3].data, "delta", "text") != "I'll use the demo skill." {
		t.Errorf("text block: %s %s", evs[2].raw, evs[3].raw)
	}
	tb := gwGet(evs[5].data, "content_block")
	if gwGet(tb, "type") != "tool_use" || gwGet(tb, "name") != "Skill" || gwGet(tb, "id") != "toolu_scripted_0001_2" ||
		!reflect.DeepEqual(gwGet(tb, "input"), map[string]any{}) || gwGet(evs[5].data, "index") != 1.0 {
		t.Errorf("tool block start %s", evs[5].raw)
	}
	var input map[string]any
	if gwGet(evs[6].data, "delta", "type") != "input_json_delta" ||
		json.Unmarshal([]byte(gwGet(evs[6].data, "delta", "partial_json").(string)), &input) != nil || input["skill"] != "demo" {
		t.Errorf("tool input %s", evs[6].raw)
	}
	if gwGet(evs[8].data, "delta", "stop_reason") != "tool_use" || gwGet(evs[8].data, "usage", "output_tokens") != 25.0 {
		t.Errorf("message_delta %s", evs[8].raw)
	}

	// After the tool result: the text reply ends the turn; ids count on.
	_, body = gwPost(t, c, "/v1/messages?beta=true", "x-api-key", tok, string(gwSample(t, "claude-code-request-2-after-skill.json")))
	evs = gwParseSSE(t, string(body))
	if !slices.Equal(gwNames(evs), []string{"message_start", "ping", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}) ||
		gwGet(evs[0].data, "message", "id") != "msg_scripted_0002" || gwGet(evs[3].data, "delta", "text") != "DEMO-SKILL-ACTIVE" ||
		gwGet(evs[5].data, "delta", "stop_reason") != "end_turn" {
		t.Errorf("second reply:\n%s", body)
	}

	// No rule: the no-match text, end_turn.
	_, body = gwPost(t, c, "/v1/messages", "x-api-key", tok, `{"model":"m","stream":true,"messages":[{"role":"user","content":"Launching skill"}]}`)
	evs = gwParseSSE(t, string(body))
	if len(evs) != 7 || gwGet(evs[3].data, "delta", "text") != scriptedNoMatch || gwGet(evs[5].data, "delta", "stop_reason") != "end_turn" {
		t.Errorf("no-match reply:\n%s", body)
	}

	// Not streamed: one JSON message.
	resp, body = gwPost(t, c, "/v1/messages", "x-api-key", tok, strings.Replace(string(gwSample(t, "claude-code-request-1.json")), `"stream":true`, `"stream":false`, 1))
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("non-stream reply %s: %v", body, err)
	}
	if m["id"] != "msg_scripted_0004" || m["stop_reason"] != "tool_use" || gwGet(m, "content", 1, "name") != "Skill" ||
		gwGet(m, "content", 1, "input", "skill") != "demo" || gwGet(m, "usage", "output_tokens") != 25.0 {
		t.Errorf("non-stream reply %s", body)
	}

	u := g.Usage("claude-cell")
	if u.Requests != 4 || u.ModelAsked != "claude-opus-5-5, m" || u.ModelAnswered != "scripted-demo" ||
		u.Tokens == nil || *u.Tokens != (grade.Tokens{Input: 12379 + 300 + 100 + 12379, Output: 25 + 7 + 20 + 25}) || u.USD != nil {
		t.Errorf("usage %+v tokens %+v", u, u.Tokens)
	}

	// Ids come from the cell's own count: another cell's transcript is the same bytes.
	_, a1 := gwPost(t, c, "/v1/messages", "x-api-key", g.NewCellToken("twin-1"), string(gwSample(t, "claude-code-request-1.json")))
	_, b1 := gwPost(t, c, "/v1/messages", "x-api-key", g.NewCellToken("twin-2"), string(gwSample(t, "claude-code-request-1.json")))
	if string(a1) != string(b1) || !strings.Contains(string(a1), "msg_scripted_0001") {
		t.Errorf("replies differ between cells:\n%s\n%s", a1, b1)
	}
}

func TestScriptedResponsesStream(t *testing.T) {
	g := gwStart(t, GatewayConfig{Provider: "scripted", Script: gwSampleScript()})
	c := gwUnixClient(g.Socket())
	tok := g.NewCellToken("codex-cell")
	resp, body := gwPost(t, c, "/v1/responses", "Authorization", "Bearer "+tok, string(gwSample(t, "codex-exec-request-1.json")))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d: %s", resp.StatusCode, body)
	}
	evs := gwParseSSE(t, string(body))
	want := []string{"response.created",
		"response.output_item.added", "response.output_text.delta", "response.output_item.done",
		"response.output_item.added", "response.output_item.done",
		"response.completed"}
	if !slices.Equal(gwNames(evs), want) {
		t.Fatalf("events %v\nwant %v", gwNames(evs), want)
	}
	for i, e := range evs {
		if e.data["sequence_number"] != float64(i) {
			t.Errorf("event %d (%s): sequence_number %v", i, e.name, e.data["sequence_number"])
		}
	}
	created := evs[0].data["response"]
	if gwGet(created, "id") != "resp_scripted_0001" || gwGet(created, "object") != "response" || gwGet(created, "model") != "scripted-demo" ||
		gwGet(created, "status") != "in_progress" || len(gwGet(created, "output").([]any)) != 0 || gwGet(created, "created_at") == nil {
		t.Errorf("response.created %s", evs[0].raw)
	}
	if gwGet(evs[1].data, "item", "type") != "message" || gwGet(evs[1].data, "output_index") != 0.0 ||
		gwGet(evs[2].data, "delta") != "Reading the skill." || gwGet(evs[2].data, "item_id") != gwGet(evs[1].data, "item", "id") {
		t.Errorf("message item: %s %s", evs[1].raw, evs[2].raw)
	}
	msgItem := evs[3].data["item"]
	if gwGet(msgItem, "role") != "assistant" || gwGet(msgItem, "status") != "completed" ||
		gwGet(msgItem, "content", 0, "type") != "output_text" || gwGet(msgItem, "content", 0, "text") != "Reading the skill." ||
		gwGet(msgItem, "content", 0, "annotations") == nil {
		t.Errorf("message item done %s", evs[3].raw)
	}
	fc := evs[5].data["item"]
	var args map[string]any
	if gwGet(fc, "type") != "function_call" || gwGet(fc, "name") != "exec_command" || gwGet(fc, "status") != "completed" ||
		gwGet(fc, "call_id") != "call_scripted_0001_2" || gwGet(fc, "id") != "fc_scripted_0001_2" || gwGet(evs[5].data, "output_index") != 1.0 ||
		json.Unmarshal([]byte(gwGet(fc, "arguments").(string)), &args) != nil || args["cmd"] != "cat .agents/skills/demo/SKILL.md" {
		t.Errorf("function_call item %s", evs[5].raw)
	}
	done := evs[6].data["response"]
	if gwGet(done, "status") != "completed" || len(gwGet(done, "output").([]any)) != 2 ||
		!reflect.DeepEqual(gwGet(done, "output", 1), fc) || !reflect.DeepEqual(gwGet(done, "output", 0), msgItem) {
		t.Errorf("response.completed output %s", evs[6].raw)
	}
	if !reflect.DeepEqual(gwGet(done, "usage"), map[string]any{
		"input_tokens": 9000.0, "input_tokens_details": map[string]any{"cached_tokens": 0.0},
		"output_tokens": 40.0, "output_tokens_details": map[string]any{"reasoning_tokens": 0.0},
		"total_tokens": 9040.0,
	}) {
		t.Errorf("usage %v", gwGet(done, "usage"))
	}

	// Not streamed: the completed response.
	_, body = gwPost(t, c, "/v1/responses", "Authorization", "Bearer "+tok, `{"model":"gpt-x","input":"hello"}`)
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil || m["status"] != "completed" || gwGet(m, "output", 0, "content", 0, "text") != scriptedNoMatch || m["id"] != "resp_scripted_0002" {
		t.Errorf("non-stream reply %s: %v", body, err)
	}

	u := g.Usage("codex-cell")
	if u.Requests != 2 || u.ModelAsked != "mock-model, gpt-x" || u.ModelAnswered != "scripted-demo" ||
		u.Tokens == nil || *u.Tokens != (grade.Tokens{Input: 9100, Output: 60}) {
		t.Errorf("usage %+v tokens %+v", u, u.Tokens)
	}

	// Unknown token: 401 in the OpenAI error shape.
	resp, body = gwPost(t, c, "/v1/responses", "Authorization", "Bearer sk-nope", `{}`)
	if resp.StatusCode != http.StatusUnauthorized || gwGet(gwJSON(t, body), "error", "type") != "authentication_error" {
		t.Errorf("unknown token: %d %s", resp.StatusCode, body)
	}
}

func gwJSON(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

// TestScriptedPrompt: promptMatches sees the user's own text only, not the skill listing,
// the agent's tagged insertions or what comes after the first tool result.
func TestScriptedPrompt(t *testing.T) {
	c1, err := parseAnthropicRequest(gwSample(t, "claude-code-request-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if c1.prompt != "SCENARIO:skill Please use the demo skill." {
		t.Errorf("claude request 1: prompt %q", c1.prompt)
	}
	c2, err := parseAnthropicRequest(gwSample(t, "claude-code-request-2-after-skill.json"))
	if err != nil {
		t.Fatal(err)
	}
	if c2.prompt != c1.prompt {
		t.Errorf("claude request 2: prompt %q; the skill body after the tool result is not the prompt", c2.prompt)
	}
	x1, err := parseResponsesRequest(gwSample(t, "codex-exec-request-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if x1.prompt != "Use $demo now." {
		t.Errorf("codex request: prompt %q", x1.prompt)
	}
	x2, err := parseResponsesRequest([]byte(`{"input":"just a string"}`))
	if err != nil || x2.prompt != "just a string" {
		t.Errorf("string input: prompt %q, %v", x2.prompt, err)
	}

	sm, err := newScriptedModel(&suite.Script{Rules: []suite.ScriptRule{
		// "Visualize" is in dataviz's description in the listing, not in the prompt.
		{When: &suite.ScriptWhen{PromptMatches: gwPtr("(?i)visualize")}, Reply: []suite.ScriptBlock{{Text: gwPtr("listing")}}},
		{When: &suite.ScriptWhen{PromptMatches: gwPtr("(?i)^scenario:skill"), SkillListed: gwPtr("demo")}, Reply: []suite.ScriptBlock{{Text: gwPtr("prompt")}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.ToLower(c1.text), "visualiz") {
		t.Fatal("the sample no longer lists dataviz's description; pick another word")
	}
	if r := sm.pick(c1); r == nil || *r.Reply[0].Text != "prompt" {
		t.Errorf("claude request 1 picked %+v, want the prompt rule", r)
	}
	if r := sm.pick(x1); r != nil {
		t.Errorf("codex request picked %+v, want none", r)
	}

	if _, err := newScriptedModel(&suite.Script{Rules: []suite.ScriptRule{
		{When: &suite.ScriptWhen{PromptMatches: gwPtr("(")}, Reply: []suite.ScriptBlock{{Text: gwPtr("x")}}},
	}}); err == nil || !strings.Contains(err.Error(), "promptMatches") {
		t.Errorf("a bad promptMatches: %v", err)
	}
}

// TestScriptedLastToolResult: {{lastToolResult}} in a text block is the text of the last
// tool result, in both wire formats, without Claude Code's system reminders.
func TestScriptedLastToolResult(t *testing.T) {
	script := &suite.Script{Rules: []suite.ScriptRule{{
		Reply: []suite.ScriptBlock{{Text: gwPtr("Done.\n{{lastToolResult}}\n(end)")}},
	}}}
	g := gwStart(t, GatewayConfig{Provider: "scripted", Script: script})
	c := gwUnixClient(g.Socket())
	tok := g.NewCellToken("cell")

	anthropic := `{"model":"m","stream":true,"messages":[
		{"role":"user","content":[{"type":"text","text":"<system-reminder>r</system-reminder>"},{"type":"text","text":"do it"}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"echo one"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"FIRST"}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"echo two"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"SECOND line 1\nline 2\n\n<system-reminder>\n<total_tokens>99 tokens left</total_tokens>\n</system-reminder>"}]}]}]}`
	_, body := gwPost(t, c, "/v1/messages", "x-api-key", tok, anthropic)
	evs := gwParseSSE(t, string(body))
	if len(evs) != 7 || gwGet(evs[3].data, "delta", "text") != "Done.\nSECOND line 1\nline 2\n(end)" {
		t.Errorf("anthropic reply:\n%s", body)
	}

	responses := `{"model":"m","stream":true,"input":[
		{"type":"message","role":"user","content":[{"type":"input_text","text":"do it"}]},
		{"type":"function_call","call_id":"c1","name":"exec_command","arguments":"{\"cmd\":\"echo hi\"}"},
		{"type":"function_call_output","call_id":"c1","output":"Chunk ID: 3f2a1b\nWall time: 0.0012 seconds\nProcess exited with code 0\nOriginal token count: 1\nOutput:\nHI\nOutput: not a header\n"}]}`
	_, body = gwPost(t, c, "/v1/responses", "Authorization", "Bearer "+tok, responses)
	evs = gwParseSSE(t, string(body))
	want := "Done.\nHI\nOutput: not a header\n(end)"
	if len(evs) != 5 || gwGet(evs[2].data, "delta") != want || gwGet(evs[4].data, "response", "output", 0, "content", 0, "text") != want {
		t.Errorf("responses reply:\n%s", body)
	}

	// No tool result yet: empty; the rule itself is never changed.
	_, body = gwPost(t, c, "/v1/messages", "x-api-key", tok, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	evs = gwParseSSE(t, string(body))
	if gwGet(evs[3].data, "delta", "text") != "Done.\n\n(end)" {
		t.Errorf("reply without a tool result:\n%s", body)
	}
	if *script.Rules[0].Reply[0].Text != "Done.\n{{lastToolResult}}\n(end)" {
		t.Errorf("the rule changed: %q", *script.Rules[0].Reply[0].Text)
	}
}
