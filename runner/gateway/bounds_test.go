package gateway

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// heldRequest is one model request a hostile cell sends to the gateway's socket
// whole but for its last byte, and holds.
type heldRequest struct {
	conn   net.Conn
	status chan int // the gateway's answer, 0 when the connection ended without one
	sent   chan struct{}
}

// holdRequest sends a POST /v1/messages of size bytes to the gateway's socket,
// all but its last byte, as a cell's agent could through the forwarder.
func holdRequest(t *testing.T, sock, token string, body []byte) *heldRequest {
	t.Helper()
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	h := &heldRequest{conn: conn, status: make(chan int, 1), sent: make(chan struct{})}
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			h.status <- 0
			return
		}
		resp.Body.Close()
		h.status <- resp.StatusCode
	}()
	go func() {
		defer close(h.sent)
		fmt.Fprintf(conn, "POST /v1/messages HTTP/1.1\r\nHost: gateway\r\nX-Api-Key: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", token, len(body))
		for rest := body[:len(body)-1]; len(rest) > 0; {
			n, err := conn.Write(rest[:min(len(rest), 1<<20)])
			if err != nil {
				return // answered and cut by the gateway
			}
			rest = rest[n:]
		}
	}()
	return h
}

// heapAndRSS are the test process's Go heap in use and resident set, after a
// collection.
func heapAndRSS(t *testing.T) (heap, rss int64) {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			rss = kb << 10
		}
	}
	return int64(ms.HeapInuse), rss
}

// modelBody is a model request of about n bytes.
func modelBody(n int) []byte {
	head := `{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"`
	tail := `"}]}`
	b := make([]byte, n)
	copy(b, head)
	for i := len(head); i < n-len(tail); i++ {
		b[i] = 'a'
	}
	copy(b[n-len(tail):], tail)
	return b
}

// TestGatewayBoundsHeldBodies: twenty 64 MiB requests a cell sends and holds
// make the host hold at most limits.gateway.bytes of them; the others are
// answered 429 at once and listed, with the bound, among the cell's refused
// requests.
func TestGatewayBoundsHeldBodies(t *testing.T) {
	const size, requests = 64 << 20, 20
	bounds := Bounds{Requests: 16, Body: 64 << 20, Bytes: 128 << 20}
	if os.Getenv("GW_UNBOUNDED") != "" {
		bounds = Bounds{}
	}
	g := gwStart(t, GatewayConfig{Provider: "scripted", Script: gwTestScript(), Bounds: bounds})
	tok := g.NewCellToken("hostile")
	body := modelBody(size)
	heap0, rss0 := heapAndRSS(t)

	held := make([]*heldRequest, requests)
	for i := range held {
		held[i] = holdRequest(t, g.Socket(), tok, body)
	}
	statuses := map[int]int{}
	var waiting []*heldRequest
	for _, h := range held {
		select {
		case <-h.sent:
			waiting = append(waiting, h)
		case st := <-h.status:
			statuses[st]++
		case <-time.After(30 * time.Second):
			t.Fatal("a request was neither sent nor answered in 30 s")
		}
	}
	time.Sleep(300 * time.Millisecond) // the gateway reads what is in the sockets
	for _, h := range waiting {
		select {
		case st := <-h.status:
			statuses[st]++
		default:
		}
	}
	heap1, rss1 := heapAndRSS(t)
	g.mu.Lock()
	t.Logf("held by the gateway: %d MiB", g.cells["hostile"].held>>20)
	g.mu.Unlock()
	t.Logf("%d held requests of %d MiB: Go heap %d → %d MiB, RSS %d → %d MiB (limits.gateway.bytes %d MiB); answers %v",
		requests, size>>20, heap0>>20, heap1>>20, rss0>>20, rss1>>20, bounds.Bytes>>20, statuses)
	const slack = 16 << 20
	if grew := heap1 - heap0; grew > bounds.Bytes+slack {
		t.Errorf("the Go heap grew by %d MiB, over the bound of %d MiB", grew>>20, bounds.Bytes>>20)
	}
	if grew := rss1 - rss0; grew > bounds.Bytes+slack {
		t.Errorf("the resident set grew by %d MiB, over the bound of %d MiB", grew>>20, bounds.Bytes>>20)
	}
	if want := requests - int(bounds.Bytes/size); statuses[http.StatusTooManyRequests] != want {
		t.Errorf("answered 429 %d times, want %d (answers %v)", statuses[http.StatusTooManyRequests], want, statuses)
	}
	for _, h := range held {
		h.conn.Close()
	}
	u := g.Usage("hostile")
	if n := len(u.Refused) + u.RefusedDropped; n != requests-int(bounds.Bytes/size) {
		t.Fatalf("refused requests counted: %d, want %d: %+v", n, requests-int(bounds.Bytes/size), u.Refused)
	}
	for _, r := range u.Refused {
		if r.Status != http.StatusTooManyRequests || !strings.Contains(r.Reason, "limits.gateway.bytes") || r.Path != "/v1/messages" {
			t.Errorf("refusal %+v: want 429 naming limits.gateway.bytes", r)
		}
	}
	if u.Unrecovered != "" || len(u.Faults) != 0 {
		t.Errorf("a refusal for the cell's own bound counted as a provider fault: %+v", u)
	}
	g.mu.Lock()
	left := g.cells["hostile"].held
	g.mu.Unlock()
	if left != 0 {
		t.Errorf("%d bytes still held after every request ended", left)
	}
}

// TestGatewayBoundsRequests: a cell's requests in flight beyond
// limits.gateway.requests are answered 429, and a body over limits.gateway.body
// 413 before a byte of it is read; a request within the bounds is still served.
func TestGatewayBoundsRequests(t *testing.T) {
	bounds := Bounds{Requests: 4, Body: 1 << 20, Bytes: 8 << 20}
	g := gwStart(t, GatewayConfig{Provider: "scripted", Script: gwTestScript(), Bounds: bounds})
	tok := g.NewCellToken("busy")
	big := holdRequest(t, g.Socket(), tok, modelBody(2<<20))
	select {
	case st := <-big.status:
		if st != http.StatusRequestEntityTooLarge {
			t.Errorf("a 2 MiB body over a 1 MiB bound: %d, want 413", st)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a body over limits.gateway.body was not answered in 10 s")
	}
	big.conn.Close()
	// A body of unknown length (chunked) is bounded as it is read.
	c := gwUnixClient(g.Socket())
	for _, tc := range []struct {
		size int
		want int
	}{{2 << 20, http.StatusRequestEntityTooLarge}, {1 << 10, http.StatusOK}} {
		b := bytes.Replace(modelBody(tc.size), []byte("aaaa"), []byte("SCENARIO:container"), 1)
		req, err := http.NewRequest(http.MethodPost, "http://gateway/v1/messages", io.MultiReader(bytes.NewReader(b)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Api-Key", tok)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want || req.ContentLength != 0 {
			t.Errorf("a chunked body of %d bytes: %d, want %d", tc.size, resp.StatusCode, tc.want)
		}
	}
	body := modelBody(64 << 10)
	var held []*heldRequest
	statuses := map[int]int{}
	for range 10 {
		h := holdRequest(t, g.Socket(), tok, body)
		held = append(held, h)
		select {
		case <-h.sent:
		case st := <-h.status:
			statuses[st]++
		case <-time.After(10 * time.Second):
			t.Fatal("a request was neither sent nor answered in 10 s")
		}
	}
	time.Sleep(200 * time.Millisecond)
	for _, h := range held {
		select {
		case st := <-h.status:
			statuses[st]++
		default:
		}
	}
	if statuses[http.StatusTooManyRequests] != 6 {
		t.Errorf("answers %v: want 6 × 429 beyond 4 requests in flight", statuses)
	}
	var wg sync.WaitGroup
	for _, h := range held {
		wg.Add(1)
		go func() { defer wg.Done(); h.conn.Close() }()
	}
	wg.Wait()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		g.mu.Lock()
		serving := g.cells["busy"].serving
		g.mu.Unlock()
		if serving == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests still served 10 s after their cell hung up", serving)
		}
	}
	// Once the held ones are gone, the cell is served again.
	resp, _ := gwPost(t, c, "/v1/messages", "x-api-key", tok, string(bytes.Replace(modelBody(1<<10), []byte("aaaa"), []byte("SCENARIO:container"), 1)))
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a request within the bounds after the held ones ended: %d", resp.StatusCode)
	}
	reasons := map[string]int{}
	for _, r := range g.Usage("busy").Refused {
		switch {
		case r.Status == 429 && strings.Contains(r.Reason, "limits.gateway.requests"):
			reasons["requests"]++
		case r.Status == 413 && strings.Contains(r.Reason, "limits.gateway.body"):
			reasons["body"]++
		default:
			t.Errorf("unexpected refusal %+v", r)
		}
	}
	if reasons["requests"] != 6 || reasons["body"] != 2 {
		t.Errorf("refusals listed %v, want 6 for requests and 2 for the body", reasons)
	}
}
