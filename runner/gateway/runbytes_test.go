package gateway

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestGatewayBoundsRunBytes: eight cells each sending and holding two 16 MiB
// requests, every one within its cell's bounds, make the host hold at most
// limits.gateway.runBytes of them across the run: the rest are answered 429
// naming runBytes, and everything held is given back once they end.
func TestGatewayBoundsRunBytes(t *testing.T) {
	const size, cells, each = 16 << 20, 8, 2
	bounds := Bounds{Requests: 16, Body: 64 << 20, Bytes: 64 << 20, RunBytes: 64 << 20}
	g := gwStart(t, GatewayConfig{Provider: "scripted", Script: gwTestScript(), Bounds: bounds})
	body := modelBody(size)
	heap0, _ := heapAndRSS(t)
	var held []*heldRequest
	var names []string
	for i := range cells {
		name := fmt.Sprintf("cell-%d", i)
		names = append(names, name)
		tok := g.NewCellToken(name)
		for range each {
			held = append(held, holdRequest(t, g.Socket(), tok, body))
		}
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
	time.Sleep(300 * time.Millisecond)
	for _, h := range waiting {
		select {
		case st := <-h.status:
			statuses[st]++
		default:
		}
	}
	heap1, _ := heapAndRSS(t)
	g.mu.Lock()
	total := g.held
	g.mu.Unlock()
	t.Logf("%d cells × %d held requests of %d MiB: the gateway holds %d MiB, Go heap %d → %d MiB; answers %v",
		cells, each, size>>20, total>>20, heap0>>20, heap1>>20, statuses)
	if total > bounds.RunBytes {
		t.Errorf("the gateway holds %d MiB, over limits.gateway.runBytes (%d MiB)", total>>20, bounds.RunBytes>>20)
	}
	if grew := heap1 - heap0; grew > bounds.RunBytes+16<<20 {
		t.Errorf("the Go heap grew by %d MiB, over the run's bound of %d MiB", grew>>20, bounds.RunBytes>>20)
	}
	if want := cells*each - int(bounds.RunBytes/size); statuses[http.StatusTooManyRequests] != want {
		t.Errorf("answered 429 %d times, want %d (answers %v)", statuses[http.StatusTooManyRequests], want, statuses)
	}
	for _, h := range held {
		h.conn.Close()
	}
	refused := 0
	for _, name := range names {
		u := g.Usage(name)
		for _, r := range u.Refused {
			refused++
			if !strings.Contains(r.Reason, "limits.gateway.runBytes") {
				t.Errorf("%s: refusal %+v: want limits.gateway.runBytes named", name, r)
			}
		}
	}
	if refused != cells*each-int(bounds.RunBytes/size) {
		t.Errorf("refusals listed: %d", refused)
	}
	g.mu.Lock()
	left := g.held
	g.mu.Unlock()
	if left != 0 {
		t.Errorf("%d bytes still held across the run after every request ended", left)
	}
}
