package gateway

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/gateway/standin"
)

// gwRaw sends one request over the gateway's socket exactly as written: the request
// target goes out byte for byte, with no client cleaning or escaping it.
func gwRaw(t *testing.T, sock, method, target, header, value, body string) (int, string) {
	t.Helper()
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n%s: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		method, target, header, value, len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestGatewayExactEndpoints tries to reach anything but the exact model endpoints of
// each API through the gateway — traversal, percent-encodings, double slashes, query
// tricks, trailing slashes, case variants, other methods, the other API's paths —
// and checks each is answered 403 by the gateway in the API's error format, recorded,
// and never reaches the upstream; the endpoints themselves reach it at exactly their
// path.
func TestGatewayExactEndpoints(t *testing.T) {
	up := standin.New(t, false)
	const body = `{"model":"m","stream":true,"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
	type row struct {
		method, target string
		// forward is the upstream request it must become ("METHOD /path"); "" means
		// refused.
		forward string
	}
	cases := map[string][]row{
		"anthropic": {
			{"POST", "/v1/messages", "POST /v1/messages"},
			{"POST", "/v1/messages?beta=true", "POST /v1/messages"},
			{"POST", "/v1/messages/count_tokens?beta=true", "POST /v1/messages/count_tokens"},
			{"GET", "/v1/models", "GET /v1/models"},
			{"GET", "/v1/models?limit=20&after_id=x", "GET /v1/models"},
			{"GET", "/v1/models/claude-sonnet-4-5-20250929", "GET /v1/models/claude-sonnet-4-5-20250929"},
			// traversal
			{"GET", "/v1/models/../files", ""},
			{"GET", "/v1/models/../../v1/organizations/api_keys", ""},
			{"POST", "/v1/models/../messages", ""},
			{"POST", "/v1/./messages", ""},
			{"POST", "/v1/messages/.", ""},
			{"GET", "/v1/models/.", ""},
			{"GET", "/v1/models/..", ""},
			{"POST", "/v1/threads/abc/messages", ""},
			{"POST", "/x/v1/messages", ""},
			{"POST", "/v1/messages/batches", ""},
			// encodings
			{"GET", "/v1/models/%2e%2e/files", ""},
			{"GET", "/v1/models/%2E%2E/files", ""},
			{"GET", "/v1/models%2F..%2Ffiles", ""},
			{"GET", "/v1/models/%252e%252e/files", ""},
			{"POST", "/v1/%6dessages", ""},
			{"POST", "/v1/messages%00", ""},
			{"GET", "/v1/models/a%2Fb", ""},
			{"GET", `/v1/models/..\files`, ""},
			// double slashes
			{"POST", "//v1/messages", ""},
			{"POST", "/v1//messages", ""},
			{"GET", "/v1/models//x", ""},
			// query tricks
			{"POST", "/v1/messages%3F..", ""},
			{"POST", "/v1/messages?x=/../", ""},
			{"POST", "/v1/messages?x=%2F..%2Ffiles", ""},
			{"POST", "/v1/messages?/../files", ""},
			{"POST", "/v1/messages;x=1", ""},
			{"POST", "http://api.example.com/v1/messages", ""},
			// trailing slashes and case
			{"POST", "/v1/messages/", ""},
			{"GET", "/v1/models/", ""},
			{"POST", "/V1/messages", ""},
			{"POST", "/v1/Messages", ""},
			{"GET", "/v1/MODELS", ""},
			// methods
			{"GET", "/v1/messages", ""},
			{"PUT", "/v1/messages", ""},
			{"DELETE", "/v1/models/x", ""},
			{"POST", "/v1/models", ""},
			// the other API
			{"POST", "/v1/responses", ""},
			{"POST", "/v1/chat/completions", ""},
			{"GET", "/v1/files", ""},
		},
		"openai": {
			{"POST", "/v1/responses", "POST /v1/responses"},
			{"POST", "/v1/chat/completions", "POST /v1/chat/completions"},
			{"GET", "/v1/models", "GET /v1/models"},
			{"GET", "/v1/models/gpt-5.1-codex", "GET /v1/models/gpt-5.1-codex"},
			{"GET", "/v1/models/ft:gpt-4o-mini:org:x", "GET /v1/models/ft:gpt-4o-mini:org:x"},
			{"POST", "/v1/responses/resp_1/cancel", ""},
			{"GET", "/v1/responses/resp_1", ""},
			{"POST", "/v1/responses/", ""},
			{"POST", "/v1/responses/../files", ""},
			{"POST", "/v1/%72esponses", ""},
			{"POST", "/v1/threads/abc/messages", ""},
			{"GET", "/v1/files", ""},
			{"POST", "/v1/files", ""},
			{"GET", "/v1/organization/admin_api_keys", ""},
			{"POST", "/v1/messages", ""},
			{"POST", "/v1/messages/count_tokens", ""},
			{"POST", "/V1/Responses", ""},
		},
	}
	for family, rows := range cases {
		g := gwStart(t, GatewayConfig{Provider: family, Upstream: up.URL, APIKey: "sk-real-" + family})
		header, value := "x-api-key", ""
		tok := g.NewCellToken("cell")
		if family == "anthropic" {
			value = tok
		} else {
			header, value = "Authorization", "Bearer "+tok
		}
		refused := 0
		for _, r := range rows {
			before := up.Total()
			var beforeFwd int
			if r.forward != "" {
				beforeFwd = up.Count(r.forward)
			}
			status, b := gwRaw(t, g.Socket(), r.method, r.target, header, value, body)
			after := up.Total()
			if r.forward == "" {
				refused++
				if status != http.StatusForbidden || !strings.Contains(b, "permission_error") || !strings.Contains(b, "not a model endpoint") {
					t.Errorf("%s %s %s: %d %s, want 403 permission_error", family, r.method, r.target, status, b)
				}
				if family == "openai" && !strings.Contains(b, `"error":{`) || family == "anthropic" && !strings.Contains(b, `"type":"error"`) {
					t.Errorf("%s %s %s: refusal not in the API's error format: %s", family, r.method, r.target, b)
				}
				if after != before {
					t.Errorf("%s %s %s: the upstream saw %d requests", family, r.method, r.target, after-before)
				}
				continue
			}
			if status != http.StatusOK || after != before+1 || up.Count(r.forward) != beforeFwd+1 {
				t.Errorf("%s %s %s: %d %s; the upstream saw %d requests, %d of %s", family, r.method, r.target, status, b, after-before, up.Count(r.forward)-beforeFwd, r.forward)
			}
		}
		u := g.Usage("cell")
		if len(u.Refused)+u.RefusedDropped != refused || u.Refused[0].Method == "" || u.Refused[0].Path == "" {
			t.Errorf("%s: %d refusals recorded (+%d dropped), want %d: %+v", family, len(u.Refused), u.RefusedDropped, refused, u.Refused)
		}
		if len(u.Faults) != 0 || u.Unrecovered != "" {
			t.Errorf("%s: a refusal is the agent's doing, not a provider fault: %+v", family, u.Faults)
		}
	}
	// The query is forwarded as sent, and the key is the real one.
	for i, k := range up.Credentials() {
		if !strings.HasPrefix(k, "sk-real-") {
			t.Errorf("upstream request %d carried key %q", i, k)
		}
	}
}

// TestMatchEndpoint checks the matcher alone on what an HTTP server may hand it.
func TestMatchEndpoint(t *testing.T) {
	for _, c := range []struct {
		family, method, target, path, query string
	}{
		{"anthropic", "POST", "/v1/messages?beta=true", "/v1/messages", "beta=true"},
		{"anthropic", "GET", "/v1/models/claude-haiku-4-5", "/v1/models/claude-haiku-4-5", ""},
		{"anthropic", "GET", "/v1/models/claude%2Dhaiku", "", ""},
		{"anthropic", "POST", "*", "", ""},
		{"anthropic", "POST", "", "", ""},
		{"anthropic", "POST", "/v1/messages?", "/v1/messages", ""},
		{"anthropic", "POST", "/v1/messages?a=b?c", "", ""},
		{"openai", "POST", "/v1/chat/completions", "/v1/chat/completions", ""},
		{"openai", "POST", "/v1/chat/completions/x", "", ""},
		{"scripted", "POST", "/v1/messages", "", ""},
	} {
		p, q, ok := matchEndpoint(c.family, c.method, c.target)
		if ok != (c.path != "") || p != c.path || q != c.query {
			t.Errorf("%s %s %s: %q %q %v, want %q %q", c.family, c.method, c.target, p, q, ok, c.path, c.query)
		}
	}
}
