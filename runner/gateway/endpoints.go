package gateway

import (
	"fmt"
	"net/http"
	"path"
	"strings"
)

// modelEndpoints are the only requests a cell can make of a real provider with the
// real key, by wire family: model calls, token counting and model listings. No files,
// batches, threads, admin or telemetry endpoint is reachable.
var modelEndpoints = map[string][]modelEndpoint{
	"anthropic": {
		{http.MethodPost, "/v1/messages"},
		{http.MethodPost, "/v1/messages/count_tokens"},
		{http.MethodGet, "/v1/models"},
		{http.MethodGet, "/v1/models/{id}"},
	},
	"openai": {
		{http.MethodPost, "/v1/responses"},
		{http.MethodPost, "/v1/chat/completions"},
		{http.MethodGet, "/v1/models"},
		{http.MethodGet, "/v1/models/{id}"},
	},
	// The Gemini API, in its v1beta and v1 versions: a model's
	// generateContent, streamed or not, its token count, and the listings.
	"gemini": {
		{http.MethodPost, "/v1beta/models/{id}:generateContent"},
		{http.MethodPost, "/v1beta/models/{id}:streamGenerateContent"},
		{http.MethodPost, "/v1beta/models/{id}:countTokens"},
		{http.MethodGet, "/v1beta/models"},
		{http.MethodGet, "/v1beta/models/{id}"},
		{http.MethodPost, "/v1/models/{id}:generateContent"},
		{http.MethodPost, "/v1/models/{id}:streamGenerateContent"},
		{http.MethodPost, "/v1/models/{id}:countTokens"},
		{http.MethodGet, "/v1/models"},
		{http.MethodGet, "/v1/models/{id}"},
	},
}

// modelEndpoint is one forwarded method and path; an "{id}" in the last
// segment stands for one model ID (followed by a method such as
// ":generateContent" in Gemini's paths).
type modelEndpoint struct {
	method, path string
}

// RefusedRequest is a request of a cell the gateway answered itself instead of
// forwarding it: with 403, not a model endpoint; with 413 or 429, over one of the
// cell's bounds (limits.gateway). It is the agent's own doing, never a provider
// fault, and never makes the cell invalid.
type RefusedRequest struct {
	Method string `json:"method"`
	// Path is the request target as sent, query included (at most 200 bytes).
	Path string `json:"path"`
	// Status and Reason say which bound refused it; absent for a path that is
	// no model endpoint.
	Status int    `json:"status,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// matchEndpoint checks a request target (r.RequestURI: the raw path and query as the
// cell sent them, before any decoding) against family's model endpoints. It returns
// the path and query to forward, or ok false. The path must be exactly an endpoint's:
// no percent-encoding at all, no "." or ".." segment, no empty segment or trailing
// slash, the case as written; the query may carry only plain name=value pairs (such
// as Claude Code's beta=true), so it cannot smuggle a path either.
func matchEndpoint(family, method, target string) (fwdPath, fwdQuery string, ok bool) {
	if !strings.HasPrefix(target, "/") {
		return "", "", false // absolute-form or asterisk-form
	}
	p, q, _ := strings.Cut(target, "?")
	if !plainPath(p) || !plainQuery(q) {
		return "", "", false
	}
	for _, e := range modelEndpoints[family] {
		if e.method != method {
			continue
		}
		if prefix, suffix, isID := strings.Cut(e.path, "{id}"); isID {
			id, found := strings.CutPrefix(p, prefix)
			if id, ok := strings.CutSuffix(id, suffix); found && ok && modelID(id) {
				return p, q, true
			}
		} else if p == e.path {
			return p, q, true
		}
	}
	return "", "", false
}

// plainPath: only unreserved characters and ':' (model IDs such as ft:gpt-4o:org:x),
// and a path that cleaning leaves unchanged.
func plainPath(p string) bool {
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("/-._~:", c) >= 0) {
			return false
		}
	}
	return path.Clean(p) == p && !strings.Contains(p, "//")
}

// plainQuery: name=value pairs of unreserved characters joined by '&'; no '/', '%'
// or anything else that could be read as a path.
func plainQuery(q string) bool {
	for i := 0; i < len(q); i++ {
		c := q[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~=&", c) >= 0) {
			return false
		}
	}
	return true
}

// modelID is one path segment naming a model.
func modelID(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.Contains(s, "/")
}

// endpointList names family's endpoints for a refusal's message.
func endpointList(family string) string {
	var parts []string
	for _, e := range modelEndpoints[family] {
		parts = append(parts, e.method+" "+e.path)
	}
	return strings.Join(parts, ", ")
}

// refuse answers a request that is not a model endpoint and records it for the cell.
func (g *Gateway) refuse(w http.ResponseWriter, r *http.Request, c *gatewayCell) {
	target := refusedTarget(r)
	g.recordRefusal(c, RefusedRequest{Method: r.Method, Path: target})
	gatewayError(w, g.family, http.StatusForbidden, "permission_error",
		fmt.Sprintf("skillgate gateway: %s %s is not a model endpoint of the %s API; only %s are forwarded",
			r.Method, target, g.family, endpointList(g.family)))
}

// refusedTarget is a refused request's target as a cell's usage lists it.
func refusedTarget(r *http.Request) string {
	target := withoutKey(r.RequestURI)
	if len(target) > 200 {
		target = target[:200]
	}
	return target
}

// recordRefusal lists a refused request in the cell's usage.
func (g *Gateway) recordRefusal(c *gatewayCell, ref RefusedRequest) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(c.refused) < maxRecorded {
		c.refused = append(c.refused, ref)
	} else {
		c.refusedDropped++
	}
}
