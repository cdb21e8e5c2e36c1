package gateway

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// gwUnixClient talks HTTP to a gateway socket, as the forwarder lets a cell do.
func gwUnixClient(sock string) *http.Client {
	return &http.Client{
		Timeout: 20 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}},
	}
}

func gwStart(t *testing.T, cfg GatewayConfig) *Gateway {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	if cfg.Retry.Attempts == 0 {
		cfg.Retry = RetryPolicy{Attempts: 1, Delay: 10 * time.Millisecond, MaxDelay: time.Second}
	}
	g, err := StartGateway(cfg)
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

// gwPost sends body to the gateway with the given auth header ("x-api-key" or
// "authorization") and returns the response with its body read.
func gwPost(t *testing.T, c *http.Client, path, header, value, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://gateway"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if header != "" {
		req.Header.Set(header, value)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func gwPtr[T any](v T) *T { return &v }

// gwAnthropicStream is a canned Messages stream in the API's shape.
var gwAnthropicStream = []string{
	"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01XyZ\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5-20250929\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":1200,\"cache_creation_input_tokens\":300,\"cache_read_input_tokens\":5000,\"output_tokens\":1}}}\n\n",
	"event: ping\ndata: {\"type\": \"ping\"}\n\n",
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel",
	"lo\"}}\n\n",
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":345}}\n\n",
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
}

// gwUpstreamSeen is what the fake provider received.
type gwUpstreamSeen struct {
	mu       sync.Mutex
	requests []*http.Request
	bodies   []string
}

func (u *gwUpstreamSeen) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.requests)
}

// gwSlowUpstream streams gwAnthropicStream chunk by chunk. After the first chunk it
// waits for firstRead (if not nil), so a gateway that buffered the stream would stall.
func gwSlowUpstream(t *testing.T, seen *gwUpstreamSeen, firstRead <-chan struct{}) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen.mu.Lock()
		seen.requests = append(seen.requests, r)
		seen.bodies = append(seen.bodies, string(b))
		seen.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Request-Id", "req_upstream")
		w.WriteHeader(http.StatusOK)
		for i, chunk := range gwAnthropicStream {
			io.WriteString(w, chunk)
			w.(http.Flusher).Flush()
			if i == 0 && firstRead != nil {
				select {
				case <-firstRead:
				case <-time.After(5 * time.Second):
					t.Errorf("the client did not get the first chunk while the upstream waited: the gateway buffers")
					return
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestGatewayForwardsAnthropic(t *testing.T) {
	const realKey = "sk-ant-REAL-0123456789"
	seen := &gwUpstreamSeen{}
	firstRead := make(chan struct{})
	up := gwSlowUpstream(t, seen, firstRead)
	prices := &suite.Prices{InputPerMTok: gwPtr(3.0), OutputPerMTok: gwPtr(15.0), CacheReadPerMTok: gwPtr(0.3), CacheWritePerMTok: gwPtr(3.75)}
	g := gwStart(t, GatewayConfig{Provider: "anthropic", Upstream: up.URL + "/base/", APIKey: realKey, Prices: prices})

	fi, err := os.Stat(g.Socket())
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o666 {
		t.Fatalf("socket %s: %v, mode %v", g.Socket(), err, fi.Mode())
	}
	if di, _ := os.Stat(filepath.Dir(g.Socket())); di.Mode().Perm() != 0o755 {
		t.Errorf("socket folder mode %v, want 0755", di.Mode().Perm())
	}

	tokA, tokB := g.NewCellToken("cell-a"), g.NewCellToken("cell-b")
	if !strings.HasPrefix(tokA, "sk-skillgate-") || len(tokA) != len("sk-skillgate-")+32 || tokA == tokB {
		t.Fatalf("tokens %q, %q", tokA, tokB)
	}
	c := gwUnixClient(g.Socket())
	want := strings.Join(gwAnthropicStream, "")
	reqBody := `{"model":"claude-sonnet-4-5","stream":true,"messages":[{"role":"user","content":"hi"}]}`

	// Cell A, streamed: the first chunk must reach the client before the upstream goes on.
	req, _ := http.NewRequest(http.MethodPost, "http://gateway/v1/messages?beta=true", strings.NewReader(reqBody))
	req.Header.Set("x-api-key", tokA)
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, len(gwAnthropicStream[0]))
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	close(firstRead)
	rest, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := string(first) + string(rest); got != want {
		t.Errorf("stream changed on the way:\n got %q\nwant %q", got, want)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("Request-Id") != "req_upstream" {
		t.Errorf("status %d, headers %v", resp.StatusCode, resp.Header)
	}

	// Cell A again, cell B with a bearer token.
	if resp, b := gwPost(t, c, "/v1/messages?beta=true", "x-api-key", tokA, reqBody); resp.StatusCode != 200 || string(b) != want {
		t.Errorf("second request: %d %q", resp.StatusCode, b)
	}
	if resp, b := gwPost(t, c, "/v1/messages", "Authorization", "Bearer "+tokB, `{"model":"claude-haiku-4-5","stream":true}`); resp.StatusCode != 200 || string(b) != want {
		t.Errorf("cell b: %d %q", resp.StatusCode, b)
	}

	// What the provider saw: the real key only, the path and query kept.
	if n := seen.count(); n != 3 {
		t.Fatalf("upstream got %d requests, want 3", n)
	}
	for i, r := range seen.requests {
		if r.Header.Get("X-Api-Key") != realKey || r.Header.Get("Authorization") != "" {
			t.Errorf("request %d: x-api-key %q, authorization %q", i, r.Header.Get("X-Api-Key"), r.Header.Get("Authorization"))
		}
		var dump bytes.Buffer
		r.Header.Write(&dump)
		if strings.Contains(dump.String()+seen.bodies[i], "sk-skillgate-") {
			t.Errorf("request %d carried a cell token upstream:\n%s", i, dump.String())
		}
		if i < 2 && (r.URL.Path != "/base/v1/messages" || r.URL.RawQuery != "beta=true") {
			t.Errorf("request %d went to %s", i, r.URL)
		}
	}
	if seen.requests[0].Header.Get("Anthropic-Version") != "2023-06-01" || seen.bodies[0] != reqBody {
		t.Errorf("headers or body not forwarded: %v %q", seen.requests[0].Header, seen.bodies[0])
	}

	// What the gateway recorded, per cell.
	one := grade.Tokens{Input: 1200, Output: 345, CacheRead: 5000, CacheWrite: 300}
	usd := func(n int64) float64 {
		return float64(n) * (1200*3.0 + 345*15.0 + 5000*0.3 + 300*3.75) / 1e6
	}
	ua, ub := g.Usage("cell-a"), g.Usage("cell-b")
	t.Logf("cell a: %+v tokens %+v usd %v", ua, *ua.Tokens, *ua.USD)
	if ua.Requests != 2 || ua.ModelAsked != "claude-sonnet-4-5" || ua.ModelAnswered != "claude-sonnet-4-5-20250929" ||
		ua.Tokens == nil || *ua.Tokens != (grade.Tokens{Input: 2400, Output: 690, CacheRead: 10000, CacheWrite: 600}) ||
		ua.USD == nil || math.Abs(*ua.USD-usd(2)) > 1e-9 || ua.LatencySeconds <= 0.05 {
		t.Errorf("cell a usage %+v", ua)
	}
	if ub.Requests != 1 || ub.ModelAsked != "claude-haiku-4-5" || ub.Tokens == nil || *ub.Tokens != one || ub.USD == nil || math.Abs(*ub.USD-usd(1)) > 1e-9 {
		t.Errorf("cell b usage %+v", ub)
	}
	if math.Abs(g.Spent()-usd(3)) > 1e-9 {
		t.Errorf("spent %v, want %v", g.Spent(), usd(3))
	}
	if u := g.Usage("cell-c"); u.Requests != 0 || u.Tokens != nil || u.USD != nil {
		t.Errorf("unknown cell usage %+v", u)
	}

	// Unknown or missing tokens: 401, nothing forwarded, nothing recorded.
	for _, h := range [][2]string{{"x-api-key", "sk-skillgate-0000"}, {"Authorization", "Bearer " + realKey}, {"", ""}} {
		resp, b := gwPost(t, c, "/v1/messages", h[0], h[1], reqBody)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), "authentication_error") {
			t.Errorf("%v: %d %s", h, resp.StatusCode, b)
		}
	}
	if n := seen.count(); n != 3 {
		t.Errorf("upstream got %d requests after refused ones, want 3", n)
	}
	if g.Usage("cell-a").Requests != 2 {
		t.Errorf("a refused request was counted")
	}
}

func TestGatewayForwardsOpenAI(t *testing.T) {
	const realKey = "sk-proj-REAL"
	seen := &gwUpstreamSeen{}
	stream := "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"model\":\"gpt-5.1-codex-2025\",\"status\":\"in_progress\",\"output\":[]}}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":1,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"model\":\"gpt-5.1-codex-2025\",\"status\":\"completed\",\"output\":[],\"usage\":{\"input_tokens\":1000,\"input_tokens_details\":{\"cached_tokens\":400},\"output_tokens\":50,\"output_tokens_details\":{\"reasoning_tokens\":10},\"total_tokens\":1050}}}\n\n"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.mu.Lock()
		seen.requests = append(seen.requests, r)
		seen.mu.Unlock()
		if r.URL.Path == "/v1/models" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"data":[]}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, stream)
	}))
	defer up.Close()
	g := gwStart(t, GatewayConfig{Provider: "openai", Upstream: up.URL, APIKey: realKey})
	tok := g.NewCellToken("codex-cell")
	c := gwUnixClient(g.Socket())
	resp, b := gwPost(t, c, "/v1/responses", "Authorization", "Bearer "+tok, `{"model":"gpt-5.1-codex","stream":true,"input":[]}`)
	if resp.StatusCode != 200 || string(b) != stream {
		t.Fatalf("%d %q", resp.StatusCode, b)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://gateway/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	if resp, err := c.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET models: %v", err)
	} else {
		resp.Body.Close()
	}
	// Only model endpoints are reachable with the real key.
	for _, m := range []string{http.MethodPost, http.MethodDelete, http.MethodGet} {
		req, _ := http.NewRequest(m, "http://gateway/v1/files/file-1", strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "not a model endpoint") {
			t.Errorf("%s /v1/files: %d %s", m, resp.StatusCode, b)
		}
	}
	if resp, err := c.Head("http://gateway/api/hello"); err != nil || resp.StatusCode != 200 {
		t.Errorf("HEAD probe: %v", err)
	}
	if len(seen.requests) != 2 {
		t.Errorf("upstream got %d requests, want 2", len(seen.requests))
	}
	for _, r := range seen.requests {
		if r.Header.Get("Authorization") != "Bearer "+realKey || r.Header.Get("X-Api-Key") != "" {
			t.Errorf("upstream auth %q / %q", r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
		}
	}
	u := g.Usage("codex-cell")
	if u.Requests != 1 || u.ModelAsked != "gpt-5.1-codex" || u.ModelAnswered != "gpt-5.1-codex-2025" ||
		u.Tokens == nil || *u.Tokens != (grade.Tokens{Input: 600, Output: 50, CacheRead: 400}) || u.USD != nil {
		t.Errorf("usage %+v (tokens %v)", u, u.Tokens)
	}
	if g.Spent() != 0 {
		t.Errorf("no prices: spent %v", g.Spent())
	}
}

func TestGatewayRefusesBadConfig(t *testing.T) {
	dir := t.TempDir()
	for _, cfg := range []GatewayConfig{
		{Dir: dir, Provider: "bedrock"},
		{Dir: dir, Provider: "anthropic", Upstream: "https://api.anthropic.com"},
		{Dir: dir, Provider: "openai", Upstream: "api.openai.com", APIKey: "k"},
		{Dir: dir, Provider: "scripted"},
		{Dir: dir, Provider: "scripted", Script: &suite.Script{Rules: []suite.ScriptRule{{Reply: []suite.ScriptBlock{{}}}}}},
		{Dir: "/tmp/" + strings.Repeat("x", 120), Provider: "scripted", Script: gwTestScript()},
	} {
		if g, err := StartGateway(cfg); err == nil {
			g.Close()
			t.Errorf("%+v: no error", cfg)
		} else {
			t.Log(err)
		}
	}
}

// gwBuildForwarder builds the forwarder as the runner does, static.
func gwBuildForwarder(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "forwarder")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./forwarder")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build forwarder: %v\n%s", err, out)
	}
	return bin
}

func gwFreePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestForwarderRelay runs the forwarder on the host against a unix server that answers
// only after it reads EOF: the relay must pass each side's end of writing on.
func TestForwarderRelay(t *testing.T) {
	bin := gwBuildForwarder(t)
	sock := filepath.Join(t.TempDir(), "echo.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c) // until the client's half-close comes through
				fmt.Fprintf(c, "got %d bytes: %s", len(b), bytes.ToUpper(b))
			}()
		}
	}()
	addr := gwFreePort(t)
	fw := exec.Command(bin, "-listen", addr, "-socket", sock)
	fw.Stderr = os.Stderr
	if err := fw.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		fw.Process.Kill()
		fw.Wait()
	}()
	var conn *net.TCPConn
	for deadline := time.Now().Add(5 * time.Second); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			conn = c.(*net.TCPConn)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("forwarder not listening: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer conn.Close()
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ { // concurrent connections
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			msg := strings.Repeat("ab", 100000)
			go func() {
				io.WriteString(c, msg)
				c.(*net.TCPConn).CloseWrite()
			}()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			got, err := io.ReadAll(c)
			if want := fmt.Sprintf("got %d bytes: %s", len(msg), strings.ToUpper(msg)); err != nil || string(got) != want {
				t.Errorf("relay: %v, got %d bytes", err, len(got))
			}
		}()
	}
	conn.Write([]byte("hello"))
	conn.CloseWrite()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(conn)
	if err != nil || string(got) != "got 5 bytes: HELLO" {
		t.Errorf("relay: %q, %v", got, err)
	}
	wg.Wait()
}

// TestForwarderHelperProcess is the child that TestForwarderExec starts through the
// forwarder; it does nothing in a normal test run.
func TestForwarderHelperProcess(t *testing.T) {
	switch os.Getenv("SKILLGATE_FORWARDER_HELPER") {
	case "":
		t.Skip("only a child of TestForwarderExec")
	case "request":
		req, _ := http.NewRequest(http.MethodPost, "http://"+os.Getenv("FWD_ADDR")+"/v1/messages?beta=true",
			strings.NewReader(`{"model":"claude-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("x-api-key", os.Getenv("FWD_KEY"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		io.Copy(os.Stdout, resp.Body)
		os.Exit(7)
	case "wait":
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM)
		fmt.Println("ready")
		select {
		case <-sig:
			os.Exit(42)
		case <-time.After(10 * time.Second):
			os.Exit(1)
		}
	}
}

// TestForwarderExec runs the forwarder's -exec mode on the host: the child reaches the
// gateway at once, its exit code comes back, and a signal reaches it.
func TestForwarderExec(t *testing.T) {
	bin := gwBuildForwarder(t)
	g := gwStart(t, GatewayConfig{Provider: "scripted", Script: gwTestScript()})
	tok := g.NewCellToken("exec-cell")
	addr := gwFreePort(t)
	helper := func(mode string) *exec.Cmd {
		cmd := exec.Command(bin, "-listen", addr, "-socket", g.Socket(), "-exec", os.Args[0], "-test.run=^TestForwarderHelperProcess$")
		cmd.Env = append(os.Environ(), "SKILLGATE_FORWARDER_HELPER="+mode, "FWD_ADDR="+addr, "FWD_KEY="+tok)
		cmd.Stderr = os.Stderr
		return cmd
	}

	out, err := helper("request").Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
		t.Errorf("exit: %v, want code 7", err)
	}
	if !strings.Contains(string(out), "event: message_stop") || !strings.Contains(string(out), scriptedNoMatch) {
		t.Errorf("child output %q", out)
	}
	if u := g.Usage("exec-cell"); u.Requests != 1 || u.ModelAsked != "claude-x" {
		t.Errorf("usage %+v", u)
	}

	cmd := helper("wait")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "ready\n" {
		cmd.Process.Kill()
		t.Fatalf("child said %q", line)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 42 {
		t.Errorf("exit after SIGTERM: %v, want code 42 from the child", err)
	}

	if err := exec.Command(bin, "-listen", gwFreePort(t), "-socket", g.Socket(), "-exec", "/nonexistent/agent").Run(); err == nil || err.(*exec.ExitError).ExitCode() != 127 {
		t.Errorf("missing command: %v, want exit 127", err)
	}
}

// TestGatewayForwarderContainer runs a request from a real cell: network none, uid 1000,
// the gateway folder mounted read-only, the forwarder relaying to the socket.
func TestGatewayForwarderContainer(t *testing.T) {
	e := dockertest.Engine(t)
	labels, _ := dockertest.Labels(t, e)
	ctx := context.Background()
	bin := gwBuildForwarder(t)
	sandbox, err := e.EnsureSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bc := docker.NewBuildContext("FROM " + sandbox + "\nADD " + docker.LayerTar + " /\n")
	bc.AddDir("skillgate-bin", 0o755, 0, 0)
	bc.AddHostFile("skillgate-bin/forwarder", bin, 0, 0)
	tag := "skillgate-test/forwarder:" + labels[dockertest.Label]
	if _, err := e.BuildImage(ctx, tag, labels, bc); err != nil {
		t.Fatal(err)
	}

	script := gwTestScript()
	g := gwStart(t, GatewayConfig{Provider: "scripted", Script: script})
	tok := g.NewCellToken("container-cell")
	g.NewCellToken("other-cell")
	body := `{"model":"claude-sonnet-4-5","stream":true,"messages":[{"role":"user","content":"SCENARIO:container say hello"}]}`
	out, err := e.RunContainer(ctx, docker.ContainerSpec{
		Image: tag,
		Cmd: []string{"/skillgate-bin/forwarder", "-exec", "sh", "-c",
			`wget -q -O- --header "x-api-key: $KEY" --header "content-type: application/json" --post-data "$BODY" http://127.0.0.1:8080/v1/messages?beta=true; st=$?; ls -ld /skillgate >&2; touch /skillgate/x 2>/dev/null && echo WRITABLE >&2; exit $st`},
		Env:       []string{"KEY=" + tok, "BODY=" + body},
		User:      "1000:1000",
		Labels:    labels,
		Binds:     []string{filepath.Dir(g.Socket()) + ":/skillgate:ro"},
		Memory:    128 << 20,
		PidsLimit: 64,
		Timeout:   20 * time.Second,
		OutputCap: 1 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exit %d, durations %+v\nstdout:\n%s\nstderr:\n%s", out.ExitCode, out.Durations, out.Stdout, out.Stderr)
	evs := gwParseSSE(t, string(out.Stdout))
	if out.ExitCode != 0 || len(evs) == 0 || evs[len(evs)-1].name != "message_stop" || !strings.Contains(string(out.Stdout), "hello from the scripted model") {
		t.Errorf("exit %d; no scripted stream came back", out.ExitCode)
	}
	if strings.Contains(string(out.Stderr), "WRITABLE") {
		t.Error("the gateway folder is writable in the cell")
	}
	if u := g.Usage("container-cell"); u.Requests != 1 || u.ModelAsked != "claude-sonnet-4-5" || u.ModelAnswered != script.Model || u.Tokens == nil || u.Tokens.Input != 11 {
		t.Errorf("usage %+v", u)
	}
	if u := g.Usage("other-cell"); u.Requests != 0 {
		t.Errorf("another cell was charged: %+v", u)
	}
}

// gwTestScript is a small script for gateway tests.
func gwTestScript() *suite.Script {
	return &suite.Script{Model: "scripted-test", Rules: []suite.ScriptRule{
		{When: &suite.ScriptWhen{Contains: gwPtr("SCENARIO:container")}, Reply: []suite.ScriptBlock{{Text: gwPtr("hello from the scripted model")}}, Usage: suite.ScriptUsage{Input: 11, Output: 3}},
		{When: &suite.ScriptWhen{Contains: gwPtr("never present")}, Reply: []suite.ScriptBlock{{Text: gwPtr("x")}}},
	}}
}
