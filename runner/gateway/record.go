package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/runfolder"
	"github.com/skillgate/skillgate/runner/redact"

	"github.com/opencontainers/go-digest"
)

// Folders of the recorded exchanges in a run folder (runner/store's doc.go
// describes the layout).
const (
	// DirExchangeBodies holds every recorded request and response body, by
	// the digest of its bytes as stored (redacted): bodies that recur, such
	// as an agent's system prompt, are stored once.
	DirExchangeBodies = runfolder.DirExchangeBodies
	// DirExchangeLogs holds one exchange log per cell rollout or judge
	// call, by the digest of its JSON.
	DirExchangeLogs = runfolder.DirExchangeLogs
	// dirTmp is the store's folder for what is being written.
	dirTmp = runfolder.DirTmp
)

// ExchangeFormat versions the exchange log.
const ExchangeFormat = 1

// ExchangeLog is everything one cell (or one judge call) asked of its model
// and was answered, in order of arrival: what a replay serves again.
type ExchangeLog struct {
	Format int `json:"format"`
	// Cell names the cell, or the judge call ("judge KEY").
	Cell string `json:"cell"`
	// Provider answered: "anthropic", "openai", "scripted", or "replay"
	// (then Replayed names the log it served from).
	Provider string `json:"provider"`
	// Upstream is the base URL a real provider's requests went to.
	Upstream string        `json:"upstream,omitempty"`
	Replayed digest.Digest `json:"replayed,omitempty"`
	// Exchanges are in order of arrival at the gateway.
	Exchanges []Exchange `json:"exchanges"`
}

// Exchange is one request and its response as the gateway saw them: the
// request as forwarded (sampling fields set, the real credential out), the
// response as received, streamed bodies byte for byte, every secret
// scrubbed and each scrub recorded.
type Exchange struct {
	// Seq numbers the cell's exchanges from 1, in order of arrival.
	Seq    int    `json:"seq"`
	Method string `json:"method"`
	// Path is the request target, query included.
	Path           string    `json:"path"`
	StartedAt      time.Time `json:"startedAt"`
	LatencySeconds float64   `json:"latencySeconds"`
	Request        Body      `json:"request"`
	// Status is the HTTP status the cell was answered with.
	Status   int  `json:"status"`
	Response Body `json:"response"`
	// ModelAsked and ModelAnswered: the model the request named and the one
	// the response did.
	ModelAsked    string `json:"modelAsked,omitempty"`
	ModelAnswered string `json:"modelAnswered,omitempty"`
	// Tokens are the response's usage in skillgate's convention (input
	// without cache reads or writes); ProviderTokens as the provider gave it.
	Tokens         *grade.Tokens   `json:"tokens,omitempty"`
	ProviderTokens *ProviderTokens `json:"providerTokens,omitempty"`
	USD            *float64        `json:"usd,omitempty"`
	// Sampling is what the gateway set in the request it forwarded.
	Sampling *Sampling `json:"sampling,omitempty"`
	// Retries counts the tries made again after a transient error.
	Retries int `json:"retries,omitempty"`
	// Fault is the provider fault the exchange ended in, or the replay's
	// failure to match it.
	Fault string `json:"fault,omitempty"`
	// ReplayOf is the Seq of the recorded exchange a replay answered with.
	ReplayOf int `json:"replayOf,omitempty"`
	// Redactions say which secrets were scrubbed from what is stored.
	Redactions []Redaction `json:"redactions,omitempty"`
}

// Body is one side of an exchange: its headers and its bytes, stored by
// digest under DirExchangeBodies.
type Body struct {
	Headers http.Header `json:"headers,omitempty"`
	// Digest names the stored bytes; empty for an empty body.
	Digest digest.Digest `json:"digest,omitempty"`
	Bytes  int64         `json:"bytes"`
	// Truncated: the body was larger than the gateway records (64 MiB);
	// the stored bytes are its beginning.
	Truncated bool `json:"truncated,omitempty"`
}

// Redaction is one kind of secret scrubbed from a side of an exchange.
type Redaction struct {
	// Name is the host variable whose value was removed ("credential" for
	// the provider's key when its variable is not known).
	Name string `json:"name"`
	// Where: "request.headers", "request.body", "response.headers" or
	// "response.body".
	Where string `json:"where"`
	Count int    `json:"count"`
}

// ProviderTokens are a response's token counts as the provider reported
// them. Convention "anthropic": input excludes cache reads and writes;
// "openai": input includes the cached tokens, which CacheRead repeats.
type ProviderTokens struct {
	Convention string `json:"convention"`
	Input      int64  `json:"input"`
	Output     int64  `json:"output"`
	CacheRead  int64  `json:"cacheRead,omitempty"`
	CacheWrite int64  `json:"cacheWrite,omitempty"`
}

func (p *ProviderTokens) add(q *ProviderTokens) *ProviderTokens {
	if q == nil {
		return p
	}
	if p == nil {
		c := *q
		return &c
	}
	p.Input += q.Input
	p.Output += q.Output
	p.CacheRead += q.CacheRead
	p.CacheWrite += q.CacheWrite
	return p
}

// Recorder stores exchanges in a run folder: bodies and logs by digest,
// each written atomically (into store/tmp, then renamed), so a crash never
// leaves a partial one and what recurs is stored once.
type Recorder struct {
	// Out is the run folder.
	Out string
}

// put writes data under folder by its digest unless it is there already.
func (rec *Recorder) put(folder string, data []byte) (digest.Digest, error) {
	d := digest.FromBytes(data)
	file := filepath.Join(rec.Out, folder, d.Encoded())
	if _, err := os.Stat(file); err == nil {
		return d, nil
	}
	for _, dir := range []string{filepath.Dir(file), filepath.Join(rec.Out, dirTmp)} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("record exchange: %w", err)
		}
	}
	tmp, err := os.CreateTemp(filepath.Join(rec.Out, dirTmp), "exchange-")
	if err != nil {
		return "", fmt.Errorf("record exchange: %w", err)
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o444)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("record exchange: %w", err)
	}
	return d, nil
}

// putBody stores a body; empty bodies are not stored.
func (rec *Recorder) putBody(b []byte) (digest.Digest, error) {
	if len(b) == 0 {
		return "", nil
	}
	return rec.put(DirExchangeBodies, b)
}

// PutLog stores an exchange log and returns its digest.
func (rec *Recorder) PutLog(l *ExchangeLog) (digest.Digest, error) {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return "", fmt.Errorf("record exchanges of %s: %w", l.Cell, err)
	}
	return rec.put(DirExchangeLogs, append(b, '\n'))
}

// LogPath is where the exchange log d lives, relative to the run folder.
func LogPath(d digest.Digest) string { return DirExchangeLogs + "/" + d.Encoded() }

// BodyPath is where the body d lives, relative to the run folder.
func BodyPath(d digest.Digest) string { return DirExchangeBodies + "/" + d.Encoded() }

// ReadLog reads the exchange log d of run folder out, checking its digest.
func ReadLog(out string, d digest.Digest) (*ExchangeLog, error) {
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("read exchange log %q: %w", d, err)
	}
	b, err := os.ReadFile(filepath.Join(out, DirExchangeLogs, d.Encoded()))
	if err != nil {
		return nil, fmt.Errorf("read exchange log: %w", err)
	}
	if digest.FromBytes(b) != d {
		return nil, fmt.Errorf("read exchange log %s: content does not match its digest", d)
	}
	var l ExchangeLog
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("read exchange log %s: %w", d, err)
	}
	if l.Format != ExchangeFormat {
		return nil, fmt.Errorf("read exchange log %s: format %d, this skillgate reads format %d", d, l.Format, ExchangeFormat)
	}
	return &l, nil
}

// ReadBody reads the body d of run folder out, checking its digest.
func ReadBody(out string, d digest.Digest) ([]byte, error) {
	if d == "" {
		return nil, nil
	}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("read exchange body %q: %w", d, err)
	}
	b, err := os.ReadFile(filepath.Join(out, DirExchangeBodies, d.Encoded()))
	if err != nil {
		return nil, fmt.Errorf("read exchange body: %w", err)
	}
	if digest.FromBytes(b) != d {
		return nil, fmt.Errorf("read exchange body %s: content does not match its digest", d)
	}
	return b, nil
}

// secretHeaders carry credentials: their values are never stored, whatever
// they hold.
var secretHeaders = []string{"X-Api-Key", "X-Goog-Api-Key", "Authorization", "Api-Key", "Proxy-Authorization", "Cookie", "Set-Cookie"}

// scrubHeaders is h fit to store: credential headers replaced by Redacted
// and every secret scrubbed from the rest, with what was removed.
func scrubHeaders(h http.Header, red *redact.Redactor, where string, extra map[string]string) (http.Header, []Redaction) {
	out := http.Header{}
	counts := map[string]int{}
	for name, vals := range h {
		canon := http.CanonicalHeaderKey(name)
		for _, v := range vals {
			if slices.Contains(secretHeaders, canon) {
				who := "credential"
				if n, ok := extra[canon]; ok {
					who = n
				}
				counts[who]++
				out.Add(canon, redact.Redacted)
				continue
			}
			if n, ok := extra[canon]; ok {
				counts[n]++
				out.Add(canon, redact.Redacted)
				continue
			}
			b, c := red.Scrub([]byte(v))
			for k, n := range c {
				counts[k] += n
			}
			out.Add(canon, string(b))
		}
	}
	return out, redactions(counts, where)
}

// redactions lists counts by name, sorted, as found in where.
func redactions(counts map[string]int, where string) []Redaction {
	var out []Redaction
	for name, n := range counts {
		out = append(out, Redaction{Name: name, Where: where, Count: n})
	}
	slices.SortFunc(out, func(a, b Redaction) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// recordBody scrubs and stores one body.
func (g *Gateway) recordBody(b []byte, truncated bool, h http.Header, where string, extra map[string]string) (Body, []Redaction, error) {
	hdr, reds := scrubHeaders(h, g.cfg.Redact, where+".headers", extra)
	scrubbed, counts := g.cfg.Redact.Scrub(b)
	reds = append(reds, redactions(counts, where+".body")...)
	d, err := g.cfg.Record.putBody(scrubbed)
	if err != nil {
		return Body{}, nil, err
	}
	return Body{Headers: hdr, Digest: d, Bytes: int64(len(b)), Truncated: truncated}, reds, nil
}

// capture keeps what a response writer sends, up to the body cap.
type capture struct {
	buf       bytes.Buffer
	truncated bool
}

func (c *capture) write(p []byte) {
	if c == nil {
		return
	}
	if room := gatewayMaxBody - c.buf.Len(); room < len(p) {
		c.truncated = true
		p = p[:max(room, 0)]
	}
	c.buf.Write(p)
}

// RawExchange is one HTTP exchange made outside a gateway (a real judge's
// call from the host), as sent and received, for PutExchanges to store.
type RawExchange struct {
	Method, URL    string
	StartedAt      time.Time
	Latency        time.Duration
	RequestHeader  http.Header
	RequestBody    []byte
	Status         int
	ResponseHeader http.Header
	ResponseBody   []byte
	// Err is the transport's error, when no response came.
	Err string
}

// PutExchanges stores exchanges made outside a gateway as one exchange log
// named name, scrubbed as a gateway scrubs its own: credential headers
// replaced, the run's secrets removed, each removal listed.
func (rec *Recorder) PutExchanges(name, provider, upstream string, red *redact.Redactor, raws []RawExchange) (digest.Digest, error) {
	g := &Gateway{cfg: GatewayConfig{Record: rec, Redact: red}}
	l := &ExchangeLog{Format: ExchangeFormat, Cell: name, Provider: provider, Upstream: upstream, Exchanges: []Exchange{}}
	for i, x := range raws {
		e := Exchange{Seq: i + 1, Method: x.Method, Path: x.URL, StartedAt: x.StartedAt.UTC().Round(time.Microsecond),
			LatencySeconds: x.Latency.Seconds(), Status: x.Status, Fault: x.Err}
		if u, err := url.Parse(x.URL); err == nil {
			e.Path = u.RequestURI()
		}
		e.ModelAsked = requestModel(x.RequestBody)
		var err error
		var reds []Redaction
		if e.Request, reds, err = g.recordBody(x.RequestBody, false, x.RequestHeader, "request", nil); err != nil {
			return "", err
		}
		e.Redactions = append(e.Redactions, reds...)
		if e.Response, reds, err = g.recordBody(x.ResponseBody, false, x.ResponseHeader, "response", nil); err != nil {
			return "", err
		}
		e.Redactions = append(e.Redactions, reds...)
		l.Exchanges = append(l.Exchanges, e)
	}
	return rec.PutLog(l)
}
