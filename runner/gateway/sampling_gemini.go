package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// applyGeminiSampling sets s in a generateContent request: the temperature at
// generationConfig.temperature, the reasoning effort at
// generationConfig.thinkingConfig.thinkingLevel.
func applyGeminiSampling(body []byte, s *Sampling) ([]byte, *Sampling, error) {
	top, err := jsonObject(body, "the request")
	if err != nil {
		return body, nil, err
	}
	cfg, err := jsonObject(top["generationConfig"], "generationConfig")
	if err != nil {
		return body, nil, err
	}
	set := &Sampling{}
	if s.Temperature != nil {
		cfg["temperature"], _ = json.Marshal(*s.Temperature)
		set.Temperature = s.Temperature
	}
	if s.Effort != "" {
		thinking, err := jsonObject(cfg["thinkingConfig"], "generationConfig.thinkingConfig")
		if err != nil {
			return body, nil, err
		}
		thinking["thinkingLevel"], _ = json.Marshal(s.Effort)
		if cfg["thinkingConfig"], err = marshalPlain(thinking); err != nil {
			return body, nil, fmt.Errorf("set sampling: %w", err)
		}
		set.Effort = s.Effort
	}
	if top["generationConfig"], err = marshalPlain(cfg); err != nil {
		return body, nil, fmt.Errorf("set sampling: %w", err)
	}
	out, err := marshalPlain(top)
	if err != nil {
		return body, nil, fmt.Errorf("set sampling: %w", err)
	}
	return out, set, nil
}

// jsonObject reads a JSON object, numbers kept as written; absent or null is
// an empty one.
func jsonObject(raw []byte, what string) (map[string]json.RawMessage, error) {
	obj := map[string]json.RawMessage{}
	if t := strings.TrimSpace(string(raw)); t == "" || t == "null" {
		return obj, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return nil, fmt.Errorf("set sampling: %s is not a JSON object", what)
	}
	return obj, nil
}
