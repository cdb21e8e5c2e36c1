package standin

import (
	"encoding/json"
	"fmt"
	"strings"
)

// isGemini reports whether a path is one of the Gemini API's model calls.
func isGemini(p string) bool {
	return strings.HasPrefix(p, "/v1beta/models/") && strings.Contains(p, ":")
}

// standInGemini is a streamGenerateContent stream (alt=sse) answering text:
// the text in two events, the last with the finish reason and the usage.
func standInGemini(text string, cached int64) []string {
	half := len(text) / 2
	ev := func(part string, last bool) string {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": part}}}, "index": 0}
		r := map[string]any{"candidates": []any{cand}, "modelVersion": "stand-in-model", "responseId": "resp_standin"}
		if last {
			cand["finishReason"] = "STOP"
			r["usageMetadata"] = map[string]any{"promptTokenCount": Input, "candidatesTokenCount": Output,
				"cachedContentTokenCount": cached, "totalTokenCount": Input + Output}
		}
		b, _ := json.Marshal(r)
		return "data: " + string(b) + "\r\n\r\n"
	}
	return []string{ev(text[:half], false), ev(text[half:], true)}
}

// standInGeminiJSON is a generateContent reply answering text.
func standInGeminiJSON(text string, cached int64) string {
	return fmt.Sprintf(`{"candidates":[{"content":{"role":"model","parts":[{"text":%q}]},"finishReason":"STOP","index":0}],`+
		`"usageMetadata":{"promptTokenCount":%d,"candidatesTokenCount":%d,"cachedContentTokenCount":%d,"totalTokenCount":%d},"modelVersion":"stand-in-model"}`,
		text, Input, Output, cached, Input+Output)
}

// standInChat is a streamed Chat Completions reply answering text: the
// role, the text, the finish reason, the usage, then [DONE].
func standInChat(text string, cached int64) []string {
	chunk := func(choices []any, usage any) string {
		b, _ := json.Marshal(map[string]any{"id": "chatcmpl-standin", "object": "chat.completion.chunk", "model": "stand-in-model",
			"choices": choices, "usage": usage})
		return "data: " + string(b) + "\n\n"
	}
	choice := func(delta map[string]any, finish any) []any {
		return []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}
	}
	return []string{
		chunk(choice(map[string]any{"role": "assistant", "content": ""}, nil), nil),
		chunk(choice(map[string]any{"content": text}, nil), nil),
		chunk(choice(map[string]any{}, "stop"), nil),
		chunk([]any{}, map[string]any{"prompt_tokens": Input, "completion_tokens": Output, "total_tokens": Input + Output,
			"prompt_tokens_details": map[string]any{"cached_tokens": cached}}),
		"data: [DONE]\n\n",
	}
}

// geminiError is the Gemini API's error body; a refused key (typ
// API_KEY_INVALID) is a 400 INVALID_ARGUMENT with that reason in its details.
func geminiError(status int, typ, msg string) string {
	e := map[string]any{"code": status, "message": msg, "status": typ}
	if typ == "API_KEY_INVALID" {
		e["status"] = "INVALID_ARGUMENT"
		e["details"] = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com"}}
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	return string(b)
}
