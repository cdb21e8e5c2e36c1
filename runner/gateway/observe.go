package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
)

// observingWriter passes a response through unchanged while its observer reads it.
type observingWriter struct {
	http.ResponseWriter
	obs         *usageObserver
	wroteHeader bool
	// writeErr is the first failed write to the cell: the cell went away.
	writeErr error
	// capture keeps the response as sent, when exchanges are recorded.
	capture *capture
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
	o.capture.write(p[:n])
	if err != nil && o.writeErr == nil {
		o.writeErr = err
	}
	return n, err
}

// Flush sends what is buffered to the cell at once (server-sent events).
func (o *observingWriter) Flush() {
	http.NewResponseController(o.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (o *observingWriter) Unwrap() http.ResponseWriter { return o.ResponseWriter }

// usageObserver reads a model response as it streams, server-sent events or one JSON
// body, for the model that answered and the tokens it reported, whether the stream
// reached its last event, and the provider's error, if it sent one.
type usageObserver struct {
	family string // "anthropic", "openai" or "gemini"
	mode   int    // observeIgnore, observeSSE, observeJSON or observeError
	buf    []byte
	event  string
	data   []string
	broken bool // more than the observer keeps: stop reading

	status int
	model  string
	tokens *grade.Tokens
	// raw are the tokens as the provider counts them.
	raw *ProviderTokens
	// done: the stream's last event came (message_stop, response.completed, [DONE]).
	done bool
	// streamErr is an error event in a stream whose status was 200.
	streamErr *providerError
}

const (
	observeIgnore = iota
	observeSSE
	observeJSON
	observeError
)

// observeMax bounds what the observer buffers of one event or one JSON body;
// observeErrorMax what it keeps of an error body.
const (
	observeMax      = 32 << 20
	observeErrorMax = 64 << 10
)

func newUsageObserver(family string) *usageObserver {
	return &usageObserver{family: family}
}

func (u *usageObserver) start(status int, contentType string) {
	u.status = status
	if status >= 400 {
		u.mode = observeError
		return
	}
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
	if u.mode == observeError {
		u.buf = append(u.buf, p[:min(len(p), observeErrorMax-len(u.buf))]...)
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
			u.onData(strings.Join(u.data, "\n"))
		}
		u.event, u.data = "", nil
	case strings.HasPrefix(l, ":"):
	case strings.HasPrefix(l, "event:"):
		u.event = strings.TrimSpace(l[len("event:"):])
	case strings.HasPrefix(l, "data:"):
		if u.event != "" && !observedEvents[u.event] {
			return // a delta: passed through unread
		}
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

// modelUsage is the part of an event or a body that names the model and its usage,
// or the error it reports.
type modelUsage struct {
	Type     string      `json:"type"`
	Model    string      `json:"model"`
	Usage    *wireUsage  `json:"usage"`
	Message  *modelUsage `json:"message"`
	Response *modelUsage `json:"response"`
	// Error is a failed Responses object's error.
	Error json.RawMessage `json:"error"`
	// Gemini's GenerateContentResponse.
	ModelVersion  string            `json:"modelVersion"`
	UsageMetadata *geminiUsage      `json:"usageMetadata"`
	Candidates    []geminiCandidate `json:"candidates"`
}

// observedEvents are the named events that carry a model, usage, an error or the
// stream's end; the many deltas between them are passed through unread. Unnamed
// events (Chat Completions) are all read.
var observedEvents = map[string]bool{
	"message_start": true, "message_delta": true, "message_stop": true, "error": true,
	"response.created": true, "response.in_progress": true, "response.completed": true,
	"response.incomplete": true, "response.failed": true, "response.done": true,
}

// onData takes one event's data.
func (u *usageObserver) onData(data string) {
	if strings.TrimSpace(data) == "[DONE]" { // Chat Completions
		u.done = true
		return
	}
	u.onEvent([]byte(data))
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
	case "message_stop":
		u.done = true
	case "error": // either provider: an error event in a 200 stream
		pe := parseProviderError(data)
		u.streamErr = &pe
	case "response.created", "response.in_progress":
		if r := ev.Response; r != nil {
			u.setModel(r.Model)
		}
	case "response.completed", "response.incomplete", "response.failed", "response.done":
		u.done = true
		if r := ev.Response; r != nil {
			u.setModel(r.Model)
			u.apply(r.Usage, true)
			if ev.Type == "response.failed" && len(r.Error) > 0 && string(r.Error) != "null" {
				if pe := parseProviderError(data); pe.Type != "invalid_prompt" { // else the agent's own request
					u.streamErr = &pe
				}
			}
		}
	default:
		if u.family == "gemini" {
			u.gemini(&ev)
			return
		}
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
		u.freshTokens()
	}
	t, raw := u.tokens, u.raw
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
			raw.Input, raw.CacheRead = *in, cached
		}
		set(&t.Output, out)
		set(&raw.Output, out)
		return
	}
	set(&t.Input, w.InputTokens)
	set(&t.Output, w.OutputTokens)
	set(&t.CacheRead, w.CacheRead)
	set(&t.CacheWrite, w.CacheCreation)
	*raw = ProviderTokens{Convention: u.family, Input: t.Input, Output: t.Output, CacheRead: t.CacheRead, CacheWrite: t.CacheWrite}
}

// freshTokens starts the counts over, and returns them.
func (u *usageObserver) freshTokens() *grade.Tokens {
	u.tokens = &grade.Tokens{}
	u.raw = &ProviderTokens{Convention: u.family}
	return u.tokens
}

// result returns the answering model and the reported tokens (nil if none).
func (u *usageObserver) result() (string, *grade.Tokens) {
	switch u.mode {
	case observeSSE:
		if !u.broken && len(u.data) > 0 { // a last event without its blank line
			u.onData(strings.Join(u.data, "\n"))
			u.data = nil
		}
	case observeJSON:
		if !u.broken {
			var body modelUsage
			if json.Unmarshal(u.buf, &body) == nil && u.family == "gemini" {
				u.gemini(&body)
			} else if json.Unmarshal(u.buf, &body) == nil {
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

// requestModel is a JSON request body's top-level "model", found without decoding the
// rest: model requests are mostly long strings, which this skips at memchr speed,
// where decoding would scan every byte twice. Anything unexpected gives "".
func requestModel(b []byte) string {
	depth, key := 0, false // key: at depth 1, the next string is a key
	for i := 0; i < len(b); {
		switch b[i] {
		case '{':
			depth++
			key = depth == 1
		case '[':
			depth++
		case '}', ']':
			depth--
		case ',':
			key = depth == 1
		case '"':
			end := jsonStringEnd(b, i)
			if end < 0 {
				return ""
			}
			if depth == 1 && key {
				key = false
				if string(b[i:end]) == `"model"` {
					j := skipSpace(b, end)
					if j >= len(b) || b[j] != ':' {
						return ""
					}
					if j = skipSpace(b, j+1); j >= len(b) || b[j] != '"' {
						return ""
					}
					var model string
					if v := jsonStringEnd(b, j); v < 0 || json.Unmarshal(b[j:v], &model) != nil {
						return ""
					}
					return model
				}
			}
			i = end
			continue
		}
		i++
	}
	return ""
}

// jsonStringEnd is the index after the string starting at b[i] ('"'), or -1.
func jsonStringEnd(b []byte, i int) int {
	for j := i + 1; ; {
		k := bytes.IndexAny(b[j:], `"\`)
		if k < 0 {
			return -1
		}
		j += k
		if b[j] == '\\' {
			j += 2
			continue
		}
		return j + 1
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
