package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/skillgate/skillgate/pipeline/suite"
)

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// sseWriter writes server-sent events, flushing each.
type sseWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error
}

func newSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
}

// event writes one event; its data is {"type": name} with fields after the type, as the
// APIs write them.
func (s *sseWriter) event(name string, fields map[string]any) {
	if s.err != nil {
		return
	}
	t, _ := json.Marshal(name)
	data := append([]byte(`{"type":`), t...)
	if len(fields) > 0 {
		b, err := json.Marshal(fields)
		if err != nil {
			s.err = err
			return
		}
		data = append(append(data, ','), b[1:]...)
	} else {
		data = append(data, '}')
	}
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, data); err != nil {
		s.err = err
		return
	}
	s.rc.Flush()
}

// toolInput is a block's input as JSON, {} when it has none.
func toolInput(b suite.ScriptBlock) json.RawMessage {
	if len(b.Input) == 0 {
		return json.RawMessage("{}")
	}
	j, err := json.Marshal(b.Input)
	if err != nil {
		return json.RawMessage("{}")
	}
	return j
}

type anthropicUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

type anthropicMessage struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Model        string           `json:"model"`
	Content      []map[string]any `json:"content"`
	StopReason   *string          `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        anthropicUsage   `json:"usage"`
}

// anthropic writes a Messages reply: an event stream as Claude Code asks, or one JSON.
func (s *scriptedModel) anthropic(w http.ResponseWriter, stream bool, blocks []suite.ScriptBlock, usage suite.ScriptUsage, call int) {
	msgID := fmt.Sprintf("msg_scripted_%04d", call)
	stop := "end_turn"
	content := make([]map[string]any, len(blocks))
	for i, b := range blocks {
		if b.Tool != "" {
			stop = "tool_use"
			content[i] = map[string]any{
				"type": "tool_use", "id": fmt.Sprintf("toolu_scripted_%04d_%d", call, i+1),
				"name": b.Tool, "input": toolInput(b),
			}
		} else {
			content[i] = map[string]any{"type": "text", "text": *b.Text}
		}
	}
	if !stream {
		writeJSON(w, anthropicMessage{
			ID: msgID, Type: "message", Role: "assistant", Model: s.model,
			Content: content, StopReason: &stop,
			Usage: anthropicUsage{InputTokens: usage.Input, OutputTokens: usage.Output},
		})
		return
	}
	sse := newSSE(w)
	sse.event("message_start", map[string]any{
		"message": anthropicMessage{
			ID: msgID, Type: "message", Role: "assistant", Model: s.model,
			Content: []map[string]any{},
			// As the API does: the output count here is a placeholder, message_delta
			// carries the real one.
			Usage: anthropicUsage{InputTokens: usage.Input, OutputTokens: min(1, usage.Output)},
		},
	})
	sse.event("ping", nil)
	for i, b := range blocks {
		var start, delta map[string]any
		if b.Tool != "" {
			start = map[string]any{"type": "tool_use", "id": content[i]["id"], "name": b.Tool, "input": map[string]any{}}
			delta = map[string]any{"type": "input_json_delta", "partial_json": string(toolInput(b))}
		} else {
			start = map[string]any{"type": "text", "text": ""}
			delta = map[string]any{"type": "text_delta", "text": *b.Text}
		}
		sse.event("content_block_start", map[string]any{"index": i, "content_block": start})
		sse.event("content_block_delta", map[string]any{"index": i, "delta": delta})
		sse.event("content_block_stop", map[string]any{"index": i})
	}
	sse.event("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]int64{"output_tokens": usage.Output},
	})
	sse.event("message_stop", nil)
}

type responsesUsage struct {
	InputTokens        int64            `json:"input_tokens"`
	InputTokensDetails map[string]int64 `json:"input_tokens_details"`
	OutputTokens       int64            `json:"output_tokens"`
	OutputTokenDetails map[string]int64 `json:"output_tokens_details"`
	TotalTokens        int64            `json:"total_tokens"`
}

type responsesObject struct {
	ID        string           `json:"id"`
	Object    string           `json:"object"`
	CreatedAt int64            `json:"created_at"`
	Model     string           `json:"model"`
	Status    string           `json:"status"`
	Output    []map[string]any `json:"output"`
	Usage     *responsesUsage  `json:"usage,omitempty"`
}

// responses writes a Responses reply: an event stream as Codex asks, or one JSON.
func (s *scriptedModel) responses(w http.ResponseWriter, stream bool, blocks []suite.ScriptBlock, usage suite.ScriptUsage, call int) {
	resp := responsesObject{
		ID:        fmt.Sprintf("resp_scripted_%04d", call),
		Object:    "response",
		CreatedAt: time.Now().Unix(),
		Model:     s.model,
		Status:    "in_progress",
		Output:    []map[string]any{},
	}
	items := make([]map[string]any, len(blocks))
	for i, b := range blocks {
		if b.Tool != "" {
			items[i] = map[string]any{
				"type": "function_call", "id": fmt.Sprintf("fc_scripted_%04d_%d", call, i+1),
				"call_id": fmt.Sprintf("call_scripted_%04d_%d", call, i+1),
				"name":    b.Tool, "arguments": string(toolInput(b)), "status": "completed",
			}
		} else {
			items[i] = map[string]any{
				"type": "message", "id": fmt.Sprintf("msg_scripted_%04d_%d", call, i+1),
				"role": "assistant", "status": "completed",
				"content": []map[string]any{{"type": "output_text", "text": *b.Text, "annotations": []any{}}},
			}
		}
	}
	done := resp
	done.Status = "completed"
	done.Output = items
	done.Usage = &responsesUsage{
		InputTokens:        usage.Input,
		InputTokensDetails: map[string]int64{"cached_tokens": 0},
		OutputTokens:       usage.Output,
		OutputTokenDetails: map[string]int64{"reasoning_tokens": 0},
		TotalTokens:        usage.Input + usage.Output,
	}
	if !stream {
		writeJSON(w, done)
		return
	}
	sse := newSSE(w)
	seq := 0
	emit := func(typ string, fields map[string]any) {
		fields["sequence_number"] = seq
		seq++
		sse.event(typ, fields)
	}
	emit("response.created", map[string]any{"response": resp})
	for i, item := range items {
		added := map[string]any{}
		for k, v := range item {
			added[k] = v
		}
		added["status"] = "in_progress"
		if item["type"] == "message" {
			added["content"] = []any{}
		} else {
			added["arguments"] = ""
		}
		emit("response.output_item.added", map[string]any{"output_index": i, "item": added})
		if item["type"] == "message" {
			emit("response.output_text.delta", map[string]any{
				"item_id": item["id"], "output_index": i, "content_index": 0, "delta": *blocks[i].Text,
			})
		}
		emit("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	emit("response.completed", map[string]any{"response": done})
}
