package gateway

import (
	"encoding/json"
	"testing"

	"github.com/skillgate/skillgate/pipeline/suite"
)

// TestScriptedPromptAfterOtherItems: an input item that is neither a
// message nor a tool call (the additional_tools item the pinned Codex CLI
// sends before the user's turn, a reasoning item) does not end the prompt,
// so promptMatches sees the user's text; a tool call or its output still
// does.
func TestScriptedPromptAfterOtherItems(t *testing.T) {
	var req map[string]json.RawMessage
	if err := json.Unmarshal(gwSample(t, "codex-exec-request-1.json"), &req); err != nil {
		t.Fatal(err)
	}
	var input []json.RawMessage
	if err := json.Unmarshal(req["input"], &input); err != nil {
		t.Fatal(err)
	}
	extra := json.RawMessage(`{"type":"additional_tools","tools":[{"type":"function","name":"list_mcp_resources","parameters":{"type":"object"}}]}`)
	withTools := append([]json.RawMessage{extra}, input...)
	afterCall := append(append([]json.RawMessage{}, input[:2]...), json.RawMessage(`{"type":"function_call","name":"exec_command","arguments":"{}","call_id":"c1"}`))
	afterCall = append(afterCall, input[2:]...)
	sm, err := newScriptedModel(&suite.Script{Rules: []suite.ScriptRule{
		{When: &suite.ScriptWhen{PromptMatches: gwPtr(`^Use \$demo now\.$`)}, Reply: []suite.ScriptBlock{{Text: gwPtr("matched")}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		items  []json.RawMessage
		prompt string
	}{
		{"additional_tools first", withTools, "Use $demo now."},
		{"a tool call before the user's turn", afterCall, ""},
	} {
		req["input"], _ = json.Marshal(tc.items)
		body, _ := json.Marshal(req)
		r, err := parseResponsesRequest(body)
		if err != nil {
			t.Fatal(err)
		}
		if r.prompt != tc.prompt {
			t.Errorf("%s: prompt %q, want %q", tc.name, r.prompt, tc.prompt)
		}
		if got := sm.pick(r) != nil; got != (tc.prompt != "") {
			t.Errorf("%s: promptMatches matched %v", tc.name, got)
		}
	}
}
