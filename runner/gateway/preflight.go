package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/skillgate/skillgate/runner/redact"
)

// PreflightError is a provider that refused the key or could not be reached before any
// cell ran.
type PreflightError struct{ Fault ProviderFault }

func (e *PreflightError) Error() string { return e.Fault.String() }

// Preflight asks the provider for its model list (GET /v1/models, Gemini's
// /v1beta/models) with the real key
// and the provider's auth header, through the retries and stall bound cells get. A
// refused key (401, 403), an unreachable provider or a failed TLS handshake is a
// *PreflightError: nothing would run. Any other answer lets the run go on, with a note
// when it was not 2xx (a proxy without a model list answers 404).
func (g *Gateway) Preflight(ctx context.Context) (note string, err error) {
	if g.upstream == nil {
		return "", nil
	}
	ex := &exchange{}
	u := *g.upstream
	list := "/v1/models"
	if g.family == "gemini" {
		list = "/v1beta/models"
	}
	u.Path += list
	req, err := http.NewRequestWithContext(context.WithValue(ctx, exchangeKey{}, ex), http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("check provider: %w", err)
	}
	if g.family == "anthropic" {
		req.Header.Set("Anthropic-Version", "2023-06-01")
	}
	g.authorize(req.Header)
	f := ProviderFault{Method: http.MethodGet, URL: u.String()}
	resp, err := g.transport.RoundTrip(req)
	f.Retries = ex.retries
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		tf := transportFault(err, ex.isStalled(), g.cfg.Stall)
		f.Kind, f.Message = tf.Kind, tf.Message
		return "", &PreflightError{Fault: f}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, observeErrorMax))
	if resp.StatusCode/100 == 2 {
		return "", nil
	}
	pe := parseProviderError(b)
	f.Kind, f.Status, f.Type, f.Message = FaultStatus, resp.StatusCode, pe.Type, strings.ReplaceAll(pe.Message, g.cfg.APIKey, redact.Redacted)
	if geminiKeyInvalid(resp.StatusCode, b) {
		f.Type = KeyInvalid
		return "", &PreflightError{Fault: f}
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return "", &PreflightError{Fault: f}
	case http.StatusNotFound:
		return fmt.Sprintf("%s answered 404 to GET %s (no model list: a proxy?), so the key is not checked before the cells; going on", g.upstream, list), nil
	default:
		return fmt.Sprintf("%s answered GET %s with %s; going on (cells that meet it too will be invalid)", g.upstream, list, f.What()), nil
	}
}
