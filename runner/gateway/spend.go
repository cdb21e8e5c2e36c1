package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// SpendGate admits a cell's model calls under the run's spend cap before the
// gateway forwards them (runner/spend's Budget is the one).
type SpendGate interface {
	// AdmitCall holds bound, a call's upper bound in USD, or says why the cap
	// has no room for it.
	AdmitCall(ctx context.Context, cell string, bound float64) error
	// SettleCall releases an admitted call, which cost usd.
	SettleCall(cell string, bound, usd float64)
}

// InputMargin is what a call may be charged beyond its request's bytes, in input
// tokens: a token is at least one byte of the request's text, and the request's
// JSON holds the text and more; the margin covers what a provider adds (message
// framing, and the system prompt it writes for tools, ToolMargin more).
const (
	InputMargin = 256
	ToolMargin  = 1024
)

// CallBound is the most a model call can cost at p: inputTokens at the highest of
// p's input prices (cache writes and reads included) and outputTokens at its
// output price; nil without per-token prices.
func CallBound(p *suite.Prices, inputTokens, outputTokens int64) *float64 {
	if !tokenPriced(p) {
		return nil
	}
	in := 0.0
	for _, v := range []*float64{p.InputPerMTok, p.CacheReadPerMTok, p.CacheWritePerMTok} {
		if v != nil {
			in = max(in, *v)
		}
	}
	out := 0.0
	if p.OutputPerMTok != nil {
		out = *p.OutputPerMTok
	}
	usd := (float64(inputTokens)*in + float64(outputTokens)*out) / 1e6
	return &usd
}

// requestBound reads a model request's bounds: its input tokens (bytes plus the
// margins) and its output tokens (its max_tokens, max_output_tokens,
// max_completion_tokens or Gemini's generationConfig.maxOutputTokens, else the
// stated limit); an error says why the output has
// no bound.
func requestBound(body []byte, limit *int64) (input, output int64, err error) {
	var req struct {
		MaxTokens           *int64          `json:"max_tokens"`
		MaxOutputTokens     *int64          `json:"max_output_tokens"`
		MaxCompletionTokens *int64          `json:"max_completion_tokens"`
		Tools               json.RawMessage `json:"tools"`
		// Gemini's generateContent.
		GenerationConfig *struct {
			MaxOutputTokens *int64 `json:"maxOutputTokens"`
		} `json:"generationConfig"`
	}
	json.Unmarshal(body, &req) // an unreadable body names no max_tokens: the limit bounds it
	input = int64(len(body)) + InputMargin
	if len(bytes.TrimSpace(req.Tools)) > 0 && !bytes.Equal(bytes.TrimSpace(req.Tools), []byte("null")) {
		input += ToolMargin
	}
	bounds := []*int64{req.MaxTokens, req.MaxOutputTokens, req.MaxCompletionTokens}
	if req.GenerationConfig != nil {
		bounds = append(bounds, req.GenerationConfig.MaxOutputTokens)
	}
	for _, v := range bounds {
		if v != nil && *v > 0 {
			output = max(output, *v)
		}
	}
	if output == 0 {
		if limit == nil {
			return 0, 0, errors.New("the request names no max_tokens and the suite states no output limit for the model (agent: prices: maxOutputTokens)")
		}
		output = *limit
	}
	return input, output, nil
}

// spendBound is the upper bound of one model call of the gateway's: the
// scripted model's largest scripted usage, or the request's bounds.
func (g *Gateway) spendBound(body []byte) (float64, error) {
	p := g.cfg.Prices
	if g.scripted != nil && g.cfg.Script != nil {
		var most float64
		for _, r := range g.cfg.Script.Rules {
			if v := PriceTokens(p, &grade.Tokens{Input: r.Usage.Input, Output: r.Usage.Output}); v != nil {
				most = max(most, *v)
			}
		}
		return most, nil
	}
	var limit *int64
	if p != nil {
		limit = p.MaxOutputTokens
	}
	in, out, err := requestBound(body, limit)
	if err != nil {
		return 0, err
	}
	if v := CallBound(p, in, out); v != nil {
		return *v, nil
	}
	return 0, nil // no token prices: the session's perCall price is its cost
}

// admitSpend holds a model call's bound under the spend cap, or answers the
// call itself, never forwarding it, and marks the cell cut: its session is not a
// measurement, and the next run runs it again. It returns the bound held and
// whether the call may go on.
func (g *Gateway) admitSpend(w http.ResponseWriter, r *http.Request, c *gatewayCell, family string, body []byte) (float64, bool) {
	bound, err := g.spendBound(body)
	if err == nil {
		err = g.cfg.Spend.AdmitCall(r.Context(), c.name, bound)
	}
	if err == nil {
		return bound, true
	}
	g.mu.Lock()
	if c.spendCut == "" {
		c.spendCut = err.Error()
	}
	g.mu.Unlock()
	// Not a rate limit: an agent retries those, and no retry can fit.
	gatewayError(w, family, http.StatusBadRequest, "invalid_request_error", "skillgate gateway: spend cap: "+err.Error())
	return 0, false
}

// settleSpend releases a call's bound at what it cost: its reported tokens at
// the prices, or its bound when a success reported none (a stream cut before its
// usage may still be charged).
func (g *Gateway) settleSpend(c *gatewayCell, ow *observingWriter, bound float64) {
	_, tokens := ow.obs.result()
	usd := bound
	if v := PriceTokens(g.cfg.Prices, tokens); v != nil {
		usd = *v
	} else if ow.obs.status >= 400 {
		usd = 0 // an error answer, charged nothing
	}
	g.cfg.Spend.SettleCall(c.name, bound, usd)
}

// spendCutReason is why the cap cut the cell, for its usage ("" when it did not).
func spendCutReason(c *gatewayCell) string {
	if c.spendCut == "" {
		return ""
	}
	return fmt.Sprintf("spend cap: a model call was refused: %s", c.spendCut)
}
