package runner

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/skillgate/skillgate/pipeline"
)

// GatewaySocket is the name of the gateway's socket in its folder. The folder is mounted
// read-only into every cell at /skillgate, where the forwarder finds the socket.
const GatewaySocket = "gateway.sock"

// gatewayMaxBody bounds a request body the gateway reads (it needs the model asked).
const gatewayMaxBody = 64 << 20

// GatewayConfig configures one run's model gateway.
type GatewayConfig struct {
	// Dir is the folder of the socket; it is created if missing and made mode 0755, and
	// cells mount it read-only at /skillgate.
	Dir string
	// Provider is "anthropic", "openai" or "scripted".
	Provider string
	// Upstream is the base URL of the real provider, such as "https://api.anthropic.com";
	// a request for /v1/messages goes to Upstream + "/v1/messages".
	Upstream string
	// APIKey is the real credential. It stays in the gateway: it is sent only to Upstream,
	// never logged, never stored, never given to a cell.
	APIKey string
	// Script is what the scripted provider answers.
	Script *pipeline.Script
	// Prices turn token counts into USD; nil means no USD figures.
	Prices *pipeline.Prices
	// SpendCapUSD is the run's spend cap; 0 means none.
	SpendCapUSD float64
}

// CellUsage is what one cell asked of the model through the gateway.
type CellUsage struct {
	// Requests counts the model calls (POST requests) answered for the cell.
	Requests int `json:"requests"`
	// ModelAsked and ModelAnswered are the models named in the requests and in the
	// responses; distinct names in order of first use, joined by ", ".
	ModelAsked    string `json:"modelAsked,omitempty"`
	ModelAnswered string `json:"modelAnswered,omitempty"`
	// Tokens are summed over the responses that reported usage; nil if none did. Input
	// counts uncached input tokens for both providers (OpenAI's cached tokens are moved to
	// CacheRead), so prices apply alike.
	Tokens *pipeline.Tokens `json:"tokens,omitempty"`
	// LatencySeconds sums the time from each request's arrival to the end of its response.
	LatencySeconds float64 `json:"latencySeconds"`
	// USD is the cost of Tokens at the configured per-token prices; nil without such
	// prices or without token counts, never a made-up 0.
	USD *float64 `json:"usd,omitempty"`
}

// Gateway is the host side of the cells' only way out: an HTTP server on a unix socket
// that authenticates each request by its cell's dummy key, forwards it to the provider
// with the real key (or answers it with the scripted model), and records per cell the
// models, tokens, latency and cost. Only model endpoints are forwarded (see
// modelEndpoint); a HEAD probe of anything else is answered 200 locally. It is safe for
// concurrent use.
type Gateway struct {
	cfg      GatewayConfig
	family   string // wire format of a real provider: "anthropic" or "openai"
	upstream *url.URL
	socket   string
	ln       net.Listener
	srv      *http.Server
	proxy    *httputil.ReverseProxy
	scripted *scriptedModel
	served   chan struct{}

	mu     sync.Mutex
	tokens map[string]*gatewayCell // dummy key → cell
	cells  map[string]*gatewayCell // cell name → cell
	closed bool
}

// gatewayCell is the record of one cell.
type gatewayCell struct {
	name     string
	requests int
	asked    []string
	answered []string
	tokens   *pipeline.Tokens
	latency  time.Duration
	calls    int // scripted replies given, for deterministic ids
}

// StartGateway listens on Dir/gateway.sock and serves until Close.
func StartGateway(cfg GatewayConfig) (*Gateway, error) {
	g := &Gateway{
		cfg:    cfg,
		tokens: map[string]*gatewayCell{},
		cells:  map[string]*gatewayCell{},
		served: make(chan struct{}),
	}
	switch cfg.Provider {
	case "anthropic", "openai":
		g.family = cfg.Provider
		if cfg.APIKey == "" {
			return nil, fmt.Errorf("start gateway: provider %s needs an API key", cfg.Provider)
		}
		u, err := url.Parse(cfg.Upstream)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("start gateway: upstream %q is not an http(s) URL", cfg.Upstream)
		}
		u.Path = strings.TrimRight(u.Path, "/")
		u.RawPath = ""
		g.upstream = u
		tr := http.DefaultTransport.(*http.Transport).Clone()
		g.proxy = &httputil.ReverseProxy{
			Rewrite:       g.rewrite,
			Transport:     tr,
			FlushInterval: -1, // stream: flush after every write
			ErrorLog:      log.New(io.Discard, "", 0),
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				if errors.Is(err, context.Canceled) {
					return // the cell went away
				}
				gatewayError(w, g.family, http.StatusBadGateway, "api_error", "skillgate gateway: upstream: "+err.Error())
			},
		}
	case "scripted":
		sm, err := newScriptedModel(cfg.Script)
		if err != nil {
			return nil, fmt.Errorf("start gateway: %w", err)
		}
		g.scripted = sm
	default:
		return nil, fmt.Errorf("start gateway: unknown provider %q (want anthropic, openai or scripted)", cfg.Provider)
	}
	if cfg.SpendCapUSD < 0 {
		return nil, fmt.Errorf("start gateway: negative spend cap %v", cfg.SpendCapUSD)
	}

	if cfg.Dir == "" {
		return nil, errors.New("start gateway: no folder for the socket")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("start gateway: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("start gateway: %w", err)
	}
	// The cell's user must be able to reach the socket through the mounted folder.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, fmt.Errorf("start gateway: %w", err)
	}
	g.socket = filepath.Join(dir, GatewaySocket)
	if len(g.socket) >= 108 {
		return nil, fmt.Errorf("start gateway: socket path %s is too long for a unix socket (%d bytes, at most 107)", g.socket, len(g.socket))
	}
	if err := os.Remove(g.socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("start gateway: remove stale socket: %w", err)
	}
	ln, err := net.Listen("unix", g.socket)
	if err != nil {
		return nil, fmt.Errorf("start gateway: %w", err)
	}
	if ul, ok := ln.(*net.UnixListener); ok {
		ul.SetUnlinkOnClose(true)
	}
	// Connecting needs write permission on the socket; the cell runs as another user.
	if err := os.Chmod(g.socket, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("start gateway: %w", err)
	}
	g.ln = ln
	g.srv = &http.Server{
		Handler:           http.HandlerFunc(g.serve),
		ReadHeaderTimeout: time.Minute,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() {
		defer close(g.served)
		g.srv.Serve(ln)
	}()
	return g, nil
}

// Socket is the host path of the gateway's unix socket.
func (g *Gateway) Socket() string { return g.socket }

// NewCellToken returns a fresh dummy API key for cell: "sk-skillgate-" and 32 hex digits.
// The cell's agent uses it as its API key, and the gateway attributes each request that
// carries it to cell. Several tokens of one cell share its record.
func (g *Gateway) NewCellToken(cell string) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("gateway: random token: %v", err)) // crypto/rand does not fail on Linux
	}
	tok := "sk-skillgate-" + hex.EncodeToString(b)
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.cells[cell]
	if c == nil {
		c = &gatewayCell{name: cell}
		g.cells[cell] = c
	}
	g.tokens[tok] = c
	return tok
}

// Usage reports what cell has used so far; the zero CellUsage for an unknown cell.
func (g *Gateway) Usage(cell string) CellUsage {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.cells[cell]
	if c == nil {
		return CellUsage{}
	}
	u := CellUsage{
		Requests:       c.requests,
		ModelAsked:     strings.Join(c.asked, ", "),
		ModelAnswered:  strings.Join(c.answered, ", "),
		LatencySeconds: c.latency.Seconds(),
		USD:            g.cost(c.tokens),
	}
	if c.tokens != nil {
		t := *c.tokens
		u.Tokens = &t
	}
	return u
}

// Spent is the USD spent so far by every cell, from reported tokens at the configured
// per-token prices (0 without them).
func (g *Gateway) Spent() float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	spent, _ := g.spentLocked()
	return spent
}

// spentLocked returns the total spend and the most any one cell cost.
func (g *Gateway) spentLocked() (total, maxCell float64) {
	for _, c := range g.cells {
		if usd := g.cost(c.tokens); usd != nil {
			total += *usd
			maxCell = max(maxCell, *usd)
		}
	}
	return total, maxCell
}

// CapReached reports whether one more cell could take the run past its spend cap: the
// spend so far plus the most any cell has cost so far (or the per-call price, if larger)
// exceeds the cap. The runner starts no further cell once it is true. Always false
// without a cap.
func (g *Gateway) CapReached() bool {
	if g.cfg.SpendCapUSD <= 0 {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	spent, next := g.spentLocked()
	if p := g.cfg.Prices; p != nil && p.PerCall != nil {
		next = max(next, *p.PerCall)
	}
	return spent+next > g.cfg.SpendCapUSD
}

// overCap reports whether the measured spend already exceeds the cap: then the gateway
// refuses model calls outright.
func (g *Gateway) overCap() bool {
	if g.cfg.SpendCapUSD <= 0 {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	spent, _ := g.spentLocked()
	return spent > g.cfg.SpendCapUSD
}

// cost prices t; nil without per-token prices or without tokens. A missing cache price
// falls back to the input price.
func (g *Gateway) cost(t *pipeline.Tokens) *float64 {
	p := g.cfg.Prices
	if t == nil || p == nil || (p.InputPerMTok == nil && p.OutputPerMTok == nil && p.CacheReadPerMTok == nil && p.CacheWritePerMTok == nil) {
		return nil
	}
	val := func(f *float64, fallback *float64) float64 {
		if f != nil {
			return *f
		}
		if fallback != nil {
			return *fallback
		}
		return 0
	}
	usd := (float64(t.Input)*val(p.InputPerMTok, nil) +
		float64(t.Output)*val(p.OutputPerMTok, nil) +
		float64(t.CacheRead)*val(p.CacheReadPerMTok, p.InputPerMTok) +
		float64(t.CacheWrite)*val(p.CacheWritePerMTok, p.InputPerMTok)) / 1e6
	return &usd
}

// Close stops the gateway: it stops accepting, gives requests in flight a few seconds,
// then cuts them, and removes the socket.
func (g *Gateway) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	g.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := g.srv.Shutdown(ctx)
	if err != nil {
		err = g.srv.Close()
	}
	<-g.served
	if rerr := os.Remove(g.socket); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
		err = rerr
	}
	return err
}

// cellToken returns the dummy key a request carries.
func cellToken(r *http.Request) string {
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return k
	}
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return ""
}

// wireFamily is the API whose formats a request and its response use.
func (g *Gateway) wireFamily(r *http.Request) string {
	if g.family != "" {
		return g.family
	}
	if strings.HasSuffix(r.URL.Path, "/responses") || strings.Contains(r.URL.Path, "/chat/completions") {
		return "openai"
	}
	return "anthropic"
}

func (g *Gateway) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	family := g.wireFamily(r)
	if g.scripted != nil && (r.Method == http.MethodHead || r.Method == http.MethodGet) {
		// Probes such as HEAD /api/hello: nothing to answer, nothing to forward.
		w.WriteHeader(http.StatusOK)
		return
	}
	if g.scripted == nil && r.Method == http.MethodHead && !modelEndpoint(r.Method, r.URL.Path) {
		w.WriteHeader(http.StatusOK) // a connectivity probe: answered here, not forwarded
		return
	}
	g.mu.Lock()
	c := g.tokens[cellToken(r)]
	g.mu.Unlock()
	if c == nil {
		gatewayError(w, family, http.StatusUnauthorized, "authentication_error", "skillgate gateway: unknown API key")
		return
	}
	if g.scripted == nil && !modelEndpoint(r.Method, r.URL.Path) {
		gatewayError(w, family, http.StatusForbidden, "permission_error",
			fmt.Sprintf("skillgate gateway: %s %s is not a model endpoint; only those are forwarded", r.Method, r.URL.Path))
		return
	}
	if g.overCap() {
		gatewayError(w, family, http.StatusBadRequest, "invalid_request_error",
			fmt.Sprintf("skillgate gateway: the run's spend cap of %.2f USD is reached", g.cfg.SpendCapUSD))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, gatewayMaxBody+1))
	if err != nil {
		gatewayError(w, family, http.StatusBadRequest, "invalid_request_error", "skillgate gateway: read request: "+err.Error())
		return
	}
	if len(body) > gatewayMaxBody {
		gatewayError(w, family, http.StatusRequestEntityTooLarge, "request_too_large", "skillgate gateway: request body over 64 MiB")
		return
	}
	var asked struct {
		Model string `json:"model"`
	}
	json.Unmarshal(body, &asked)

	ow := &observingWriter{ResponseWriter: w, obs: newUsageObserver(family)}
	counted := r.Method == http.MethodPost
	if g.scripted != nil {
		var call int
		if counted {
			g.mu.Lock()
			c.calls++
			call = c.calls
			g.mu.Unlock()
		}
		g.scripted.serve(ow, r, body, call)
	} else {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		g.proxy.ServeHTTP(ow, r)
	}
	model, tokens := ow.obs.result()

	g.mu.Lock()
	defer g.mu.Unlock()
	if counted {
		c.requests++
	}
	c.latency += time.Since(start)
	c.asked = appendDistinct(c.asked, asked.Model)
	c.answered = appendDistinct(c.answered, model)
	if tokens != nil {
		if c.tokens == nil {
			c.tokens = &pipeline.Tokens{}
		}
		c.tokens.Input += tokens.Input
		c.tokens.Output += tokens.Output
		c.tokens.CacheRead += tokens.CacheRead
		c.tokens.CacheWrite += tokens.CacheWrite
	}
}

// modelEndpoint reports whether a cell may reach method path at the provider with the
// real key: model calls (Messages, Responses, Chat Completions, token counting) and model
// listings, nothing else (no files, batches, admin or telemetry endpoints).
func modelEndpoint(method, path string) bool {
	switch method {
	case http.MethodPost:
		for _, suffix := range []string{"/messages", "/messages/count_tokens", "/responses", "/chat/completions"} {
			if strings.HasSuffix(path, suffix) {
				return true
			}
		}
	case http.MethodGet, http.MethodHead:
		return strings.HasSuffix(path, "/models") || strings.Contains(path, "/models/")
	}
	return false
}

// rewrite turns a cell's request into the provider's: the dummy key out, the real one in.
func (g *Gateway) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(g.upstream)
	h := pr.Out.Header
	h.Del("X-Api-Key")
	h.Del("Authorization")
	// Uncompressed, so the response streams through unchanged and can be read for usage.
	h.Set("Accept-Encoding", "identity")
	if g.cfg.Provider == "anthropic" {
		h.Set("X-Api-Key", g.cfg.APIKey)
	} else {
		h.Set("Authorization", "Bearer "+g.cfg.APIKey)
	}
}

func appendDistinct(list []string, s string) []string {
	if s == "" {
		return list
	}
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// gatewayError answers with an error in the provider's format.
func gatewayError(w http.ResponseWriter, family string, status int, typ, msg string) {
	var v any
	if family == "openai" {
		v = map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": nil}}
	} else {
		v = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
	}
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// observingWriter passes a response through unchanged while its observer reads it.
type observingWriter struct {
	http.ResponseWriter
	obs         *usageObserver
	wroteHeader bool
}

func (o *observingWriter) WriteHeader(code int) {
	if !o.wroteHeader && code >= 200 {
		o.wroteHeader = true
		o.obs.start(code, o.Header().Get("Content-Type"))
	}
	o.ResponseWriter.WriteHeader(code)
}

func (o *observingWriter) Write(p []byte) (int, error) {
	if !o.wroteHeader {
		o.WriteHeader(http.StatusOK)
	}
	n, err := o.ResponseWriter.Write(p)
	o.obs.write(p[:n])
	return n, err
}

// Flush sends what is buffered to the cell at once (server-sent events).
func (o *observingWriter) Flush() {
	http.NewResponseController(o.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (o *observingWriter) Unwrap() http.ResponseWriter { return o.ResponseWriter }

// usageObserver reads a model response as it streams, server-sent events or one JSON
// body, for the model that answered and the tokens it reported.
type usageObserver struct {
	family string // "anthropic" or "openai"
	mode   int    // 0 ignore, 1 SSE, 2 JSON
	buf    []byte
	event  string
	data   []string
	broken bool // more than the observer keeps: stop reading

	model  string
	tokens *pipeline.Tokens
}

const (
	observeIgnore = iota
	observeSSE
	observeJSON
)

// observeMax bounds what the observer buffers of one event or one JSON body.
const observeMax = 32 << 20

func newUsageObserver(family string) *usageObserver {
	return &usageObserver{family: family}
}

func (u *usageObserver) start(status int, contentType string) {
	if status/100 != 2 {
		return
	}
	ct := strings.ToLower(contentType)
	switch {
	case strings.HasPrefix(ct, "text/event-stream"):
		u.mode = observeSSE
	case strings.Contains(ct, "json"):
		u.mode = observeJSON
	}
}

func (u *usageObserver) write(p []byte) {
	if u.mode == observeIgnore || u.broken {
		return
	}
	u.buf = append(u.buf, p...)
	if len(u.buf) > observeMax {
		u.broken, u.buf = true, nil
		return
	}
	if u.mode != observeSSE {
		return
	}
	for {
		i := bytes.IndexByte(u.buf, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimSuffix(string(u.buf[:i]), "\r")
		u.buf = u.buf[i+1:]
		u.line(line)
	}
	u.buf = bytes.Clone(u.buf) // do not pin the consumed prefix
}

// line takes one line of an event stream.
func (u *usageObserver) line(l string) {
	switch {
	case l == "":
		if len(u.data) > 0 {
			u.onEvent([]byte(strings.Join(u.data, "\n")))
		}
		u.event, u.data = "", nil
	case strings.HasPrefix(l, ":"):
	case strings.HasPrefix(l, "event:"):
		u.event = strings.TrimSpace(l[len("event:"):])
	case strings.HasPrefix(l, "data:"):
		d := l[len("data:"):]
		u.data = append(u.data, strings.TrimPrefix(d, " "))
	}
}

// wireUsage is a usage object of either provider's API.
type wireUsage struct {
	InputTokens   *int64 `json:"input_tokens"`
	OutputTokens  *int64 `json:"output_tokens"`
	CacheCreation *int64 `json:"cache_creation_input_tokens"`
	CacheRead     *int64 `json:"cache_read_input_tokens"`
	InputDetails  *struct {
		CachedTokens *int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	// Chat Completions.
	PromptTokens     *int64 `json:"prompt_tokens"`
	CompletionTokens *int64 `json:"completion_tokens"`
	PromptDetails    *struct {
		CachedTokens *int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// modelUsage is the part of an event or a body that names the model and its usage.
type modelUsage struct {
	Type     string      `json:"type"`
	Model    string      `json:"model"`
	Usage    *wireUsage  `json:"usage"`
	Message  *modelUsage `json:"message"`
	Response *modelUsage `json:"response"`
}

func (u *usageObserver) onEvent(data []byte) {
	var ev modelUsage
	if json.Unmarshal(data, &ev) != nil {
		return
	}
	switch ev.Type {
	case "message_start": // Anthropic
		if m := ev.Message; m != nil {
			u.setModel(m.Model)
			u.apply(m.Usage, true)
		}
	case "message_delta":
		u.apply(ev.Usage, false)
	case "response.created", "response.in_progress":
		if r := ev.Response; r != nil {
			u.setModel(r.Model)
		}
	case "response.completed", "response.incomplete", "response.failed", "response.done":
		if r := ev.Response; r != nil {
			u.setModel(r.Model)
			u.apply(r.Usage, true)
		}
	default:
		if ev.Type == "" || ev.Type == "chat.completion.chunk" { // Chat Completions stream
			u.setModel(ev.Model)
			u.apply(ev.Usage, true)
		}
	}
}

func (u *usageObserver) setModel(m string) {
	if m != "" {
		u.model = m
	}
}

// apply takes a usage object. A fresh one replaces what was seen; an Anthropic
// message_delta carries cumulative counts that replace only the fields it names.
func (u *usageObserver) apply(w *wireUsage, fresh bool) {
	if w == nil {
		return
	}
	if u.tokens == nil || fresh {
		u.tokens = &pipeline.Tokens{}
	}
	t := u.tokens
	set := func(dst *int64, src *int64) {
		if src != nil {
			*dst = *src
		}
	}
	if u.family == "openai" {
		var cached int64
		switch {
		case w.InputDetails != nil && w.InputDetails.CachedTokens != nil:
			cached = *w.InputDetails.CachedTokens
		case w.PromptDetails != nil && w.PromptDetails.CachedTokens != nil:
			cached = *w.PromptDetails.CachedTokens
		}
		in := w.InputTokens
		if in == nil {
			in = w.PromptTokens
		}
		out := w.OutputTokens
		if out == nil {
			out = w.CompletionTokens
		}
		if in != nil {
			t.Input = max(*in-cached, 0)
			t.CacheRead = cached
		}
		set(&t.Output, out)
		return
	}
	set(&t.Input, w.InputTokens)
	set(&t.Output, w.OutputTokens)
	set(&t.CacheRead, w.CacheRead)
	set(&t.CacheWrite, w.CacheCreation)
}

// result returns the answering model and the reported tokens (nil if none).
func (u *usageObserver) result() (string, *pipeline.Tokens) {
	switch u.mode {
	case observeSSE:
		if !u.broken && len(u.data) > 0 { // a last event without its blank line
			u.onEvent([]byte(strings.Join(u.data, "\n")))
			u.data = nil
		}
	case observeJSON:
		if !u.broken {
			var body modelUsage
			if json.Unmarshal(u.buf, &body) == nil {
				u.setModel(body.Model)
				if body.Response != nil { // a wrapped Responses object
					u.setModel(body.Response.Model)
					u.apply(body.Response.Usage, true)
				}
				u.apply(body.Usage, true)
			}
		}
	}
	return u.model, u.tokens
}
