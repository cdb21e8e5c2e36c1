package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/gateway/standin"
	"github.com/skillgate/skillgate/runner/redact"
)

// BenchmarkGatewayOverhead measures one streamed model call with a 100 KB request body
// through the gateway (unix socket in, the stand-in provider out, with its endpoint
// check, retry transport, stall timer and usage observer) against the same call made
// directly to the stand-in, in the same run. Compare the two ns/op: their difference is
// the gateway's cost per request, their ratio its overhead.
func BenchmarkGatewayOverhead(b *testing.B) {
	up := standin.New(&testing.T{}, false)
	defer up.Close()
	body := []byte(`{"model":"claude-sonnet-4-5","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"` + strings.Repeat("x", 100<<10) + `"}]}`)
	g, err := StartGateway(GatewayConfig{Dir: b.TempDir(), Provider: "anthropic", Upstream: up.URL, APIKey: "sk-real",
		Retry: RetryPolicy{Attempts: 4, Delay: time.Second, MaxDelay: time.Minute}, Stall: 2 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	tok := g.NewCellToken("bench")
	call := func(b *testing.B, c *http.Client, url, key string) {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Api-Key", key)
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || n < 500 {
			b.Fatalf("%d, %d bytes", resp.StatusCode, n)
		}
	}
	// Paired: one direct call, one through the gateway, alternately, so both meet the
	// same machine; the ratio and the difference per call are reported.
	b.Run("paired", func(b *testing.B) {
		direct := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		through := gwUnixClient(g.Socket())
		var d, gw time.Duration
		var added []float64 // µs per pair, for min/median/max
		for b.Loop() {
			t0 := time.Now()
			call(b, direct, up.URL+"/v1/messages?beta=true", "sk-real")
			t1 := time.Now()
			call(b, through, "http://gateway/v1/messages?beta=true", tok)
			d, gw = d+t1.Sub(t0), gw+time.Since(t1)
			added = append(added, float64(time.Since(t1)-t1.Sub(t0))/1e3)
		}
		slices.Sort(added)
		b.ReportMetric(float64(gw)/float64(d), "gateway/direct")
		b.ReportMetric(float64(gw-d)/float64(b.N)/1e3, "overhead-µs/call")
		b.ReportMetric(added[len(added)/2], "median-overhead-µs")
		b.Logf("added per call at 100 KB, µs: min %.0f, p25 %.0f, median %.0f, p75 %.0f, max %.0f (%d pairs)",
			added[0], added[len(added)/4], added[len(added)/2], added[len(added)*3/4], added[len(added)-1], len(added))
	})
	b.Run("direct", func(b *testing.B) {
		c := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			call(b, c, up.URL+"/v1/messages?beta=true", "sk-real")
		}
	})
	b.Run("gateway", func(b *testing.B) {
		c := gwUnixClient(g.Socket())
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			call(b, c, "http://gateway/v1/messages?beta=true", tok)
		}
	})
}

// TestRequestModel: the top-level model of a request, as json.Unmarshal reads it, in
// the real CLIs' requests and in bodies built to mislead a scanner.
func TestRequestModel(t *testing.T) {
	for _, f := range []string{"claude-code-request-1.json", "claude-code-request-2-after-skill.json", "codex-exec-request-1.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "gateway", f))
		if err != nil {
			t.Fatal(err)
		}
		var want struct{ Model string }
		json.Unmarshal(b, &want)
		if got := requestModel(b); got != want.Model || got == "" {
			t.Errorf("%s: %q, want %q", f, got, want.Model)
		}
	}
	for body, want := range map[string]string{
		`{"model":"m"}`: "m",
		` { "stream" : true , "model" : "m\u0031\"x" } `:   "m1\"x",
		`{"messages":[{"model":"inner"}],"model":"outer"}`: "outer",
		`{"system":"\"model\":\"fake\"","model":"real"}`:   "real",
		`{"a":{"model":"inner"},"b":"\\","model":"x"}`:     "x",
		`{"messages":"model","x":1}`:                       "",
		`{"model":3}`:                                      "",
		`{"model":"unterminated`:                           "",
		`[{"model":"m"}]`:                                  "",
		``:                                                 "",
	} {
		if got := requestModel([]byte(body)); got != want {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
	}
}

// BenchmarkGatewayRecording measures what recording every exchange costs: one streamed
// model call with a distinct 100 KB request body (as a growing conversation sends) through
// a gateway that records (bodies scrubbed of the run's secrets and stored by digest)
// against the same call through one that does not, alternately, in the same run. The
// ratio is recording's overhead per request; bytes-stored/call what it leaves on disk.
func BenchmarkGatewayRecording(b *testing.B) {
	up := standin.New(&testing.T{}, false)
	defer up.Close()
	start := func(rec *Recorder) (*Gateway, string) {
		g, err := StartGateway(GatewayConfig{Dir: b.TempDir(), Provider: "anthropic", Upstream: up.URL, APIKey: "sk-real-key-0123",
			Retry: RetryPolicy{Attempts: 4, Delay: time.Second, MaxDelay: time.Minute}, Stall: 2 * time.Minute, Record: rec,
			Redact: redact.NewNamed(nil, redact.Secret{Name: "KEY", Value: "sk-real-key-0123"}, redact.Secret{Name: "TOKEN", Value: "tok-other-secret"})})
		if err != nil {
			b.Fatal(err)
		}
		return g, g.NewCellToken("bench")
	}
	out := b.TempDir()
	plain, plainTok := start(nil)
	defer plain.Close()
	recording, recTok := start(&Recorder{Out: out})
	defer recording.Close()
	pad := strings.Repeat("x", 100<<10)
	n := 0
	call := func(b *testing.B, c *http.Client, key string) {
		n++
		body := `{"model":"claude-sonnet-4-5","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"` + strconv.Itoa(n) + pad + `"}]}`
		req, _ := http.NewRequest(http.MethodPost, "http://gateway/v1/messages?beta=true", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Api-Key", key)
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		got, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || got < 500 {
			b.Fatalf("%d, %d bytes", resp.StatusCode, got)
		}
	}
	pc, rc := gwUnixClient(plain.Socket()), gwUnixClient(recording.Socket())
	var p, r time.Duration
	calls := 0
	for b.Loop() {
		t0 := time.Now()
		call(b, pc, plainTok)
		t1 := time.Now()
		call(b, rc, recTok)
		p, r = p+t1.Sub(t0), r+time.Since(t1)
		calls++
	}
	if u := recording.Usage("bench"); u.Exchanges == "" || u.Unrecovered != "" {
		b.Fatalf("usage %+v", u)
	}
	var stored int64
	filepath.Walk(out, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			stored += fi.Size()
		}
		return err
	})
	b.ReportMetric(float64(r)/float64(p), "recording/plain")
	b.ReportMetric(float64(r-p)/float64(calls)/1e3, "overhead-µs/call")
	b.ReportMetric(float64(stored)/float64(calls), "bytes-stored/call")
}
