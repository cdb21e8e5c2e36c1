package gateway

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/gateway/standin"
)

// upstreamDials sends waves of concurrent model calls through a gateway that
// keeps conns idle connections to the stand-in provider, each wave waiting
// for the last, and returns how many connections the gateway dialed.
func upstreamDials(tb testing.TB, up *standin.Server, conns, concurrent, waves int) int64 {
	tb.Helper()
	g, err := StartGateway(GatewayConfig{Dir: tb.TempDir(), Provider: "anthropic", Upstream: up.URL, APIKey: "sk-real",
		Retry: RetryPolicy{Attempts: 1, Delay: time.Second, MaxDelay: time.Second}, Stall: time.Minute, Conns: conns})
	if err != nil {
		tb.Fatal(err)
	}
	defer g.Close()
	var dials atomic.Int64
	base := g.transport.base.(*http.Transport)
	dial := base.DialContext
	base.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dial(ctx, network, addr)
	}
	tok := g.NewCellToken("conns")
	c := gwUnixClient(g.Socket())
	c.Transport.(*http.Transport).MaxIdleConnsPerHost = concurrent
	body := []byte(`{"model":"claude-sonnet-4-5","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
	for range waves {
		var wg sync.WaitGroup
		for range concurrent {
			wg.Go(func() {
				req, _ := http.NewRequest(http.MethodPost, "http://gateway/v1/messages?beta=true", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Api-Key", tok)
				resp, err := c.Do(req)
				if err != nil {
					tb.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					tb.Errorf("status %d", resp.StatusCode)
				}
			})
		}
		wg.Wait()
	}
	return dials.Load()
}

// TestGatewayKeepsConnsIdle: with Conns sized to the cells talking at once,
// waves of concurrent calls reuse the first wave's upstream connections; with
// the transport's default of 2 idle, each wave dials most of them again.
func TestGatewayKeepsConnsIdle(t *testing.T) {
	up := standin.New(t, false)
	const concurrent, waves = 16, 4
	sized := upstreamDials(t, up, concurrent, concurrent, waves)
	floor := upstreamDials(t, up, 0, concurrent, waves)
	if sized > 2*concurrent {
		t.Errorf("sized to %d: %d dials for %d waves of %d calls; want about %d", concurrent, sized, waves, concurrent, concurrent)
	}
	if floor <= 2*concurrent {
		t.Errorf("2 idle: only %d dials for %d waves of %d calls; the comparison shows nothing", floor, waves, concurrent)
	}
}

// BenchmarkGatewayConns reports new upstream connections per request at 64
// concurrent cells, the gateway's idle connections sized to them against the
// transport's default of 2, in the same run: each new connection is a TCP
// (and against HTTPS, a TLS) handshake before the request.
func BenchmarkGatewayConns(b *testing.B) {
	up := standin.New(&testing.T{}, false)
	defer up.Close()
	const concurrent, waves = 64, 8
	var sized, floor int64
	for b.Loop() {
		sized += upstreamDials(b, up, concurrent, concurrent, waves)
		floor += upstreamDials(b, up, 0, concurrent, waves)
	}
	calls := float64(b.N * concurrent * waves)
	b.ReportMetric(float64(sized)/calls, "sized-dials/call")
	b.ReportMetric(float64(floor)/calls, "2idle-dials/call")
}

// TestGatewayHTTP2ToTLSUpstream: to an HTTPS provider that offers HTTP/2, as
// the providers' endpoints do, the gateway speaks HTTP/2, so concurrent
// cells share one connection instead of a TLS handshake each; the agent's
// side stays HTTP/1.1 over the unix socket.
func TestGatewayHTTP2ToTLSUpstream(t *testing.T) {
	up := standin.New(t, true)
	g := gwStart(t, GatewayConfig{Provider: "anthropic", Upstream: up.URL, APIKey: "k", RootCAs: up.Pool(), Conns: 8})
	var dials atomic.Int64
	base := g.transport.base.(*http.Transport)
	dial := base.DialContext
	base.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dial(ctx, network, addr)
	}
	call := func() {
		if status, _, err := gwModelCall(t, g, gwUnixClient(g.Socket()), "anthropic", "cell"); status != 200 || err != nil {
			t.Errorf("call through the gateway: %d %v", status, err)
		}
	}
	call() // the first call opens the connection; calls racing it may dial their own
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			call()
		}()
	}
	wg.Wait()
	got := up.Received()
	if len(got) < 9 {
		t.Fatalf("the stand-in received %d requests, want 9 or more", len(got))
	}
	for _, r := range got {
		if r.Proto != "HTTP/2.0" {
			t.Errorf("%s %s reached the provider over %s, want HTTP/2.0", r.Method, r.Path, r.Proto)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("the gateway dialed the provider %d times for one call and then 8 concurrent ones over HTTP/2, want 1", n)
	}
}
