package gateway

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
)

// startProvider readies the gateway to forward to a real provider: its
// family, upstream, auth, and a transport that retries and bounds stalls.
func (g *Gateway) startProvider() error {
	cfg := &g.cfg
	g.family = cfg.Provider
	if cfg.APIKey == "" {
		return fmt.Errorf("start gateway: provider %s needs an API key", cfg.Provider)
	}
	u, err := ParseUpstream(cfg.Upstream)
	if err != nil {
		return fmt.Errorf("start gateway: %w", err)
	}
	g.upstream = u
	switch cfg.Auth {
	case "", "x-api-key", "bearer", "oauth", "api-key", "x-goog-api-key":
	default:
		return fmt.Errorf("start gateway: unknown auth %q (want x-api-key, bearer, oauth, api-key or x-goog-api-key)", cfg.Auth)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// HTTP/2 to an HTTPS provider that offers it (the providers' endpoints
	// do): concurrent cells share a connection instead of a TLS handshake
	// each. Setting TLSClientConfig below would turn it off unless forced.
	tr.ForceAttemptHTTP2 = true
	tr.MaxIdleConnsPerHost = max(cfg.Conns, 2)
	tr.MaxIdleConns = max(tr.MaxIdleConns, tr.MaxIdleConnsPerHost)
	if cfg.RootCAs != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: cfg.RootCAs}
	}
	if cfg.Retry.Attempts < 1 || cfg.Retry.Delay <= 0 || cfg.Retry.MaxDelay <= 0 {
		return fmt.Errorf("start gateway: retry policy %+v: want at least one attempt and positive delays", cfg.Retry)
	}
	g.transport = &faultTransport{base: tr, retry: cfg.Retry, stall: cfg.Stall}
	g.proxy = &httputil.ReverseProxy{
		Rewrite:       g.rewrite,
		Transport:     g.transport,
		FlushInterval: -1, // stream: flush after every write
		ErrorLog:      log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the cell went away
			}
			if ex, _ := r.Context().Value(exchangeKey{}).(*exchange); ex != nil && ex.isStalled() {
				gatewayError(w, g.family, http.StatusGatewayTimeout, "api_error", fmt.Sprintf("skillgate gateway: the provider sent nothing for %s", cfg.Stall))
				return
			}
			gatewayError(w, g.family, http.StatusBadGateway, "api_error", "skillgate gateway: upstream: "+err.Error())
		},
	}
	return nil
}

// ParseUpstream reads a provider's base URL, with or without its "/v1"
// (ANTHROPIC_BASE_URL is usually written without it, OPENAI_BASE_URL with
// it): the gateway appends the API's own paths, /v1 included, to what is
// left.
func ParseUpstream(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("upstream %q is not an http(s) URL (such as https://api.anthropic.com)", s)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("upstream %q: a base URL has no query or fragment", s)
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1")
	u.RawPath = ""
	if strings.HasSuffix(u.Path, "/v1") {
		fixed := *u
		fixed.Path = strings.TrimSuffix(u.Path, "/v1") + "/v1"
		return nil, fmt.Errorf("upstream %q names /v1 twice, so requests would go to /v1/v1/...: write %q", s, fixed.String())
	}
	return u, nil
}

// cellToken returns the dummy key a request carries: in x-api-key,
// x-goog-api-key, a bearer token, or Gemini's key= query parameter.
func cellToken(r *http.Request) string {
	for _, name := range []string{"X-Api-Key", "X-Goog-Api-Key"} {
		if k := r.Header.Get(name); k != "" {
			return k
		}
	}
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return r.URL.Query().Get("key")
}

// withoutKey is a request target without the key= parameters of its query,
// as the gateway records it.
func withoutKey(target string) string {
	p, q, ok := strings.Cut(target, "?")
	if !ok {
		return target
	}
	if q = dropKey(q); q == "" {
		return p
	}
	return p + "?" + q
}

// dropKey is a query without its key= parameters: the cell's dummy key,
// which the real one's header replaces.
func dropKey(q string) string {
	if q == "" {
		return q
	}
	var kept []string
	for _, kv := range strings.Split(q, "&") {
		if name, _, _ := strings.Cut(kv, "="); name != "key" {
			kept = append(kept, kv)
		}
	}
	return strings.Join(kept, "&")
}

// wireFamily is the API whose formats a request and its response use.
func (g *Gateway) wireFamily(r *http.Request) string {
	if g.family != "" {
		return g.family
	}
	if isGeminiPath(r.URL.Path) {
		return "gemini"
	}
	if strings.HasSuffix(r.URL.Path, "/responses") || strings.Contains(r.URL.Path, "/chat/completions") {
		return "openai"
	}
	return "anthropic"
}

// rewrite turns a cell's request into the provider's: the dummy key out, the real one in.
func (g *Gateway) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(g.upstream) // the path and query are the matched endpoint's (serve)
	h := pr.Out.Header
	h.Del("X-Api-Key")
	h.Del("X-Goog-Api-Key")
	h.Del("Authorization")
	// Uncompressed, so the response streams through unchanged and can be read for usage.
	h.Set("Accept-Encoding", "identity")
	g.authorize(h)
	if ex, _ := pr.In.Context().Value(exchangeKey{}).(*exchange); ex != nil {
		ex.set(func() { ex.sent = h.Clone() })
	}
}

// gatewayError answers with an error in the provider's format.
func gatewayError(w http.ResponseWriter, family string, status int, typ, msg string) {
	var v any
	switch family {
	case "openai":
		v = map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": nil}}
	case "gemini":
		v = map[string]any{"error": map[string]any{"code": status, "message": msg, "status": geminiStatus(status)}}
	default:
		v = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
	}
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// geminiStatus is the Gemini API's status name for an HTTP status.
func geminiStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusRequestEntityTooLarge, http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	}
	return "INTERNAL"
}
