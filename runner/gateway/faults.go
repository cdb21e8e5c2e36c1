package gateway

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/skillgate/skillgate/runner/redact"
)

// Kinds of ProviderFault.
const (
	// FaultStatus: the provider answered with a status that is its own or the
	// configuration's fault (401, 402, 403, 404, 408, 409, 429, any 5xx, 529), not the
	// agent's (400, 413, 422: its own request).
	FaultStatus = "status"
	// FaultConnection: the provider could not be reached, or it closed the connection
	// before answering.
	FaultConnection = "connection"
	// FaultTLS: the provider's certificate or the TLS handshake failed.
	FaultTLS = "tls"
	// FaultStall: no byte of the response came for limits.stall.
	FaultStall = "stall"
	// FaultAbort: the provider cut the response before its end.
	FaultAbort = "abort"
	// FaultStream: an error event in a stream the provider had begun with 200.
	FaultStream = "stream"
)

// ProviderFault is one exchange of a cell that failed through no doing of the agent:
// the provider's or the configuration's fault, as the gateway saw it after its
// retries.
type ProviderFault struct {
	Kind string `json:"kind"`
	// Status is the provider's HTTP status, for FaultStatus.
	Status int `json:"status,omitempty"`
	// Type and Message are the provider's own error type and message, read from its
	// error JSON (Anthropic or OpenAI); Message is the failure itself for kinds
	// without one.
	Type    string `json:"type,omitempty"`
	Message string `json:"message"`
	Method  string `json:"method"`
	// URL is where the request went, without its query.
	URL string `json:"url"`
	// Retries counts the tries made after the first.
	Retries int `json:"retries"`
}

// String is the fault as a cell's error reads it, such as
// "provider: HTTP 401 authentication_error: invalid x-api-key (from https://…)".
func (f ProviderFault) String() string {
	if f.Kind == FaultReplay {
		return "replay: " + f.Message
	}
	from := f.URL
	if f.Retries > 0 {
		from += fmt.Sprintf(", after %d %s", f.Retries, plural(f.Retries, "retry", "retries"))
	}
	return fmt.Sprintf("provider: %s (from %s)", f.What(), from)
}

// What is the fault without where it came from: "HTTP 401 authentication_error:
// invalid x-api-key".
func (f ProviderFault) What() string {
	var what string
	switch f.Kind {
	case FaultStatus:
		what = fmt.Sprintf("HTTP %d", f.Status)
	case FaultConnection:
		what = "connection failed"
	case FaultTLS:
		what = "TLS failed"
	case FaultStall:
		what = "stalled"
	case FaultAbort:
		what = "stream cut"
	case FaultStream:
		what = "stream error"
	default:
		what = f.Kind
	}
	if f.Type != "" {
		what += " " + f.Type
	}
	return what + ": " + f.Message
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// faultStatus reports whether an upstream status is the provider's or the
// configuration's fault rather than the agent's.
func faultStatus(status int) bool {
	switch status {
	case 401, 402, 403, 404, 408, 409, 429:
		return true
	}
	return status >= 500
}

// retryStatus reports whether a status is transient: worth asking again.
func retryStatus(status int) bool {
	switch status {
	case 429, 500, 502, 503, 504, 529:
		return true
	}
	return false
}

// providerError is a provider's own error type and message.
type providerError struct{ Type, Message string }

// parseProviderError reads an error body or event of either API: Anthropic's
// {"type":"error","error":{"type","message"}}, OpenAI's {"error":{"message","type",
// "code"}}, a Responses error event {"type":"error","code","message"} or a failed
// response {"response":{"error":{"code","message"}}}. Anything else is quoted.
func parseProviderError(b []byte) providerError {
	type obj struct {
		Type    *string `json:"type"`
		Code    any     `json:"code"`
		Message *string `json:"message"`
		Status  *string `json:"status"` // the Gemini API's
	}
	var v struct {
		obj
		Error    json.RawMessage `json:"error"`
		Response *struct {
			Error *obj `json:"error"`
		} `json:"response"`
	}
	read := func(o *obj) (providerError, bool) {
		if o == nil || o.Message == nil {
			return providerError{}, false
		}
		pe := providerError{Message: *o.Message}
		if o.Type != nil && *o.Type != "error" {
			pe.Type = *o.Type
		}
		if s, ok := o.Code.(string); ok && s != "" && pe.Type == "" {
			pe.Type = s
		}
		if o.Status != nil && pe.Type == "" {
			pe.Type = *o.Status
		}
		return pe, true
	}
	if json.Unmarshal(b, &v) == nil {
		var inner obj
		if len(v.Error) > 0 && json.Unmarshal(v.Error, &inner) == nil {
			if pe, ok := read(&inner); ok {
				return pe
			}
		}
		if v.Response != nil {
			if pe, ok := read(v.Response.Error); ok {
				return pe
			}
		}
		if pe, ok := read(&v.obj); ok {
			return pe
		}
	}
	text := strings.Join(strings.Fields(string(b)), " ")
	if len(text) > 300 {
		text = text[:300] + "…"
	}
	if text == "" {
		text = "(no body)"
	}
	return providerError{Message: text}
}

// RetryPolicy is the gateway's retrying of transient errors (schema #Limits.retry).
type RetryPolicy struct {
	// Attempts counts every try, the first included; below 2, no retry.
	Attempts int
	// Delay is the first wait when the provider names none; it doubles each retry.
	Delay time.Duration
	// MaxDelay bounds one wait: a provider asking for more ends the retries.
	MaxDelay time.Duration
}

// exchange is what the gateway learns of one forwarded request while it is served:
// the retries made and how the last try ended. The transport fills it in.
type exchange struct {
	body []byte

	mu      sync.Mutex
	retries int
	err     error // the last try's transport error
	stalled bool  // the stall timer cut the last try
	readErr error // the upstream's body failed mid-stream
	// delivered: the provider's whole response reached the cell, so the
	// cell leaving afterwards (its connection closed, its request's context
	// done) says nothing about the exchange.
	delivered bool
	// heard is when the provider last sent a byte, or the last try began: how
	// long it has been silent when the cell goes away.
	heard time.Time
	// sent are the headers of the request as forwarded (the last try's).
	sent http.Header
}

type exchangeKey struct{}

func (ex *exchange) set(f func()) {
	ex.mu.Lock()
	f()
	ex.mu.Unlock()
}

// faultTransport is the gateway's way to the provider: it retries transient errors
// before anything reaches the agent and cuts a try that stalls. Requests carry their
// exchange in their context; the body is the exchange's, so every try sends it whole.
type faultTransport struct {
	base  http.RoundTripper
	retry RetryPolicy
	stall time.Duration
}

func (t *faultTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ex, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if ex == nil {
		ex = &exchange{}
	}
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithCancel(req.Context())
		ex.set(func() { ex.heard = time.Now() })
		try := req.Clone(ctx)
		if len(ex.body) > 0 {
			try.Body = io.NopCloser(bytes.NewReader(ex.body))
			try.ContentLength = int64(len(ex.body))
		} else if attempt > 1 {
			try.Body, try.ContentLength = nil, 0
		}
		var timer *time.Timer
		if t.stall > 0 {
			timer = time.AfterFunc(t.stall, func() {
				ex.set(func() { ex.stalled = true })
				cancel()
			})
		}
		resp, err := t.base.RoundTrip(try)
		ex.mu.Lock()
		if err == nil {
			ex.heard = time.Now()
		}
		stalled := ex.stalled
		ex.mu.Unlock()
		delay, again := t.again(req.Context(), resp, err, stalled, attempt)
		if !again {
			if err != nil {
				if timer != nil {
					timer.Stop()
				}
				cancel()
				ex.set(func() { ex.err = err })
				return nil, err
			}
			resp.Body = &watchedBody{body: resp.Body, timer: timer, stall: t.stall, cancel: cancel, ex: ex}
			return resp, nil
		}
		if timer != nil {
			timer.Stop()
		}
		if resp != nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, observeErrorMax))
			resp.Body.Close()
		}
		cancel()
		ex.set(func() { ex.retries++ })
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-time.After(delay):
		}
	}
}

// again decides whether a try is retried, and after how long.
func (t *faultTransport) again(ctx context.Context, resp *http.Response, err error, stalled bool, attempt int) (time.Duration, bool) {
	if attempt >= t.retry.Attempts || stalled || ctx.Err() != nil {
		return 0, false
	}
	backoff := t.retry.Delay << (attempt - 1)
	backoff += time.Duration(rand.Int64N(int64(backoff)/4 + 1)) // spread cells that failed together
	if backoff > t.retry.MaxDelay || backoff <= 0 {
		backoff = t.retry.MaxDelay
	}
	if err != nil {
		// Refused, reset or closed before the first response byte: nothing reached
		// the agent, so asking again is safe.
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return backoff, true
		}
		return 0, false
	}
	if !retryStatus(resp.StatusCode) || resp.Header.Get("X-Should-Retry") == "false" {
		return 0, false
	}
	if d, ok := retryAfter(resp.Header, time.Now()); ok {
		if d > t.retry.MaxDelay {
			return 0, false // the provider asks for a longer wait than the suite allows
		}
		return d, true
	}
	return backoff, true
}

// retryAfter reads the wait a provider asks for: retry-after-ms (milliseconds), or
// retry-after (seconds, or an HTTP date).
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
			return time.Duration(s * float64(time.Second)), true
		}
		if at, err := http.ParseTime(v); err == nil {
			return max(at.Sub(now), 0), true
		}
	}
	return 0, false
}

// watchedBody is a response body whose silence is bounded: every byte read restarts
// the stall timer, which cuts the try when it fires. A read error is recorded.
type watchedBody struct {
	body   io.ReadCloser
	timer  *time.Timer
	stall  time.Duration
	cancel context.CancelFunc
	ex     *exchange
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if n > 0 && b.timer != nil {
		b.timer.Reset(b.stall)
	}
	if n > 0 {
		b.ex.set(func() { b.ex.heard = time.Now() })
	}
	if err != nil && err != io.EOF {
		b.ex.set(func() {
			if b.ex.readErr == nil {
				b.ex.readErr = err
			}
		})
	}
	return n, err
}

func (b *watchedBody) Close() error {
	if b.timer != nil {
		b.timer.Stop()
	}
	err := b.body.Close()
	b.cancel()
	return err
}

// outcome classifies a finished exchange: a provider fault, a success (a 2xx response
// received whole), or neither (the agent's own bad request, or the cell went away).
func (g *Gateway) outcome(r *http.Request, ow *observingWriter, ex *exchange, cut bool) (*ProviderFault, bool) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	u := *g.upstream
	u.Path += r.URL.Path
	f := ProviderFault{Method: r.Method, URL: u.String(), Retries: ex.retries}
	if ow.writeErr != nil || (r.Context().Err() != nil && !ex.stalled && !ex.delivered) {
		// The cell went away, by its own doing or its timeout: the provider's
		// fault all the same when it had been silent for CutSilence by then,
		// so a stall the cell's end cuts first is never the agent's.
		silent := time.Since(ex.heard).Round(time.Millisecond)
		cutSilence := g.cfg.CutSilence
		if cutSilence <= 0 {
			cutSilence = g.cfg.Stall / 2
		}
		if cutSilence <= 0 || ex.heard.IsZero() || silent < cutSilence {
			return nil, false
		}
		f.Kind, f.Message = FaultStall, fmt.Sprintf("the cell ended while the provider had sent nothing for %s (limits.stall is %s)", silent, g.cfg.Stall)
		return &f, false
	}
	status := ow.obs.status
	switch {
	case ex.err != nil:
		tf := transportFault(ex.err, ex.stalled, g.cfg.Stall)
		f.Kind, f.Message = tf.Kind, tf.Message
	case ex.stalled:
		f.Kind, f.Message = FaultStall, fmt.Sprintf("no byte for %s mid-stream (limits.stall)", g.cfg.Stall)
	case faultStatus(status) || geminiKeyInvalid(status, ow.obs.buf):
		pe := parseProviderError(ow.obs.buf)
		f.Kind, f.Status, f.Type, f.Message = FaultStatus, status, pe.Type, pe.Message
		if geminiKeyInvalid(status, ow.obs.buf) {
			f.Type = KeyInvalid
		}
	case status/100 != 2:
		return nil, false // 400, 413, 422...: the agent's own request
	case ex.readErr != nil || cut:
		msg := "the response was cut"
		if ex.readErr != nil {
			msg = ex.readErr.Error()
		}
		f.Kind, f.Message = FaultAbort, msg
	case ow.obs.streamErr != nil:
		f.Kind, f.Type, f.Message = FaultStream, ow.obs.streamErr.Type, ow.obs.streamErr.Message
	case ow.obs.mode == observeSSE && !ow.obs.done && !ow.obs.broken:
		f.Kind, f.Message = FaultAbort, "the stream ended before its last event"
	default:
		return nil, true
	}
	f.Message = strings.ReplaceAll(f.Message, g.cfg.APIKey, redact.Redacted)
	return &f, false
}

// KeyInvalid is the type of a fault where the Gemini API refused the key: it
// answers 400 with the reason API_KEY_INVALID, not 401, so the status alone
// would make it the agent's own bad request.
const KeyInvalid = "API_KEY_INVALID"

// geminiKeyInvalid reports whether an error answer is the Gemini API's
// refusal of the key.
func geminiKeyInvalid(status int, body []byte) bool {
	return status == http.StatusBadRequest && bytes.Contains(body, []byte(`"API_KEY_INVALID"`))
}

// transportFault turns a try's transport error into a fault.
func transportFault(err error, stalled bool, stall time.Duration) ProviderFault {
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var hostname x509.HostnameError
	var verify *tls.CertificateVerificationError
	var record tls.RecordHeaderError
	var alert tls.AlertError
	switch {
	case stalled:
		return ProviderFault{Kind: FaultStall, Message: fmt.Sprintf("no response byte for %s (limits.stall)", stall)}
	case errors.As(err, &unknown), errors.As(err, &invalid), errors.As(err, &hostname), errors.As(err, &verify), errors.As(err, &record), errors.As(err, &alert):
		return ProviderFault{Kind: FaultTLS, Message: err.Error()}
	default:
		return ProviderFault{Kind: FaultConnection, Message: err.Error()}
	}
}

func (ex *exchange) isStalled() bool {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.stalled
}
