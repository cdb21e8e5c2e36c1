package gateway

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/runner/gateway/standin"
	"github.com/skillgate/skillgate/runner/redact"

	"github.com/opencontainers/go-digest"
)

// TestParseUpstream: a base URL is taken with or without its /v1 (as
// ANTHROPIC_BASE_URL and OPENAI_BASE_URL are usually written), a proxy's
// own path prefix is kept, and the doubled /v1 is refused with the fix.
func TestParseUpstream(t *testing.T) {
	for in, want := range map[string]string{
		"https://api.openai.com/v1":           "https://api.openai.com",
		"https://api.openai.com/v1/":          "https://api.openai.com",
		"https://api.anthropic.com":           "https://api.anthropic.com",
		"https://api.anthropic.com/":          "https://api.anthropic.com",
		"http://127.0.0.1:4000/anthropic":     "http://127.0.0.1:4000/anthropic",
		"http://127.0.0.1:4000/openai/v1":     "http://127.0.0.1:4000/openai",
		"http://127.0.0.1:4000/v1beta/openai": "http://127.0.0.1:4000/v1beta/openai",
	} {
		u, err := ParseUpstream(in)
		if err != nil || u.String() != want {
			t.Errorf("ParseUpstream(%q) = %v, %v; want %s", in, u, err, want)
		}
	}
	for in, want := range map[string]string{
		"https://api.openai.com/v1/v1": `upstream "https://api.openai.com/v1/v1" names /v1 twice, so requests would go to /v1/v1/...: write "https://api.openai.com/v1"`,
		"api.openai.com":               `upstream "api.openai.com" is not an http(s) URL (such as https://api.anthropic.com)`,
		"https://x.test/v1?key=1":      `upstream "https://x.test/v1?key=1": a base URL has no query or fragment`,
	} {
		if _, err := ParseUpstream(in); err == nil || err.Error() != want {
			t.Errorf("ParseUpstream(%q): %v\nwant %s", in, err, want)
		}
	}
}

// TestGatewayUpstreamWithV1: over real HTTP, an upstream written with /v1
// reaches the stand-in's /v1/messages and /v1/responses, never /v1/v1.
func TestGatewayUpstreamWithV1(t *testing.T) {
	for _, family := range []string{"anthropic", "openai"} {
		up := standin.New(t, false)
		g := gwStart(t, GatewayConfig{Provider: family, Upstream: up.URL + "/v1/", APIKey: "sk-real-key-0123"})
		status, body, err := gwModelCall(t, g, gwUnixClient(g.Socket()), family, "c")
		if err != nil || status != 200 || !strings.Contains(body, "stand-in reply") {
			t.Fatalf("%s: %d %v %s", family, status, err, body)
		}
		want := map[string]int{"anthropic": up.Count("POST /v1/messages"), "openai": up.Count("POST /v1/responses")}[family]
		if want != 1 || up.Total() != 1 {
			t.Errorf("%s: the stand-in served %v", family, up.Requests())
		}
	}
}

// TestGatewayAuthAndHeaders: the credential reaches the provider as its auth
// says (x-api-key, bearer, OAuth with Anthropic's beta flag, Azure's
// api-key), the extra headers with their host values, the cell's dummy key
// never; the recorded exchange holds neither the credential nor a header's
// value, and lists what it scrubbed by variable.
func TestGatewayAuthAndHeaders(t *testing.T) {
	const key, org = "sk-real-key-0123", "org-secret-4567"
	for _, tc := range []struct {
		family, auth string
		header, want string
		beta         bool
	}{
		{"anthropic", "", "X-Api-Key", key, false},
		{"anthropic", "bearer", "Authorization", "Bearer " + key, false},
		{"anthropic", "oauth", "Authorization", "Bearer " + key, true},
		{"openai", "", "Authorization", "Bearer " + key, false},
		{"openai", "api-key", "Api-Key", key, false},
	} {
		t.Run(tc.family+"-"+tc.auth, func(t *testing.T) {
			up := standin.New(t, false)
			out := t.TempDir()
			red := redact.NewNamed(nil, redact.Secret{Name: "TEST_KEY", Value: key}, redact.Secret{Name: "TEST_ORG", Value: org})
			g := gwStart(t, GatewayConfig{Provider: tc.family, Upstream: up.URL, APIKey: key, Auth: tc.auth, CredentialEnv: "TEST_KEY",
				Headers: map[string]string{"OpenAI-Organization": org}, HeaderEnv: map[string]string{"OpenAI-Organization": "TEST_ORG"},
				Redact: red, Record: &Recorder{Out: out}})
			status, body, err := gwModelCall(t, g, gwUnixClient(g.Socket()), tc.family, "c")
			if err != nil || status != 200 {
				t.Fatalf("%d %v %s", status, err, body)
			}
			got := up.Received()
			if len(got) != 1 {
				t.Fatalf("received %d requests", len(got))
			}
			h := got[0].Header
			if h.Get(tc.header) != tc.want || h.Get("Openai-Organization") != org {
				t.Errorf("headers %v", h)
			}
			for _, other := range []string{"X-Api-Key", "Authorization", "Api-Key"} {
				if other != tc.header && h.Get(other) != "" {
					t.Errorf("%s sent too: %q", other, h.Get(other))
				}
			}
			if beta := strings.Contains(h.Get("Anthropic-Beta"), oauthBeta); beta != tc.beta {
				t.Errorf("anthropic-beta %q", h.Get("Anthropic-Beta"))
			}
			u := g.Usage("c")
			if u.Exchanges == "" || u.ExchangeCount != 1 {
				t.Fatalf("usage %+v", u)
			}
			l, err := ReadLog(out, u.Exchanges)
			if err != nil {
				t.Fatal(err)
			}
			ex := l.Exchanges[0]
			if ex.Request.Headers.Get(tc.header) != redact.Redacted || ex.Request.Headers.Get("Openai-Organization") != redact.Redacted {
				t.Errorf("stored request headers %v", ex.Request.Headers)
			}
			want := map[string]bool{"TEST_KEY request.headers": true, "TEST_ORG request.headers": true}
			for _, r := range ex.Redactions {
				delete(want, r.Name+" "+r.Where)
			}
			if len(want) != 0 {
				t.Errorf("redactions %+v, missing %v", ex.Redactions, want)
			}
			// No stored byte holds a secret.
			filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				b, _ := os.ReadFile(p)
				if bytes.Contains(b, []byte(key)) || bytes.Contains(b, []byte(org)) {
					t.Errorf("%s holds a secret", p)
				}
				return nil
			})
		})
	}
}

// TestGatewaySampling: the gateway sets the temperature (0 included) and the
// reasoning effort in the request it forwards, where each API keeps them,
// leaves the rest of the body as the agent sent it, and records what it set.
func TestGatewaySampling(t *testing.T) {
	zero := 0.0
	for _, family := range []string{"anthropic", "openai"} {
		up := standin.New(t, false)
		out := t.TempDir()
		g := gwStart(t, GatewayConfig{Provider: family, Upstream: up.URL, APIKey: "sk-real-key-0123", Record: &Recorder{Out: out},
			Sampling: func(cell string) *Sampling {
				if cell == "plain" {
					return nil
				}
				return &Sampling{Temperature: &zero, Effort: "low"}
			}})
		c := gwUnixClient(g.Socket())
		for _, cell := range []string{"set", "plain"} {
			if status, body, err := gwModelCall(t, g, c, family, cell); err != nil || status != 200 {
				t.Fatalf("%s %s: %d %v %s", family, cell, status, err, body)
			}
		}
		got := up.Received()
		var set, plain map[string]any
		json.Unmarshal(got[0].Body, &set)
		json.Unmarshal(got[1].Body, &plain)
		effort := map[string]string{"anthropic": "output_config", "openai": "reasoning"}[family]
		if temp, ok := set["temperature"].(float64); !ok || temp != 0 {
			t.Errorf("%s: forwarded %s", family, got[0].Body)
		}
		if e, _ := set[effort].(map[string]any); e["effort"] != "low" {
			t.Errorf("%s: forwarded %s", family, got[0].Body)
		}
		if set["model"] == nil || set["stream"] != true {
			t.Errorf("%s: the agent's fields were lost: %s", family, got[0].Body)
		}
		if _, ok := plain["temperature"]; ok || plain[effort] != nil {
			t.Errorf("%s: a cell without sampling got %s", family, got[1].Body)
		}
		u := g.Usage("set")
		if u.Sampling == nil || u.Sampling.Temperature == nil || *u.Sampling.Temperature != 0 || u.Sampling.Effort != "low" {
			t.Errorf("%s: usage sampling %+v", family, u.Sampling)
		}
		l, err := ReadLog(out, u.Exchanges)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := ReadBody(out, l.Exchanges[0].Request.Digest)
		if err != nil || !bytes.Equal(stored, got[0].Body) || l.Exchanges[0].Sampling == nil {
			t.Errorf("%s: recorded %s (%v), sent %s", family, stored, err, got[0].Body)
		}
		if g.Usage("plain").Sampling != nil {
			t.Errorf("%s: plain cell sampling %+v", family, g.Usage("plain").Sampling)
		}
	}
}

// TestGatewayTokenConventions: a response with cached tokens is counted in
// one convention for both providers (input without cache reads), and the
// provider's own figures are kept beside it.
func TestGatewayTokenConventions(t *testing.T) {
	for _, tc := range []struct {
		family        string
		input, rawIn  int64
		convention    string
		cachedInInput bool
	}{
		{"openai", standin.Input - 100, standin.Input, "openai", true},
		{"anthropic", standin.Input, standin.Input, "anthropic", false},
	} {
		up := standin.New(t, false)
		up.CacheRead(100)
		g := gwStart(t, GatewayConfig{Provider: tc.family, Upstream: up.URL, APIKey: "sk-real-key-0123",
			Prices: &suite.Prices{InputPerMTok: gwPtr(3.0), OutputPerMTok: gwPtr(15.0), CacheReadPerMTok: gwPtr(0.3)}})
		if status, body, err := gwModelCall(t, g, gwUnixClient(g.Socket()), tc.family, "c"); err != nil || status != 200 {
			t.Fatalf("%d %v %s", status, err, body)
		}
		u := g.Usage("c")
		if u.Tokens == nil || u.Tokens.Input != tc.input || u.Tokens.CacheRead != 100 || u.Tokens.Output != standin.Output {
			t.Errorf("%s: tokens %+v", tc.family, u.Tokens)
		}
		if p := u.ProviderTokens; p == nil || p.Convention != tc.convention || p.Input != tc.rawIn || p.CacheRead != 100 {
			t.Errorf("%s: provider tokens %+v", tc.family, u.ProviderTokens)
		}
		// The same tokens cost the same whichever provider counted them.
		want := (float64(tc.input)*3 + 100*0.3 + float64(standin.Output)*15) / 1e6
		if u.USD == nil || *u.USD < want-1e-12 || *u.USD > want+1e-12 {
			t.Errorf("%s: USD %v, want %v", tc.family, u.USD, want)
		}
		if u.ModelAnswered != "stand-in-model" || u.LatencySeconds <= 0 {
			t.Errorf("%s: usage %+v", tc.family, u)
		}
	}
}

// TestGatewayRecordReplay: a stand-in session is recorded, the stand-in
// stops, and a replay gateway answers the same requests — with the
// identifiers and dates that differ between sessions changed — with the
// recorded bytes; a request the recording does not hold is refused with
// where it departs, and the cell's usage says it is invalid.
func TestGatewayRecordReplay(t *testing.T) {
	up := standin.New(t, false)
	up.Reply("recorded answer")
	out := t.TempDir()
	rec := gwStart(t, GatewayConfig{Provider: "anthropic", Upstream: up.URL, APIKey: "sk-real-key-0123", Record: &Recorder{Out: out}})
	c := gwUnixClient(rec.Socket())
	ask := func(g *Gateway, c *http.Client, tok, session, text string) (int, []byte) {
		body := `{"model":"claude-sonnet-4-5","stream":true,"max_tokens":64,"metadata":{"user_id":"session_` + session +
			`"},"messages":[{"role":"user","content":"Today is 2026-12-0` + session[:1] + `. ` + text + `"}]}`
		resp, b := gwPost(t, c, "/v1/messages?beta=true", "X-Api-Key", tok, body)
		return resp.StatusCode, b
	}
	tok := rec.NewCellToken("c1")
	var recorded [][]byte
	for _, q := range []string{"first question", "second question"} {
		status, b := ask(rec, c, tok, "1-aaaa", q)
		if status != 200 {
			t.Fatalf("record: %d %s", status, b)
		}
		recorded = append(recorded, b)
	}
	u := rec.Usage("c1")
	if u.ExchangeCount != 2 {
		t.Fatalf("usage %+v", u)
	}
	up.Close()

	replayDir := t.TempDir()
	g := gwStart(t, GatewayConfig{Provider: "replay", Replay: &Recording{Dir: out, Logs: map[string]digest.Digest{"c1": u.Exchanges}},
		Record: &Recorder{Out: replayDir}})
	c = gwUnixClient(g.Socket())
	tok = g.NewCellToken("c1")
	for i, q := range []string{"first question", "second question"} {
		status, b := ask(g, c, tok, "2-bbbb", q)
		if status != 200 || !bytes.Equal(b, recorded[i]) {
			t.Fatalf("replay %d: %d\n%s\nwant\n%s", i, status, b, recorded[i])
		}
	}
	ru := g.Usage("c1")
	if ru.Unrecovered != "" || ru.Replayed != u.Exchanges || ru.Requests != 2 || ru.ModelAnswered != "stand-in-model" || ru.Tokens == nil {
		t.Errorf("replay usage %+v", ru)
	}
	status, b := ask(g, c, tok, "2-bbbb", "a third question")
	want := `recorded exchange 1, differs at messages[0].content: recorded \"Today is …. first question\", this run \"Today is …. a third question\"`
	if status != 400 || !strings.Contains(string(b), "skillgate replay: request 3 of cell c1 (POST /v1/messages?beta=true): no recorded exchange matches it") {
		t.Errorf("unmatched: %d %s", status, b)
	}
	ru = g.Usage("c1")
	if !strings.HasPrefix(ru.Unrecovered, "replay: request 3 of cell c1") {
		t.Errorf("unrecovered %q", ru.Unrecovered)
	}
	// A fresh replay whose first request departs: the message says where.
	g2 := gwStart(t, GatewayConfig{Provider: "replay", Replay: &Recording{Dir: out, Logs: map[string]digest.Digest{"c1": u.Exchanges}}})
	if status, b := ask(g2, gwUnixClient(g2.Socket()), g2.NewCellToken("c1"), "2-bbbb", "a third question"); status != 400 || !strings.Contains(string(b), want) {
		t.Errorf("departing: %d %s\nwant %s", status, b, want)
	}
	// A cell the recording has nothing of.
	tok = g.NewCellToken("c2")
	if status, b := ask(g, c, tok, "2-bbbb", "first question"); status != 400 || !strings.Contains(string(b), "holds no exchanges of cell c2") {
		t.Errorf("unknown cell: %d %s", status, b)
	}
}
