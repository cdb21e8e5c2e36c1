package gateway

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/skillgate/skillgate/pipeline/grade"

	"github.com/opencontainers/go-digest"
)

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
	Tokens *grade.Tokens `json:"tokens,omitempty"`
	// LatencySeconds sums the time from each request's arrival to the end of its response.
	LatencySeconds float64 `json:"latencySeconds"`
	// USD is the cost of Tokens at the configured per-token prices; nil without such
	// prices or without token counts, never a made-up 0.
	USD *float64 `json:"usd,omitempty"`
	// Retries counts the tries the gateway made again after a transient error,
	// recovered or not.
	Retries int `json:"retries,omitempty"`
	// Faults are the cell's exchanges that failed through the provider's or the
	// configuration's fault, after retries (the first maxRecorded of them;
	// FaultsDropped counts the rest).
	Faults        []ProviderFault `json:"faults,omitempty"`
	FaultsDropped int             `json:"faultsDropped,omitempty"`
	// Unrecovered is the last fault, as text, when no exchange of the cell succeeded
	// after it: the cell's outcome is the provider's doing, and the cell is invalid.
	Unrecovered string `json:"unrecovered,omitempty"`
	// SpendCut: the spend cap refused a model call of the cell, so its session
	// was cut (Unrecovered says so) and the cell is invalid.
	SpendCut bool `json:"spendCut,omitempty"`
	// Refused are requests that were not model endpoints, answered 403 by the gateway
	// and never forwarded (the first maxRecorded; RefusedDropped counts the rest).
	Refused        []RefusedRequest `json:"refused,omitempty"`
	RefusedDropped int              `json:"refusedDropped,omitempty"`

	// Upstream is the base URL a real provider's requests went to.
	Upstream string `json:"upstream,omitempty"`
	// ProviderTokens sum the responses' token counts in the provider's own
	// convention (Tokens are skillgate's: input without cache reads).
	ProviderTokens *ProviderTokens `json:"providerTokens,omitempty"`
	// Sampling is what the gateway set in the cell's model requests.
	Sampling *Sampling `json:"sampling,omitempty"`
	// Exchanges names the cell's exchange log (store/exchanges/logs/HEX),
	// when the gateway recorded; ExchangeCount is how many it holds.
	Exchanges     digest.Digest `json:"exchanges,omitempty"`
	ExchangeCount int           `json:"exchangeCount,omitempty"`
	// Replayed names the recorded exchange log a replay answered the cell
	// from.
	Replayed digest.Digest `json:"replayed,omitempty"`
}

// maxRecorded bounds the faults and refusals a cell's usage lists.
const maxRecorded = 16

// Usage reports what cell has used so far, once the exchanges it has in flight have
// ended (they end when the cell's connections do); the zero CellUsage for an unknown
// cell.
func (g *Gateway) Usage(cell string) CellUsage {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.cells[cell]
	if c == nil {
		return CellUsage{}
	}
	for c.active > 0 {
		g.idle.Wait()
	}
	u := CellUsage{
		Requests:       c.requests,
		ModelAsked:     strings.Join(c.asked, ", "),
		ModelAnswered:  strings.Join(c.answered, ", "),
		LatencySeconds: c.latency.Seconds(),
		USD:            PriceTokens(g.cfg.Prices, c.tokens),
		Retries:        c.retries,
		Faults:         slices.Clone(c.faults),
		FaultsDropped:  c.faultsDropped,
		Refused:        slices.Clone(c.refused),
		RefusedDropped: c.refusedDropped,
	}
	if c.tokens != nil {
		t := *c.tokens
		u.Tokens = &t
	}
	if c.unrecovered != nil {
		u.Unrecovered = c.unrecovered.String()
	}
	if c.replayMiss != nil {
		u.Unrecovered = c.replayMiss.String()
	}
	if why := spendCutReason(c); why != "" {
		u.Unrecovered, u.SpendCut = why, true
	}
	if c.provider != nil {
		p := *c.provider
		u.ProviderTokens = &p
	}
	u.Sampling = c.sampled
	if g.upstream != nil {
		u.Upstream = g.upstream.String()
	}
	if g.cfg.Replay != nil {
		u.Replayed = g.cfg.Replay.Logs[c.name]
	}
	if g.cfg.Record != nil {
		d, err := g.cellLog(c)
		if err == nil {
			err = c.recordErr
		}
		if err != nil {
			// Skillgate's fault, not the agent's: invalid, so the cell reruns.
			u.Unrecovered = "record exchanges: " + err.Error()
		}
		u.Exchanges, u.ExchangeCount = d, len(c.exchanges)
	}
	return u
}

// Spent is the USD spent so far by every cell, from reported tokens at the configured
// per-token prices (0 without them).
func (g *Gateway) Spent() float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	var total float64
	for _, c := range g.cells {
		if usd := PriceTokens(g.cfg.Prices, c.tokens); usd != nil {
			total += *usd
		}
	}
	return total
}

// account records one exchange for its cell: the request, the model, the tokens seen
// (of a cut stream too), the latency, for a real provider whether the exchange
// succeeded or failed by a provider fault, and, when the gateway records, the
// exchange itself.
func (g *Gateway) account(c *gatewayCell, r *http.Request, ow *observingWriter, ex *exchange, rec *exchangeRecord, asked string, counted bool, cut bool) {
	model, tokens := ow.obs.result()
	raw := ow.obs.raw
	var fault *ProviderFault
	succeeded := false
	if ex != nil {
		fault, succeeded = g.outcome(r, ow, ex, cut)
	}
	if rec.fault != nil {
		fault = rec.fault
	}
	latency := time.Since(rec.started)
	if g.cfg.Record != nil {
		// Stored off the cell's path: the agent has its whole answer once
		// the handler returns, and Usage waits for the cell's active ones.
		resp := response{header: ow.Header().Clone(), status: ow.obs.status}
		if ow.capture != nil {
			resp.body, resp.truncated = ow.capture.buf.Bytes(), ow.capture.truncated
		}
		g.mu.Lock()
		c.active++
		g.mu.Unlock()
		held := rec.held
		rec.held = 0
		go func() {
			recorded, err := g.record(rec, resp, ex, asked, model, tokens, raw, fault, latency)
			g.mu.Lock()
			c.held -= held
			g.held -= held
			if recorded != nil {
				c.exchanges = append(c.exchanges, *recorded)
			}
			if err != nil && c.recordErr == nil {
				c.recordErr = err
			}
			c.active--
			g.mu.Unlock()
			g.idle.Broadcast()
		}()
	}
	var notify func()
	defer func() {
		if notify != nil {
			notify() // outside the lock: the run may stop cells from it
		}
	}()
	g.mu.Lock()
	defer g.mu.Unlock()
	if counted {
		c.requests++
	}
	c.latency += latency
	c.asked = appendDistinct(c.asked, asked)
	c.answered = appendDistinct(c.answered, model)
	if tokens != nil {
		if c.tokens == nil {
			c.tokens = &grade.Tokens{}
		}
		c.tokens.Input += tokens.Input
		c.tokens.Output += tokens.Output
		c.tokens.CacheRead += tokens.CacheRead
		c.tokens.CacheWrite += tokens.CacheWrite
		c.provider = c.provider.add(raw)
	}
	if rec.sampling != nil {
		c.sampled = rec.sampling
	}
	if rec.fault != nil && c.replayMiss == nil {
		c.replayMiss = rec.fault
	}
	if ex == nil && rec.fault == nil {
		return
	}
	if ex != nil {
		c.retries += ex.retries
	}
	switch {
	case fault != nil:
		if len(c.faults) < maxRecorded {
			c.faults = append(c.faults, *fault)
		} else {
			c.faultsDropped++
		}
		c.unrecovered = fault
	case succeeded:
		c.unrecovered = nil
	}
	if on := g.cfg.OnExchange; on != nil && ex != nil && (fault != nil || succeeded) {
		name := c.name
		notify = func() { on(name, fault) }
	}
}

// response is what the cell was answered, as recorded.
type response struct {
	header    http.Header
	status    int
	body      []byte
	truncated bool
}

// record stores one exchange's bodies and returns its log entry.
func (g *Gateway) record(rec *exchangeRecord, resp response, ex *exchange, asked, model string, tokens *grade.Tokens, raw *ProviderTokens, fault *ProviderFault, latency time.Duration) (*Exchange, error) {
	secret := g.secretHeaderVars()
	reqHeader := rec.header
	if ex != nil {
		ex.mu.Lock()
		if ex.sent != nil {
			reqHeader = ex.sent
		}
		ex.mu.Unlock()
	}
	e := &Exchange{Seq: rec.seq, Method: rec.method, Path: rec.target, StartedAt: rec.started.UTC().Round(time.Microsecond),
		LatencySeconds: latency.Seconds(), Status: resp.status, ModelAsked: asked, ModelAnswered: model,
		Tokens: tokens, ProviderTokens: raw, USD: PriceTokens(g.cfg.Prices, tokens), Sampling: rec.sampling, ReplayOf: rec.replayOf}
	if e.Status == 0 {
		e.Status = http.StatusOK
	}
	if ex != nil {
		e.Retries = ex.retries
	}
	if fault != nil {
		e.Fault = fault.String()
	}
	var err error
	var reds []Redaction
	if e.Request, reds, err = g.recordBody(rec.body, false, reqHeader, "request", secret); err != nil {
		return nil, err
	}
	e.Redactions = append(e.Redactions, reds...)
	if e.Response, reds, err = g.recordBody(resp.body, resp.truncated, resp.header, "response", nil); err != nil {
		return nil, err
	}
	e.Redactions = append(e.Redactions, reds...)
	return e, nil
}

// cellLog stores the cell's exchange log, once per set of exchanges; the
// caller holds g.mu.
func (g *Gateway) cellLog(c *gatewayCell) (digest.Digest, error) {
	if len(c.exchanges) == 0 {
		return "", nil
	}
	if c.logCount == len(c.exchanges) {
		return c.logDigest, nil
	}
	l := &ExchangeLog{Format: ExchangeFormat, Cell: c.name, Provider: g.cfg.Provider, Exchanges: slices.Clone(c.exchanges)}
	if g.upstream != nil {
		l.Upstream = g.upstream.String()
	}
	if g.cfg.Replay != nil {
		l.Replayed = g.cfg.Replay.Logs[c.name]
	}
	slices.SortFunc(l.Exchanges, func(a, b Exchange) int { return a.Seq - b.Seq })
	d, err := g.cfg.Record.PutLog(l)
	if err != nil {
		return "", err
	}
	c.logDigest, c.logCount = d, len(c.exchanges)
	return d, nil
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
