package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"sync"

	"github.com/opencontainers/go-digest"
)

// Recording is a recorded run folder's exchanges, served again by the
// replay provider: each cell gets the responses its own recorded exchanges
// got, matched by the content of its requests, with no network.
type Recording struct {
	// Dir is the recorded run folder.
	Dir string
	// Logs are the recorded exchange logs by cell name; a cell without one
	// has nothing to replay, and its first model request says so.
	Logs map[string]digest.Digest
}

// FaultReplay is a ProviderFault of a replay: a request no recorded
// exchange of the cell matches. It makes the cell invalid.
const FaultReplay = "replay"

// replayCell is one cell's recorded exchanges and which were served.
type replayCell struct {
	dir  string // the recorded run folder
	once sync.Once
	log  *ExchangeLog
	err  error
	keys []string // each recorded exchange's match key
	used []bool
}

// load reads the cell's log once.
func (rc *replayCell) load(rec *Recording, cell string) {
	rc.once.Do(func() {
		rc.dir = rec.Dir
		d, ok := rec.Logs[cell]
		if !ok {
			rc.err = fmt.Errorf("the recording %s holds no exchanges of cell %s", rec.Dir, cell)
			return
		}
		if rc.log, rc.err = ReadLog(rec.Dir, d); rc.err != nil {
			return
		}
		rc.used = make([]bool, len(rc.log.Exchanges))
		rc.keys = make([]string, len(rc.log.Exchanges))
		for i, ex := range rc.log.Exchanges {
			body, err := ReadBody(rec.Dir, ex.Request.Digest)
			if err != nil {
				rc.err = err
				return
			}
			rc.keys[i] = matchKey(ex.Method, ex.Path, body)
		}
	})
}

// volatileFields are top-level request fields that differ between two
// sessions of the same agent on the same conversation: session, device and
// cache identifiers. A replay matches requests without them.
var volatileFields = []string{"metadata", "prompt_cache_key", "client_metadata", "user", "safety_identifier"}

// volatileText are the parts of request text that differ between two
// sessions on the same conversation: identifiers (UUIDs, in Codex's item
// ids too), today's date, the host kernel an agent reports. A replay
// matches requests with them masked.
var volatileText = []*regexp.Regexp{
	regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`),
	regexp.MustCompile(`\b[0-9]{4}-[0-9]{2}-[0-9]{2}\b`),
	regexp.MustCompile(`OS Version: [^\n"]*`),
}

// normalize is a request body as a replay compares it: JSON without its
// volatile fields and text, else the bytes with the volatile text masked.
func normalize(body []byte) any {
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if len(bytes.TrimSpace(body)) == 0 || dec.Decode(&v) != nil {
		return maskText(string(body))
	}
	if m, ok := v.(map[string]any); ok {
		for _, f := range volatileFields {
			delete(m, f)
		}
	}
	return maskValue(v)
}

func maskText(s string) string {
	for _, re := range volatileText {
		s = re.ReplaceAllString(s, "…")
	}
	return s
}

func maskValue(v any) any {
	switch x := v.(type) {
	case string:
		// JSON inside a string (tool arguments) is compared as text: its
		// masks apply all the same.
		return maskText(x)
	case []any:
		for i := range x {
			x[i] = maskValue(x[i])
		}
	case map[string]any:
		for k, e := range x {
			x[k] = maskValue(e)
		}
	}
	return v
}

// matchKey is what a replayed request must share with a recorded one.
func matchKey(method, path string, body []byte) string {
	b, _ := json.Marshal(normalize(body))
	return method + " " + path + " " + digest.FromBytes(b).Encoded()
}

// match finds the first unserved recorded exchange matching a
// request and marks it served. With none, it says where the request
// departs from the first unserved recorded one of its method and path.
func (rc *replayCell) match(method, path string, body []byte) (*Exchange, error) {
	key := matchKey(method, path, body)
	for i, k := range rc.keys {
		if !rc.used[i] && k == key {
			rc.used[i] = true
			return &rc.log.Exchanges[i], nil
		}
	}
	for i, ex := range rc.log.Exchanges {
		if rc.used[i] || ex.Method != method || ex.Path != path {
			continue
		}
		return nil, fmt.Errorf("no recorded exchange matches it; the first one not replayed yet with %s %s, recorded exchange %d, differs %s", method, path, ex.Seq, rc.differs(ex, body))
	}
	served := 0
	for _, u := range rc.used {
		if u {
			served++
		}
	}
	return nil, fmt.Errorf("no recorded exchange matches it: %d of the cell's %d recorded exchanges were served and none left is a %s %s", served, len(rc.used), method, path)
}

// differs says where body departs from the recorded exchange's request.
func (rc *replayCell) differs(ex Exchange, body []byte) string {
	recorded, err := ReadBody(rc.dir, ex.Request.Digest)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	at, was, now := firstDifference("", normalize(recorded), normalize(body))
	if at == "" {
		at = "(the body)"
	}
	return fmt.Sprintf("at %s: recorded %s, this run %s", at, quoteCut(was), quoteCut(now))
}

// firstDifference walks two JSON values in the same order and returns the
// path of the first place they differ and what each holds there.
func firstDifference(at string, a, b any) (string, string, string) {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return at, summary(a), summary(b)
		}
		keys := map[string]bool{}
		for k := range x {
			keys[k] = true
		}
		for k := range y {
			keys[k] = true
		}
		names := make([]string, 0, len(keys))
		for k := range keys {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			p := k
			if at != "" {
				p = at + "." + k
			}
			xv, xok := x[k]
			yv, yok := y[k]
			switch {
			case !xok:
				return p, "nothing", summary(yv)
			case !yok:
				return p, summary(xv), "nothing"
			}
			if d, was, now := firstDifference(p, xv, yv); d != "" {
				return d, was, now
			}
		}
		return "", "", ""
	case []any:
		y, ok := b.([]any)
		if !ok {
			return at, summary(a), summary(b)
		}
		for i := 0; i < min(len(x), len(y)); i++ {
			if d, was, now := firstDifference(at+"["+strconv.Itoa(i)+"]", x[i], y[i]); d != "" {
				return d, was, now
			}
		}
		if len(x) != len(y) {
			return at, fmt.Sprintf("%d items", len(x)), fmt.Sprintf("%d items", len(y))
		}
		return "", "", ""
	default:
		if fmt.Sprint(a) == fmt.Sprint(b) && fmt.Sprintf("%T", a) == fmt.Sprintf("%T", b) {
			return "", "", ""
		}
		if sa, ok := a.(string); ok {
			if sb, ok := b.(string); ok {
				was, now := around(sa, sb)
				return at, was, now
			}
		}
		if at == "" {
			at = "(the body)"
		}
		return at, summary(a), summary(b)
	}
}

// around is the two strings near where they first differ.
func around(a, b string) (string, string) {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(i-30, 0)
	cut := func(s string) string {
		end := min(len(s), i+50)
		out := s[from:end]
		if from > 0 {
			out = "…" + out
		}
		if end < len(s) {
			out += "…"
		}
		return strconv.Quote(out)
	}
	return cut(a), cut(b)
}

// summary is a short rendering of a JSON value.
func summary(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func quoteCut(s string) string {
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}

// serveReplay answers a cell's request with its recorded response. A
// request no recorded exchange matches is answered with an error the agent
// will not retry, and recorded as the cell's fault: the cell is invalid.
func (g *Gateway) serveReplay(ow *observingWriter, r *http.Request, c *gatewayCell, body []byte, seq int) (replayOf int, fault *ProviderFault) {
	rc := c.replay
	rc.load(g.cfg.Replay, c.name)
	target := withoutKey(r.RequestURI)
	var ex *Exchange
	var err error
	if rc.err == nil {
		g.mu.Lock()
		ex, err = rc.match(r.Method, target, body)
		g.mu.Unlock()
	} else {
		err = rc.err
	}
	family := g.wireFamily(r)
	if err != nil && rc.log != nil && rc.log.Provider == "scripted" && r.Method == http.MethodGet {
		// The scripted model answered listings itself, unrecorded: so does
		// its replay.
		ow.WriteHeader(http.StatusOK)
		return 0, nil
	}
	if err != nil {
		f := &ProviderFault{Kind: FaultReplay, Method: r.Method, URL: target,
			Message: fmt.Sprintf("request %d of cell %s (%s %s): %s", seq, c.name, r.Method, target, err.Error())}
		gatewayError(ow, family, http.StatusBadRequest, "invalid_request_error", "skillgate replay: "+f.Message)
		return 0, f
	}
	resp, rerr := ReadBody(g.cfg.Replay.Dir, ex.Response.Digest)
	if rerr != nil {
		f := &ProviderFault{Kind: FaultReplay, Method: r.Method, URL: target, Message: fmt.Sprintf("request %d of cell %s: %v", seq, c.name, rerr)}
		gatewayError(ow, family, http.StatusBadRequest, "invalid_request_error", "skillgate replay: "+f.Message)
		return 0, f
	}
	for name, vals := range ex.Response.Headers {
		if slices.Contains(replayedHeaders, name) {
			ow.Header()[name] = vals
		}
	}
	ow.WriteHeader(ex.Status)
	ow.Write(resp)
	ow.Flush()
	return ex.Seq, nil
}

// replayedHeaders are the recorded response headers a replay sends again:
// what a client reads to parse the body; never a length (the body is
// served as stored) or a provider's request id.
var replayedHeaders = []string{"Content-Type", "Cache-Control", "Anthropic-Ratelimit-Unified-Status", "Retry-After", "X-Should-Retry"}
