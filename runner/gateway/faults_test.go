package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/gateway/standin"
)

// gwFaultsGateway starts a gateway for family in front of the stand-in.
func gwFaultsGateway(t *testing.T, up *standin.Server, family string, attempts int, stall time.Duration) (*Gateway, *http.Client) {
	t.Helper()
	g := gwStart(t, GatewayConfig{Provider: family, Upstream: up.URL, APIKey: "sk-real-key-0123",
		Retry: RetryPolicy{Attempts: attempts, Delay: 20 * time.Millisecond, MaxDelay: 2 * time.Second}, Stall: stall})
	return g, gwUnixClient(g.Socket())
}

// gwModelCall makes one streamed model call of family for cell and reads the whole
// answer; err is the read's error (a cut stream).
func gwModelCall(t *testing.T, g *Gateway, c *http.Client, family, cell string) (status int, body string, err error) {
	t.Helper()
	tok := g.NewCellToken(cell)
	path, payload := "/v1/messages?beta=true", `{"model":"claude-sonnet-4-5","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
	if family == "openai" {
		path, payload = "/v1/responses", `{"model":"gpt-5-codex","stream":true,"input":[{"role":"user","content":"hi"}]}`
	}
	req, _ := http.NewRequest(http.MethodPost, "http://gateway"+path, strings.NewReader(payload))
	req.Header.Set("Content-Type", "application/json")
	if family == "openai" {
		req.Header.Set("Authorization", "Bearer "+tok)
	} else {
		req.Header.Set("X-Api-Key", tok)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// TestGatewayRetriesTransient: 429 (honouring retry-after and retry-after-ms), 529,
// 500, 502, 503, 504 and a reset before the first byte are retried by the gateway, so
// the agent gets the provider's answer and never the error; the retries are counted,
// no fault is recorded, and only the answer's tokens are accounted.
func TestGatewayRetriesTransient(t *testing.T) {
	for _, c := range []struct {
		name    string
		family  string
		faults  []standin.Fault
		atLeast time.Duration // the waits the provider asked for
	}{
		{name: "500 twice", family: "anthropic", faults: []standin.Fault{{Status: 500, Type: "api_error", Message: "Internal server error"}, {Status: 500, Type: "api_error", Message: "Internal server error"}}},
		{name: "529 three times", family: "anthropic", faults: []standin.Fault{{Status: 529, Type: "overloaded_error", Message: "Overloaded"}, {Status: 529, Type: "overloaded_error", Message: "Overloaded"}, {Status: 529, Type: "overloaded_error", Message: "Overloaded"}}},
		{name: "502 503 504", family: "anthropic", faults: []standin.Fault{{Status: 502, Message: "bad gateway"}, {Status: 503, Message: "unavailable"}, {Status: 504, Message: "timeout"}}},
		{name: "429 retry-after-ms", family: "anthropic", faults: []standin.Fault{{Status: 429, Type: "rate_limit_error", Message: "rate limited", RetryAfterMs: "150"}, {Status: 429, Type: "rate_limit_error", Message: "rate limited", RetryAfterMs: "150"}}, atLeast: 300 * time.Millisecond},
		{name: "429 retry-after", family: "anthropic", faults: []standin.Fault{{Status: 429, Type: "rate_limit_error", Message: "rate limited", RetryAfter: "1"}}, atLeast: time.Second},
		{name: "reset before the first byte", family: "anthropic", faults: []standin.Fault{{Reset: true}, {Reset: true}}},
		{name: "openai 500 and 429", family: "openai", faults: []standin.Fault{{Status: 500, Type: "server_error", Message: "The server had an error"}, {Status: 429, Type: "rate_limit_exceeded", Message: "Rate limit reached", RetryAfterMs: "10"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := standin.New(t, false)
			for _, f := range c.faults {
				up.FailNext(1, f)
			}
			g, client := gwFaultsGateway(t, up, c.family, 4, 10*time.Second)
			start := time.Now()
			status, body, err := gwModelCall(t, g, client, c.family, "cell")
			took := time.Since(start)
			last := "event: message_stop"
			what := "POST /v1/messages"
			if c.family == "openai" {
				last, what = "event: response.completed", "POST /v1/responses"
			}
			if err != nil || status != 200 || !strings.Contains(body, last) {
				t.Fatalf("the agent got %d %v:\n%s", status, err, body)
			}
			if n := up.Count(what); n != len(c.faults)+1 {
				t.Errorf("the stand-in served %d requests, want %d", n, len(c.faults)+1)
			}
			if took < c.atLeast {
				t.Errorf("answered after %s: the provider asked for %s of waiting", took, c.atLeast)
			}
			u := g.Usage("cell")
			if u.Retries != len(c.faults) || len(u.Faults) != 0 || u.Unrecovered != "" || u.Requests != 1 {
				t.Errorf("usage %+v", u)
			}
			if u.Tokens == nil || u.Tokens.Input != standin.Input || u.Tokens.Output != standin.Output {
				t.Errorf("tokens %+v, want the answer's alone", u.Tokens)
			}
		})
	}
}

// TestGatewayFaultsAfterRetries: once retries are exhausted, or for an error retrying
// cannot mend, the provider's answer reaches the agent as it was sent, and the cell's
// usage records the fault with the provider's status, type and message; it stays
// unrecovered until an exchange of the cell succeeds. The agent's own bad request
// (400) is no fault.
func TestGatewayFaultsAfterRetries(t *testing.T) {
	for _, c := range []struct {
		name     string
		fault    standin.Fault
		served   int // requests the stand-in gets
		want     string
		noFault  bool
		attempts int
	}{
		{name: "persistent 529", fault: standin.Fault{Status: 529, Type: "overloaded_error", Message: "Overloaded"}, served: 3, attempts: 3,
			want: "provider: HTTP 529 overloaded_error: Overloaded (from URL/v1/messages, after 2 retries)"},
		{name: "persistent 429", fault: standin.Fault{Status: 429, Type: "rate_limit_error", Message: "Number of requests has exceeded your rate limit", RetryAfterMs: "5"}, served: 4, attempts: 4,
			want: "provider: HTTP 429 rate_limit_error: Number of requests has exceeded your rate limit (from URL/v1/messages, after 3 retries)"},
		{name: "429 asking for more than maxDelay", fault: standin.Fault{Status: 429, Type: "rate_limit_error", Message: "slow down", RetryAfter: "120"}, served: 1, attempts: 4,
			want: "provider: HTTP 429 rate_limit_error: slow down (from URL/v1/messages)"},
		{name: "503 the provider says not to retry", fault: standin.Fault{Status: 503, Type: "api_error", Message: "down", ShouldRetryFalse: true}, served: 1, attempts: 4,
			want: "provider: HTTP 503 api_error: down (from URL/v1/messages)"},
		{name: "401", fault: standin.Fault{Status: 401, Type: "authentication_error", Message: "invalid x-api-key"}, served: 1, attempts: 4,
			want: "provider: HTTP 401 authentication_error: invalid x-api-key (from URL/v1/messages)"},
		{name: "403", fault: standin.Fault{Status: 403, Type: "permission_error", Message: "Your API key does not have permission"}, served: 1, attempts: 4,
			want: "provider: HTTP 403 permission_error: Your API key does not have permission (from URL/v1/messages)"},
		{name: "404 model", fault: standin.Fault{Status: 404, Type: "not_found_error", Message: "model: claude-sonnet-9"}, served: 1, attempts: 4,
			want: "provider: HTTP 404 not_found_error: model: claude-sonnet-9 (from URL/v1/messages)"},
		{name: "error event mid-stream", fault: standin.Fault{ErrorEvent: true}, served: 1, attempts: 4,
			want: "provider: stream error overloaded_error: Overloaded (from URL/v1/messages)"},
		{name: "400 is the agent's", fault: standin.Fault{Status: 400, Type: "invalid_request_error", Message: "max_tokens: Field required"}, served: 1, attempts: 4, noFault: true},
		{name: "413 is the agent's", fault: standin.Fault{Status: 413, Type: "request_too_large", Message: "too large"}, served: 1, attempts: 4, noFault: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := standin.New(t, false)
			up.FailAlways(&c.fault)
			g, client := gwFaultsGateway(t, up, "anthropic", c.attempts, 10*time.Second)
			status, body, _ := gwModelCall(t, g, client, "anthropic", "cell")
			if c.fault.Status != 0 && (status != c.fault.Status || !strings.Contains(body, c.fault.Message)) {
				t.Errorf("the agent got %d %s, want the provider's %d", status, body, c.fault.Status)
			}
			if n := up.Count("POST /v1/messages"); n != c.served {
				t.Errorf("the stand-in served %d requests, want %d", n, c.served)
			}
			u := g.Usage("cell")
			if c.noFault {
				if len(u.Faults) != 0 || u.Unrecovered != "" {
					t.Errorf("the agent's own request was taken for a provider fault: %+v", u)
				}
				return
			}
			want := strings.ReplaceAll(c.want, "URL", up.URL)
			if len(u.Faults) != 1 || u.Unrecovered != want {
				t.Fatalf("usage faults %+v\nunrecovered %q\nwant        %q", u.Faults, u.Unrecovered, want)
			}
			if f := u.Faults[0]; f.Method != "POST" || f.Status != c.fault.Status || f.URL != up.URL+"/v1/messages" || f.Retries != c.served-1 {
				t.Errorf("fault %+v", f)
			}
			// A later exchange that succeeds recovers the cell; the fault stays listed.
			up.FailAlways(nil)
			if status, _, err := gwModelCall(t, g, client, "anthropic", "cell"); status != 200 || err != nil {
				t.Fatalf("after the fault: %d %v", status, err)
			}
			if u := g.Usage("cell"); u.Unrecovered != "" || len(u.Faults) != 1 {
				t.Errorf("after a success: unrecovered %q, faults %+v", u.Unrecovered, u.Faults)
			}
		})
	}
}

// TestGatewayUntrustedCertificate: a provider whose certificate the host does not
// trust is a TLS fault, never retried, never an HTTP exchange; trusting it mends it.
func TestGatewayUntrustedCertificate(t *testing.T) {
	up := standin.New(t, true)
	g, client := gwFaultsGateway(t, up, "anthropic", 4, 10*time.Second)
	status, body, _ := gwModelCall(t, g, client, "anthropic", "cell")
	if status != http.StatusBadGateway || !strings.Contains(body, "certificate") {
		t.Errorf("the agent got %d %s", status, body)
	}
	u := g.Usage("cell")
	if len(u.Faults) != 1 || u.Faults[0].Kind != FaultTLS || u.Faults[0].Retries != 0 ||
		!strings.HasPrefix(u.Unrecovered, "provider: TLS failed: tls: failed to verify certificate: x509: certificate signed by unknown authority (from "+up.URL) {
		t.Errorf("faults %+v, unrecovered %q", u.Faults, u.Unrecovered)
	}
	if up.Total() != 0 {
		t.Errorf("the stand-in served %d requests over an untrusted connection", up.Total())
	}
	trusted := gwStart(t, GatewayConfig{Provider: "anthropic", Upstream: up.URL, APIKey: "k", RootCAs: up.Pool()})
	if status, _, err := gwModelCall(t, trusted, gwUnixClient(trusted.Socket()), "anthropic", "cell"); status != 200 || err != nil {
		t.Errorf("with the certificate trusted: %d %v", status, err)
	}
}

// TestGatewayStall: a provider that falls silent, before its headers or mid-stream,
// is cut after limits.stall (not retried), the agent's stream ends, what was received
// is accounted, and the fault says so.
func TestGatewayStall(t *testing.T) {
	const stall = 300 * time.Millisecond
	for _, c := range []struct {
		name   string
		fault  standin.Fault
		status int
		tokens bool
	}{
		{"mid-stream", standin.Fault{StallAfterStart: true}, 200, true},
		{"before the headers", standin.Fault{StallBeforeHeaders: true}, http.StatusGatewayTimeout, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := standin.New(t, false)
			up.FailAlways(&c.fault)
			g, client := gwFaultsGateway(t, up, "anthropic", 4, stall)
			start := time.Now()
			status, body, err := gwModelCall(t, g, client, "anthropic", "cell")
			took := time.Since(start)
			if status != c.status || took > 5*time.Second || strings.Contains(body, "message_stop") {
				t.Errorf("the agent got %d %v after %s:\n%s", status, err, took, body)
			}
			if c.status == 200 && err == nil {
				t.Errorf("a stalled stream ended as if whole")
			}
			if up.Count("POST /v1/messages") != 1 {
				t.Errorf("a stall was retried: %d requests", up.Count("POST /v1/messages"))
			}
			u := g.Usage("cell")
			if len(u.Faults) != 1 || u.Faults[0].Kind != FaultStall || !strings.HasPrefix(u.Unrecovered, "provider: stalled: ") || !strings.Contains(u.Unrecovered, "300ms") {
				t.Errorf("faults %+v, unrecovered %q", u.Faults, u.Unrecovered)
			}
			if c.tokens && (u.Tokens == nil || u.Tokens.Input != standin.Input) || u.Requests != 1 {
				t.Errorf("a stalled exchange is accounted: requests %d, tokens %+v", u.Requests, u.Tokens)
			}
		})
	}
}

// TestGatewayCutStreamsAreAccounted: a stream the provider aborts is a fault whose
// usage so far is accounted; a stream the agent abandons is accounted and no fault.
// Both end the proxy with http.ErrAbortHandler, which skips any accounting placed
// after it.
func TestGatewayCutStreamsAreAccounted(t *testing.T) {
	up := standin.New(t, false)
	up.FailNext(1, standin.Fault{AbortAfterStart: true})
	g, client := gwFaultsGateway(t, up, "anthropic", 4, 10*time.Second)
	status, body, err := gwModelCall(t, g, client, "anthropic", "aborted")
	if status != 200 || err == nil || !strings.Contains(body, "message_start") {
		t.Errorf("the agent got %d %v:\n%s", status, err, body)
	}
	u := g.Usage("aborted")
	if u.Requests != 1 || u.Tokens == nil || u.Tokens.Input != standin.Input || u.ModelAnswered != "stand-in-model" {
		t.Errorf("an aborted stream's usage: %+v (tokens %+v)", u, u.Tokens)
	}
	if len(u.Faults) != 1 || u.Faults[0].Kind != FaultAbort || !strings.HasPrefix(u.Unrecovered, "provider: stream cut: ") {
		t.Errorf("faults %+v, unrecovered %q", u.Faults, u.Unrecovered)
	}

	// The agent reads the first event and goes away while the provider streams on.
	up.FailNext(1, standin.Fault{StallAfterStart: true})
	tok := g.NewCellToken("abandoned")
	req, _ := http.NewRequest(http.MethodPost, "http://gateway/v1/messages", strings.NewReader(`{"model":"m","stream":true}`))
	req.Header.Set("X-Api-Key", tok)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if _, err := io.ReadAtLeast(resp.Body, buf, 10); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	client.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for g.Usage("abandoned").Requests == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	u = g.Usage("abandoned")
	if u.Requests != 1 || u.Tokens == nil || u.Tokens.Input != standin.Input {
		t.Errorf("an abandoned stream's usage: %+v (tokens %+v)", u, u.Tokens)
	}
	if len(u.Faults) != 0 || u.Unrecovered != "" {
		t.Errorf("the agent's going away was taken for a provider fault: %+v", u.Faults)
	}
}

// TestGatewayPreflight: one GET /v1/models with the real key and the provider's auth
// header (TestPreflightSaysWhatToFix, in package runner, has the failures).
func TestGatewayPreflight(t *testing.T) {
	ctx := context.Background()
	for _, family := range []string{"anthropic", "openai"} {
		up := standin.New(t, false)
		g, _ := gwFaultsGateway(t, up, family, 2, 5*time.Second)
		if note, err := g.Preflight(ctx); err != nil || note != "" {
			t.Errorf("%s: preflight %q %v", family, note, err)
		}
		if up.Count("GET /v1/models") != 1 {
			t.Errorf("%s: the stand-in served %v", family, up.Requests())
		}
		if keys := up.Credentials(); keys[0] != "sk-real-key-0123" {
			t.Errorf("%s: preflight sent key %q", family, keys[0])
		}
	}
}
