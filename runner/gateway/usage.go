package gateway

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/skillgate/skillgate/pipeline/grade"
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
	// Refused are requests that were not model endpoints, answered 403 by the gateway
	// and never forwarded (the first maxRecorded; RefusedDropped counts the rest).
	Refused        []RefusedRequest `json:"refused,omitempty"`
	RefusedDropped int              `json:"refusedDropped,omitempty"`
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
// (of a cut stream too), the latency, and for a real provider whether the exchange
// succeeded or failed by a provider fault.
func (g *Gateway) account(c *gatewayCell, r *http.Request, ow *observingWriter, ex *exchange, asked string, counted bool, start time.Time, cut bool) {
	model, tokens := ow.obs.result()
	var fault *ProviderFault
	succeeded := false
	if ex != nil {
		fault, succeeded = g.outcome(r, ow, ex, cut)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if counted {
		c.requests++
	}
	c.latency += time.Since(start)
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
	}
	if ex == nil {
		return
	}
	c.retries += ex.retries
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
