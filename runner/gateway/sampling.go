package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Sampling is what the gateway sets in a model request on its way to the
// provider, for the sampling controls the agent's CLI has no flag for: the
// suite's (or the case's) temperature and reasoning effort. Nil fields are
// left as the agent sent them.
type Sampling struct {
	Temperature *float64 `json:"temperature,omitempty"`
	// Effort is the reasoning effort: Anthropic's output_config.effort,
	// the Responses API's reasoning.effort, Chat Completions'
	// reasoning_effort, Gemini's generationConfig.thinkingConfig.thinkingLevel.
	Effort string `json:"effort,omitempty"`
}

// empty reports whether s sets nothing.
func (s *Sampling) empty() bool { return s == nil || (s.Temperature == nil && s.Effort == "") }

// samplingPaths are the model calls whose sampling fields the gateway sets,
// with where each API keeps the reasoning effort.
var samplingPaths = map[string][]string{
	"/v1/messages":         {"output_config", "effort"},
	"/v1/responses":        {"reasoning", "effort"},
	"/v1/chat/completions": {"reasoning_effort"},
}

// applySampling sets s in a model request's JSON body. It returns the body
// to forward and what it set; a body it cannot read, or an endpoint that
// samples nothing (token counting, model lists), is left as it is.
func applySampling(path string, body []byte, s *Sampling) ([]byte, *Sampling, error) {
	if !s.empty() && isGeminiPath(path) && !strings.HasSuffix(path, geminiCount) {
		return applyGeminiSampling(body, s)
	}
	effortAt, ok := samplingPaths[path]
	if s.empty() || !ok {
		return body, nil, nil
	}
	var top map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&top); err != nil || top == nil {
		return body, nil, fmt.Errorf("set sampling: the request is not a JSON object")
	}
	set := &Sampling{}
	if s.Temperature != nil {
		t, _ := json.Marshal(*s.Temperature)
		top["temperature"] = t
		set.Temperature = s.Temperature
	}
	if s.Effort != "" {
		e, _ := json.Marshal(s.Effort)
		if len(effortAt) == 1 {
			top[effortAt[0]] = e
		} else {
			var inner map[string]json.RawMessage
			if raw, ok := top[effortAt[0]]; ok && strings.TrimSpace(string(raw)) != "null" {
				if err := json.Unmarshal(raw, &inner); err != nil {
					return body, nil, fmt.Errorf("set sampling: %s is not an object", effortAt[0])
				}
			}
			if inner == nil {
				inner = map[string]json.RawMessage{}
			}
			inner[effortAt[1]] = e
			b, err := marshalPlain(inner)
			if err != nil {
				return body, nil, fmt.Errorf("set sampling: %w", err)
			}
			top[effortAt[0]] = b
		}
		set.Effort = s.Effort
	}
	out, err := marshalPlain(top)
	if err != nil {
		return body, nil, fmt.Errorf("set sampling: %w", err)
	}
	return out, set, nil
}

// marshalPlain is JSON without the HTML escaping json.Marshal adds, so
// what the agent sent stays as it was outside the fields set.
func marshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
