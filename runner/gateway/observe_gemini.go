package gateway

import (
	"path"
	"strings"
)

// geminiUsage is a Gemini response's usageMetadata.
type geminiUsage struct {
	Prompt     *int64 `json:"promptTokenCount"`
	Candidates *int64 `json:"candidatesTokenCount"`
	Thoughts   *int64 `json:"thoughtsTokenCount"`
	Cached     *int64 `json:"cachedContentTokenCount"`
}

// geminiCandidate is what the observer reads of a Gemini response's candidate.
type geminiCandidate struct {
	FinishReason string `json:"finishReason"`
}

// gemini takes one GenerateContentResponse, a stream's event or a whole body:
// its model version, its usage (each event's counts so far, the last one's
// final) and its end (a candidate's finish reason).
func (u *usageObserver) gemini(ev *modelUsage) {
	u.setModel(ev.ModelVersion)
	for _, c := range ev.Candidates {
		if c.FinishReason != "" {
			u.done = true
		}
	}
	m := ev.UsageMetadata
	if m == nil {
		return
	}
	var prompt, cached, out int64
	for _, p := range []struct {
		dst *int64
		src *int64
	}{{&prompt, m.Prompt}, {&cached, m.Cached}, {&out, m.Candidates}} {
		if p.src != nil {
			*p.dst = *p.src
		}
	}
	if m.Thoughts != nil {
		out += *m.Thoughts
	}
	in := max(prompt-cached, 0)
	t := u.freshTokens()
	t.Input, t.CacheRead, t.Output = in, cached, out
	*u.raw = ProviderTokens{Convention: u.family, Input: prompt, Output: out, CacheRead: cached}
}

// geminiPathModel is the model a Gemini request names in its path
// (/v1beta/models/MODEL:generateContent), or "".
func geminiPathModel(p string) string {
	if !isGeminiPath(p) {
		return ""
	}
	m, _, _ := strings.Cut(path.Base(p), ":")
	return m
}
