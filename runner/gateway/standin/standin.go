// Package standin is a STAND-IN PROVIDER for tests, not a model: an HTTP
// server on 127.0.0.1 that speaks the streaming formats of the Anthropic
// Messages, OpenAI Responses and Chat Completions and Gemini generateContent
// APIs, so the gateway and the real agent
// CLIs can be tested with no model reachable, as net/http/httptest lets a
// test start a server. It is test support, not part of skillgate.
package standin

import (
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a STAND-IN PROVIDER for tests, not a model: an httptest server on
// 127.0.0.1 (plain or TLS) that speaks the Anthropic Messages and OpenAI Responses
// streaming formats (server-sent events, usage included: message_start … message_stop,
// response.created … response.completed) and lists models, with faults on demand: a
// status with the provider's error JSON, N failures then success, a stall or an abort
// mid-stream, a reset before the first byte. It counts what it served.
type Server struct {
	*httptest.Server
	t *testing.T

	mu       sync.Mutex
	served   map[string]int // "POST /v1/messages" → requests received
	keys     []string       // the credential of each request
	faults   []Fault
	always   *Fault // every model call, after faults
	models   *Fault // GET /v1/models
	text     string // the reply's text
	cached   int64  // cache-read tokens each reply reports
	model    string // the model a Messages reply says answered; "" for stand-in-model
	received []Request
	released chan struct{} // closed on Close: stalls end
}

// Request is one request the stand-in received, as it arrived: what the
// gateway forwarded, credentials and extra headers included.
type Request struct {
	Method, Path string
	// Proto is the request's protocol as the server read it ("HTTP/2.0" over
	// a TLS stand-in, which offers HTTP/2 as the providers' endpoints do).
	Proto  string
	Header http.Header
	Body   []byte
}

// Fault is one fault the stand-in serves in place of an answer.
type Fault struct {
	// Status, with the error JSON of the request's API built from Type and Message,
	// and the retry headers when set.
	Status           int
	Type, Message    string
	RetryAfter       string
	RetryAfterMs     string
	ShouldRetryFalse bool
	// Reset closes the connection with a TCP reset before any response byte.
	Reset bool
	// StallBeforeHeaders sends nothing at all until the client goes away.
	StallBeforeHeaders bool
	// StallAfterStart stops sending after the stream's first event, until the client
	// goes away.
	StallAfterStart bool
	// AbortAfterStart cuts the connection after the stream's first event.
	AbortAfterStart bool
	// ErrorEvent sends an error event after the first event of a 200 stream.
	ErrorEvent bool
}

// Input and Output are the tokens the stand-in reports for every reply.
const (
	Input  = 120
	Output = 7
)

// New starts a stand-in, with TLS (offering HTTP/2 and HTTP/1.1) when tlsServer
// is set, and stops it when the test ends.
func New(t *testing.T, tlsServer bool) *Server {
	t.Helper()
	s := &Server{t: t, served: map[string]int{}, text: "stand-in reply", released: make(chan struct{})}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	if tlsServer {
		s.EnableHTTP2 = true
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

// Close ends every stall, then stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.released:
	default:
		close(s.released)
	}
	s.mu.Unlock()
	s.Server.Close()
}

// FailNext makes the next n model calls fail with f.
func (s *Server) FailNext(n int, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < n; i++ {
		s.faults = append(s.faults, f)
	}
}

// FailAlways makes every model call fail with f; nil answers them again.
func (s *Server) FailAlways(f *Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.always = f
}

// FailModels makes GET /v1/models fail with f; nil lists models again.
func (s *Server) FailModels(f *Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = f
}

// Count is how many requests of "METHOD /path" the stand-in received.
func (s *Server) Count(what string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served[what]
}

// Total is how many requests it received in all.
func (s *Server) Total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.served {
		n += c
	}
	return n
}

// Requests is how many requests of each "METHOD /path" it received.
func (s *Server) Requests() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.served)
}

// Credentials are the credentials the requests carried, in order.
func (s *Server) Credentials() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.keys)
}

// maxReceived bounds the requests Received keeps, so a benchmark's
// thousands of calls do not pile up.
const maxReceived = 1000

// Received are the requests it received, in order (the first maxReceived).
func (s *Server) Received() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.received)
}

// Reply sets the text every model call is answered with.
func (s *Server) Reply(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.text = text
}

// AnswerAs makes every Messages reply say model answered it, as a provider
// serving a name from another version would.
func (s *Server) AnswerAs(model string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.model = model
}

// CacheRead makes every reply report n of its Input tokens as read from the
// prompt cache, each API in its own convention: the Responses API counts
// them in input_tokens (Input in all), the Messages API apart from it
// (Input plus n).
func (s *Server) CacheRead(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cached = n
}

// Pool trusts the stand-in's TLS certificate.
func (s *Server) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(s.Certificate())
	return p
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	family := "anthropic"
	if strings.HasPrefix(r.URL.Path, "/v1/responses") || strings.HasPrefix(r.URL.Path, "/v1/chat") {
		family = "openai"
	}
	if isGemini(r.URL.Path) {
		family = "gemini"
	}
	key := r.Header.Get("X-Api-Key")
	if key == "" {
		key = r.Header.Get("X-Goog-Api-Key")
	}
	if key == "" {
		key = r.URL.Query().Get("key")
	}
	if key == "" {
		key = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	s.mu.Lock()
	s.served[r.Method+" "+r.URL.Path]++
	s.keys = append(s.keys, key)
	if len(s.received) < maxReceived {
		s.received = append(s.received, Request{Method: r.Method, Path: r.URL.RequestURI(), Proto: r.Proto, Header: r.Header.Clone(), Body: body})
	}
	var f *Fault
	switch {
	case r.URL.Path == "/v1/models" || strings.HasPrefix(r.URL.Path, "/v1/models/") || r.URL.Path == "/v1beta/models":
		f = s.models
	case len(s.faults) > 0:
		f = &s.faults[0]
		s.faults = s.faults[1:]
	default:
		f = s.always
	}
	text, cached, model := s.text, s.cached, s.model
	s.mu.Unlock()

	if f != nil && f.StallBeforeHeaders {
		select {
		case <-r.Context().Done():
		case <-s.released:
		}
		return
	}
	if f != nil && f.Reset {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			s.t.Errorf("stand-in: hijack: %v", err)
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0) // close with RST
		}
		conn.Close()
		return
	}
	if f != nil && f.Status != 0 {
		if f.RetryAfter != "" {
			w.Header().Set("Retry-After", f.RetryAfter)
		}
		if f.RetryAfterMs != "" {
			w.Header().Set("Retry-After-Ms", f.RetryAfterMs)
		}
		if f.ShouldRetryFalse {
			w.Header().Set("X-Should-Retry", "false")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.Status)
		if family == "gemini" {
			io.WriteString(w, geminiError(f.Status, f.Type, f.Message))
		} else {
			io.WriteString(w, standInError(family, f.Type, f.Message))
		}
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1beta/models":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"models":[{"name":"models/stand-in-model","displayName":"Stand-in"}]}`)
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"data":[{"type":"model","id":"stand-in-model","display_name":"Stand-in"}],"has_more":false,"first_id":"stand-in-model","last_id":"stand-in-model"}`)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/models/"):
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"type":"model","id":%q}`, strings.TrimPrefix(r.URL.Path, "/v1/models/"))
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"input_tokens":42}`)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		events := standInMessages(text, cached)
		if model != "" {
			events[0] = strings.Replace(events[0], `"stand-in-model"`, strconv.Quote(model), 1)
		}
		s.stream(w, r, events, f)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/responses":
		s.stream(w, r, standInResponses(text, cached), f)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, ":streamGenerateContent"):
		s.stream(w, r, standInGemini(text, cached), f)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, ":generateContent"):
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, standInGeminiJSON(text, cached))
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions" && strings.Contains(string(body), `"stream":true`):
		s.stream(w, r, standInChat(text, cached), f)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-standin","object":"chat.completion","model":"stand-in-model","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":%d}}`,
			text, Input, Output)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, standInError(family, "not_found_error", "stand-in: no endpoint "+r.URL.Path))
	}
}

// stream sends events, applying a mid-stream fault after the first.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, events []string, f *Fault) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	for i, ev := range events {
		io.WriteString(w, ev)
		rc.Flush()
		if i > 0 || f == nil {
			continue
		}
		switch {
		case f.StallAfterStart:
			select {
			case <-r.Context().Done():
			case <-s.released:
			}
			return
		case f.AbortAfterStart:
			panic(http.ErrAbortHandler) // the server cuts the connection
		case f.ErrorEvent:
			io.WriteString(w, "event: error\ndata: "+standInError("anthropic", "overloaded_error", "Overloaded")+"\n\n")
			rc.Flush()
			return
		}
	}
}

// standInError is an error body in the API's own shape.
func standInError(family, typ, msg string) string {
	var v any
	if family == "openai" {
		v = map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": typ}}
	} else {
		v = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}, "request_id": "req_standin"}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func sse(name string, v any) string {
	b, _ := json.Marshal(v)
	return "event: " + name + "\ndata: " + string(b) + "\n\n"
}

// standInMessages is a Messages stream answering text, as the API sends it.
func standInMessages(text string, cached int64) []string {
	return []string{
		sse("message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": "msg_standin", "type": "message", "role": "assistant", "model": "stand-in-model", "content": []any{},
			"stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": Input, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": cached}}}),
		sse("ping", map[string]any{"type": "ping"}),
		sse("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}}),
		sse("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": text}}),
		sse("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}),
		sse("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": Output}}),
		sse("message_stop", map[string]any{"type": "message_stop"}),
	}
}

// standInResponses is a Responses stream answering text.
func standInResponses(text string, cached int64) []string {
	msg := map[string]any{"type": "message", "id": "msg_standin", "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
	resp := func(status string, output []any, usage any) map[string]any {
		r := map[string]any{"id": "resp_standin", "object": "response", "created_at": time.Now().Unix(), "model": "stand-in-model", "status": status, "output": output}
		if usage != nil {
			r["usage"] = usage
		}
		return r
	}
	return []string{
		sse("response.created", map[string]any{"type": "response.created", "sequence_number": 0, "response": resp("in_progress", []any{}, nil)}),
		sse("response.output_item.added", map[string]any{"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
			"item": map[string]any{"type": "message", "id": "msg_standin", "role": "assistant", "status": "in_progress", "content": []any{}}}),
		sse("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "sequence_number": 2, "item_id": "msg_standin", "output_index": 0, "content_index": 0, "delta": text}),
		sse("response.output_item.done", map[string]any{"type": "response.output_item.done", "sequence_number": 3, "output_index": 0, "item": msg}),
		sse("response.completed", map[string]any{"type": "response.completed", "sequence_number": 4, "response": resp("completed", []any{msg},
			map[string]any{"input_tokens": Input, "input_tokens_details": map[string]any{"cached_tokens": cached}, "output_tokens": Output,
				"output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": Input + Output})}),
	}
}
