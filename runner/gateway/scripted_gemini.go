package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/skillgate/skillgate/pipeline/suite"
)

// Gemini's generateContent API: POST /v1beta/models/MODEL:generateContent
// answers with one JSON; :streamGenerateContent?alt=sse with server-sent
// events, each a GenerateContentResponse; :countTokens counts.
const (
	geminiGenerate = ":generateContent"
	geminiStream   = ":streamGenerateContent"
	geminiCount    = ":countTokens"
)

// isGeminiPath reports whether a request path is one of Gemini's model calls.
func isGeminiPath(p string) bool {
	return strings.HasSuffix(p, geminiGenerate) || strings.HasSuffix(p, geminiStream) || strings.HasSuffix(p, geminiCount)
}

// geminiPart is a part of a Gemini content: text, a function call or a
// function's response.
type geminiPart struct {
	Text         *string `json:"text"`
	Thought      bool    `json:"thought"`
	FunctionCall *struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
	FunctionResponse *struct {
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

// geminiShellResult is the Gemini CLI's run_shell_command result as the model
// reads it: "Output: ..." then lines of exit code, signal and process group,
// the whole inside <untrusted_context> tags.
var geminiShellResult = regexp.MustCompile(`(?s)^(?:<untrusted_context>\s*)?Output: (.*?)(?:\n(?:Error|Exit Code|Signal|Background PIDs|Process Group PGID): [^\n]*)*\s*(?:</untrusted_context>)?$`)

// geminiResponseText is a function response's text: its output (or error)
// field when it has one, else the whole response.
func geminiResponseText(raw json.RawMessage) string {
	var r struct {
		Output *string `json:"output"`
		Error  *string `json:"error"`
	}
	if json.Unmarshal(raw, &r) == nil {
		switch {
		case r.Output != nil:
			if m := geminiShellResult.FindStringSubmatch(strings.TrimSpace(*r.Output)); m != nil {
				return m[1]
			}
			return *r.Output
		case r.Error != nil:
			return *r.Error
		}
	}
	return string(raw)
}

// parseGeminiRequest reads a generateContent request body. The prompt is the
// text of the last user content made of text alone (the CLI's own context,
// in a tag, left out), and only before the model answered it.
func parseGeminiRequest(body []byte, stream bool) (*scriptRequest, error) {
	var m struct {
		SystemInstruction *geminiContent  `json:"systemInstruction"`
		Contents          []geminiContent `json:"contents"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("read generateContent request: %w", err)
	}
	var c textCollector
	if si := m.SystemInstruction; si != nil {
		for _, p := range si.Parts {
			if p.Text != nil {
				c.add(*p.Text)
			}
		}
	}
	var prompt []string
	for _, content := range m.Contents {
		var texts []string
		userText := content.Role == "user"
		for _, p := range content.Parts {
			switch {
			case p.FunctionResponse != nil:
				userText = false
				c.toolResults++
				c.lastToolResult = toolOutput(geminiResponseText(p.FunctionResponse.Response))
				c.add(p.FunctionResponse.Name)
				c.add(string(p.FunctionResponse.Response))
			case p.FunctionCall != nil:
				c.add(p.FunctionCall.Name)
				c.add(string(p.FunctionCall.Args))
			case p.Text != nil && !p.Thought:
				c.add(*p.Text)
				if t := strings.TrimSpace(*p.Text); t != "" && !strings.HasPrefix(t, "<") {
					texts = append(texts, t)
				}
			}
		}
		switch {
		case userText && len(texts) > 0:
			prompt = texts
		case content.Role == "model":
			prompt = nil
		}
	}
	c.prompt = prompt
	return c.request(stream), nil
}

// geminiModelCall answers a generateContent request, streamed or not, or a
// countTokens request.
func (s *scriptedModel) geminiModelCall(w http.ResponseWriter, p string, body []byte, call int) {
	req, err := parseGeminiRequest(body, strings.HasSuffix(p, geminiStream))
	if err != nil {
		gatewayError(w, "gemini", http.StatusBadRequest, "INVALID_ARGUMENT", "scripted model: "+err.Error())
		return
	}
	if strings.HasSuffix(p, geminiCount) {
		writeJSON(w, map[string]int{"totalTokens": len(req.text) / 4})
		return
	}
	blocks, usage := s.reply(req)
	s.gemini(w, req.stream, blocks, usage, call)
}

// gemini writes a generateContent reply: one GenerateContentResponse, or a
// stream of them as server-sent events (alt=sse), each part its own event,
// the last with the finish reason and the usage.
func (s *scriptedModel) gemini(w http.ResponseWriter, stream bool, blocks []suite.ScriptBlock, usage suite.ScriptUsage, call int) {
	parts := make([]map[string]any, len(blocks))
	for i, b := range blocks {
		if b.Tool != "" {
			parts[i] = map[string]any{"functionCall": map[string]any{
				"id": fmt.Sprintf("call_scripted_%04d_%d", call, i+1), "name": b.Tool, "args": toolInput(b),
			}}
		} else {
			parts[i] = map[string]any{"text": *b.Text}
		}
	}
	respID := fmt.Sprintf("resp_scripted_%04d", call)
	meta := map[string]any{"promptTokenCount": usage.Input, "candidatesTokenCount": usage.Output, "totalTokenCount": usage.Input + usage.Output}
	response := func(parts []map[string]any, last bool) map[string]any {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		r := map[string]any{"candidates": []any{cand}, "modelVersion": s.model, "responseId": respID}
		if last {
			cand["finishReason"] = "STOP"
			r["usageMetadata"] = meta
		}
		return r
	}
	if !stream {
		writeJSON(w, response(parts, true))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	for i, p := range parts {
		b, _ := json.Marshal(response([]map[string]any{p}, i == len(parts)-1))
		if _, err := fmt.Fprintf(w, "data: %s\r\n\r\n", b); err != nil {
			return
		}
		rc.Flush()
	}
}
