package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/skillgate/skillgate/pipeline/suite"
)

// parseChatRequest reads an OpenAI-compatible Chat Completions request body:
// system and developer messages, the user's, the assistant's with their tool
// calls, and tool messages, each one tool result.
func parseChatRequest(body []byte) (*scriptRequest, error) {
	var m struct {
		Stream   bool `json:"stream"`
		Messages []struct {
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			ToolCalls []struct {
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("read chat completions request: %w", err)
	}
	var c textCollector
	for _, msg := range m.Messages {
		switch msg.Role {
		case "tool":
			var r textCollector
			r.content(msg.Content)
			c.promptDone = true
			c.toolResults++
			c.lastToolResult = toolOutput(strings.Join(r.parts, "\n"))
			c.parts = append(c.parts, r.parts...)
			continue
		case "assistant":
			for _, tc := range msg.ToolCalls {
				c.add(tc.Function.Name)
				c.add(tc.Function.Arguments)
			}
		}
		c.message(msg.Role, msg.Content)
		c.content(msg.Content)
	}
	return c.request(m.Stream), nil
}

// chatModelCall answers a Chat Completions request, streamed or not.
func (s *scriptedModel) chatModelCall(w http.ResponseWriter, body []byte, call int) {
	req, err := parseChatRequest(body)
	if err != nil {
		gatewayError(w, "openai", http.StatusBadRequest, "invalid_request_error", "scripted model: "+err.Error())
		return
	}
	blocks, usage := s.reply(req)
	s.chat(w, req.stream, blocks, usage, call)
}

// chat writes a Chat Completions reply: one chat.completion, or a stream of
// chunks (the text, each tool call, the finish reason, the usage) ending in
// [DONE].
func (s *scriptedModel) chat(w http.ResponseWriter, stream bool, blocks []suite.ScriptBlock, usage suite.ScriptUsage, call int) {
	id := fmt.Sprintf("chatcmpl-scripted-%04d", call)
	created := time.Now().Unix()
	var text []string
	var calls []map[string]any
	for i, b := range blocks {
		if b.Tool != "" {
			calls = append(calls, map[string]any{
				"index": len(calls), "id": fmt.Sprintf("call_scripted_%04d_%d", call, i+1), "type": "function",
				"function": map[string]any{"name": b.Tool, "arguments": string(toolInput(b))},
			})
		} else {
			text = append(text, *b.Text)
		}
	}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	u := map[string]int64{"prompt_tokens": usage.Input, "completion_tokens": usage.Output, "total_tokens": usage.Input + usage.Output}
	message := map[string]any{"role": "assistant", "content": nil}
	if len(text) > 0 {
		message["content"] = strings.Join(text, "\n")
	}
	if len(calls) > 0 {
		message["tool_calls"] = calls
	}
	if !stream {
		for _, c := range calls {
			delete(c, "index")
		}
		writeJSON(w, map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": s.model,
			"choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": finish}},
			"usage":   u,
		})
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	chunk := func(choices []any, usage any) {
		b, _ := json.Marshal(map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": s.model,
			"choices": choices, "usage": usage,
		})
		fmt.Fprintf(w, "data: %s\n\n", b)
		rc.Flush()
	}
	choice := func(delta map[string]any, finish any) []any {
		return []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}
	}
	chunk(choice(map[string]any{"role": "assistant", "content": ""}, nil), nil)
	if len(text) > 0 {
		chunk(choice(map[string]any{"content": strings.Join(text, "\n")}, nil), nil)
	}
	for _, c := range calls {
		chunk(choice(map[string]any{"tool_calls": []any{c}}, nil), nil)
	}
	chunk(choice(map[string]any{}, finish), nil)
	chunk([]any{}, u)
	fmt.Fprint(w, "data: [DONE]\n\n")
	rc.Flush()
}
