package gateway

import (
	"fmt"
	"io"
	"net/http"
)

// Bounds are what one cell can make the host hold through the gateway
// (limits.gateway): the gateway answers a request over one itself, never
// forwards it, and lists it among the cell's refused requests. A zero
// field bounds nothing.
type Bounds struct {
	// Requests bounds the cell's requests being served at once.
	Requests int
	// Body bounds one request's body, in bytes.
	Body int64
	// Bytes bounds the request bodies of the cell held at once, read or being
	// read, in bytes: a body is held from its first byte until its exchange is
	// answered and recorded.
	Bytes int64
	// RunBytes bounds the request bodies held at once by every cell together,
	// in bytes: the host's memory stays flat however many cells send.
	RunBytes int64
}

// bodyChunk is how much of a body of unknown length is reserved and read at
// a time.
const bodyChunk = 1 << 20

// boundRefusal is a request the gateway refuses for a bound: its status and
// why, in words the cell's record and the agent both read.
type boundRefusal struct {
	status int
	typ    string
	reason string
}

// admit counts a request of c against Bounds.Requests, or refuses it.
// Called with g.mu held, once c.active counts the request.
func (g *Gateway) admit(c *gatewayCell) *boundRefusal {
	if n := g.cfg.Bounds.Requests; n > 0 && c.serving >= n {
		return &boundRefusal{http.StatusTooManyRequests, "rate_limit_error",
			fmt.Sprintf("the cell has %d requests in flight, the most limits.gateway.requests allows", c.serving)}
	}
	c.serving++
	return nil
}

// hold reserves n bytes of c's Bounds.Bytes, or says why not.
func (g *Gateway) hold(c *gatewayCell, n int64) *boundRefusal {
	g.mu.Lock()
	defer g.mu.Unlock()
	if limit := g.cfg.Bounds.Bytes; limit > 0 && c.held+n > limit {
		return &boundRefusal{http.StatusTooManyRequests, "rate_limit_error",
			fmt.Sprintf("the cell's request bodies in flight would pass limits.gateway.bytes (%d bytes held, %d more asked, at most %d)", c.held, n, limit)}
	}
	if limit := g.cfg.Bounds.RunBytes; limit > 0 && g.held+n > limit {
		return &boundRefusal{http.StatusTooManyRequests, "rate_limit_error",
			fmt.Sprintf("the run's request bodies in flight, over every cell, would pass limits.gateway.runBytes (%d bytes held, %d more asked, at most %d)", g.held, n, limit)}
	}
	c.held += n
	g.held += n
	return nil
}

// release gives back n bytes of c's Bounds.Bytes.
func (g *Gateway) release(c *gatewayCell, n int64) {
	if n == 0 {
		return
	}
	g.mu.Lock()
	c.held -= n
	g.held -= n
	g.mu.Unlock()
}

// readBody reads a request's body within c's bounds, reserving its bytes
// before they are read: a body of known length at once (one allocation), one
// of unknown length a chunk at a time. It returns the body and the bytes it
// holds, which the caller releases; or a refusal, holding nothing.
func (g *Gateway) readBody(c *gatewayCell, r *http.Request) ([]byte, int64, *boundRefusal, error) {
	limit := g.cfg.Bounds.Body
	tooLarge := func() *boundRefusal {
		return &boundRefusal{http.StatusRequestEntityTooLarge, "request_too_large",
			fmt.Sprintf("the request body is over limits.gateway.body (%d bytes)", limit)}
	}
	if n := r.ContentLength; n >= 0 {
		if limit > 0 && n > limit {
			return nil, 0, tooLarge(), nil
		}
		if ref := g.hold(c, n); ref != nil {
			return nil, 0, ref, nil
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(r.Body, body); err != nil {
			g.release(c, n)
			return nil, 0, nil, err
		}
		return body, n, nil, nil
	}
	var body []byte
	var held int64
	for {
		if limit > 0 && int64(len(body)) > limit {
			g.release(c, held)
			return nil, 0, tooLarge(), nil
		}
		if int64(len(body)) == held {
			// Doubling, so a large body is copied a few times, not once a chunk.
			grow := max(held, bodyChunk)
			if limit > 0 {
				grow = min(grow, limit+1-held)
			}
			if ref := g.hold(c, grow); ref != nil {
				g.release(c, held)
				return nil, 0, ref, nil
			}
			held += grow
			body = append(make([]byte, 0, held), body...)
		}
		n, err := r.Body.Read(body[len(body):held])
		body = body[:len(body)+n]
		if err == io.EOF {
			return body, held, nil, nil
		}
		if err != nil {
			g.release(c, held)
			return nil, 0, nil, err
		}
	}
}

// refuseBound answers a request the cell's bounds refuse and records it for
// the cell.
func (g *Gateway) refuseBound(w http.ResponseWriter, r *http.Request, c *gatewayCell, family string, ref *boundRefusal) {
	g.recordRefusal(c, RefusedRequest{Method: r.Method, Path: refusedTarget(r), Status: ref.status, Reason: ref.reason})
	// The body is left unread: the connection ends with the answer, so the
	// server does not wait for the rest of it first.
	w.Header().Set("Connection", "close")
	gatewayError(w, family, ref.status, ref.typ, "skillgate gateway: "+ref.reason)
}
