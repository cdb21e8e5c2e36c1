package runner

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/gateway"
	"github.com/skillgate/skillgate/runner/gateway/standin"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// TestPreflightSaysWhatToFix: a refused key, a provider out of reach or an
// untrusted certificate fails the check before any cell with the provider's own
// words and what to fix; a missing model list or another answer lets the run go
// on with a note.
func TestPreflightSaysWhatToFix(t *testing.T) {
	ctx := context.Background()
	up := standin.New(t, false)
	g := preflightGateway(t, up, "anthropic", 2, 5*time.Second)
	plan := &plan.Plan{Agent: plan.PlanAgent{Agent: suite.Agent{Provider: "anthropic", Upstream: up.URL, CredentialEnv: "SKILLGATE_TEST_KEY"}}}
	var log strings.Builder
	up.FailModels(&standin.Fault{Status: 401, Type: "authentication_error", Message: "invalid x-api-key"})
	err := preflight(ctx, g, plan, &log)
	want := "check provider anthropic: " + up.URL + " answered GET /v1/models with HTTP 401 authentication_error: invalid x-api-key; the key in SKILLGATE_TEST_KEY is refused: fix it and run again (no cell was started)"
	if err == nil || err.Error() != want {
		t.Errorf("401:\n got %v\nwant %s", err, want)
	}
	up.FailModels(&standin.Fault{Status: 403, Type: "permission_error", Message: "key disabled"})
	if err := preflight(ctx, g, plan, &log); err == nil || !strings.Contains(err.Error(), "HTTP 403 permission_error: key disabled") {
		t.Errorf("403: %v", err)
	}
	up.FailModels(&standin.Fault{Status: 404, Type: "not_found_error", Message: "no such route"})
	if err := preflight(ctx, g, plan, &log); err != nil || !strings.Contains(log.String(), "answered 404 to GET /v1/models") {
		t.Errorf("404: %v; log %q", err, log.String())
	}
	up.FailModels(&standin.Fault{Status: 500, Type: "api_error", Message: "boom"})
	if err := preflight(ctx, g, plan, &log); err != nil || !strings.Contains(log.String(), "HTTP 500 api_error: boom; going on") {
		t.Errorf("500: %v; log %q", err, log.String())
	}
	if n := up.Count("GET /v1/models"); n != 5 {
		t.Errorf("the stand-in served %d model lists, want 5 (the 500 retried once)", n)
	}

	// Out of reach: a closed port.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := "http://" + ln.Addr().String()
	ln.Close()
	g2 := startTestGateway(t, gateway.GatewayConfig{Provider: "anthropic", Upstream: closed, APIKey: "k", Retry: gateway.RetryPolicy{Attempts: 2, Delay: 10 * time.Millisecond, MaxDelay: time.Second}})
	plan.Agent.Upstream = closed
	start := time.Now()
	err = preflight(ctx, g2, plan, &log)
	if err == nil || !strings.Contains(err.Error(), "GET "+closed+"/v1/models: connection failed: ") || !strings.Contains(err.Error(), "connection refused") ||
		!strings.Contains(err.Error(), "check agent.upstream") || time.Since(start) > 5*time.Second {
		t.Errorf("closed port: %v after %s", err, time.Since(start))
	}
	var pe *gateway.PreflightError
	if _, err := g2.Preflight(ctx); !errors.As(err, &pe) || pe.Fault.Kind != gateway.FaultConnection || pe.Fault.Retries != 1 {
		t.Errorf("closed port: %#v, want a connection fault after one retry", err)
	}

	// An untrusted certificate.
	tlsUp := standin.New(t, true)
	g3 := preflightGateway(t, tlsUp, "anthropic", 2, 5*time.Second)
	plan.Agent.Upstream = tlsUp.URL
	if err := preflight(ctx, g3, plan, &log); err == nil || !strings.Contains(err.Error(), "TLS failed: tls: failed to verify certificate") {
		t.Errorf("untrusted certificate: %v", err)
	}

	// Silence.
	up.FailModels(&standin.Fault{StallBeforeHeaders: true})
	g4 := preflightGateway(t, up, "anthropic", 2, 200*time.Millisecond)
	start = time.Now()
	if err := preflight(ctx, g4, plan, &log); err == nil || !strings.Contains(err.Error(), "stalled: no response byte for 200ms") || time.Since(start) > 3*time.Second {
		t.Errorf("silent provider: %v after %s", err, time.Since(start))
	}
}

// preflightGateway starts a gateway for family in front of the stand-in.
func preflightGateway(t *testing.T, up *standin.Server, family string, attempts int, stall time.Duration) *gateway.Gateway {
	t.Helper()
	return startTestGateway(t, gateway.GatewayConfig{Provider: family, Upstream: up.URL, APIKey: "sk-real-key-0123",
		Retry: gateway.RetryPolicy{Attempts: attempts, Delay: 20 * time.Millisecond, MaxDelay: 2 * time.Second}, Stall: stall})
}

// startTestGateway starts a gateway in a fresh folder, closed when the test ends.
func startTestGateway(t *testing.T, cfg gateway.GatewayConfig) *gateway.Gateway {
	t.Helper()
	cfg.Dir = t.TempDir()
	g, err := gateway.StartGateway(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("close gateway: %v", err)
		}
	})
	return g
}
