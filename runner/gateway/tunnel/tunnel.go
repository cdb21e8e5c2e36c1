// Package tunnel carries a cell's connections to the gateway over one byte
// stream that skillgate opened into the cell, when the cell cannot reach the
// gateway's socket itself: a Kubernetes Pod on another node, which has no
// network, reached through an exec stream of the API.
//
// Inside the cell, Relay listens on a unix socket where the forwarder looks
// for the gateway, and makes each connection accepted there one HTTP/2
// stream over the byte stream (unencrypted HTTP/2 with prior knowledge, the
// cell side as the client). On skillgate's side, Serve answers each stream by
// dialing the gateway and copying bytes both ways: the tunnel carries bytes,
// not requests, so whatever the agent speaks to the gateway passes unchanged,
// each connection with its own flow control.
//
// The cell cannot open such a stream itself: only the API's exec, which
// needs the cluster's credentials, reaches the relay's standard input.
//
// It imports only the standard library: the forwarder, built static for any
// image, links it.
package tunnel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"
)

// maxStreams bounds the connections one cell has open at once through the
// tunnel; past it a new one waits for another to end. It is far above what
// an agent opens (a handful), and below it nothing needs a second byte
// stream, which the tunnel cannot open.
const maxStreams = 1000

// Conn is a byte stream made of a reader and a writer (an exec's standard
// output and input, or the relay's own) as the one connection HTTP/2 runs
// over. Deadlines are not supported and are ignored.
type Conn struct {
	r    io.Reader
	w    io.Writer
	c    func() error
	once sync.Once
	done chan struct{}
}

// NewConn joins r and w; closeFn, when not nil, is called once by Close.
func NewConn(r io.Reader, w io.Writer, closeFn func() error) *Conn {
	return &Conn{r: r, w: w, c: closeFn, done: make(chan struct{})}
}

// Done is closed when the stream has ended: a read failed or Close was called.
func (c *Conn) Done() <-chan struct{} { return c.done }

func (c *Conn) end() { c.once.Do(func() { close(c.done) }) }

func (c *Conn) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err != nil {
		c.end()
	}
	return n, err
}

func (c *Conn) Write(p []byte) (int, error) { return c.w.Write(p) }

// Close ends the stream.
func (c *Conn) Close() error {
	c.end()
	if c.c != nil {
		return c.c()
	}
	return nil
}

func (c *Conn) LocalAddr() net.Addr              { return addr{} }
func (c *Conn) RemoteAddr() net.Addr             { return addr{} }
func (c *Conn) SetDeadline(time.Time) error      { return nil }
func (c *Conn) SetReadDeadline(time.Time) error  { return nil }
func (c *Conn) SetWriteDeadline(time.Time) error { return nil }
func (addr) Network() string                     { return "tunnel" }
func (addr) String() string                      { return "tunnel" }

// addr is a tunnel's address, which names nothing.
type addr struct{}

// closeWrite ends x's writing, or all of x where it cannot end one side.
func closeWrite(x net.Conn) {
	if cw, ok := x.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	x.Close()
}

// oneConn is a listener that yields one connection and then waits to be
// closed.
type oneConn struct {
	c      chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func (l *oneConn) Accept() (net.Conn, error) {
	select {
	case c := <-l.c:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *oneConn) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *oneConn) Addr() net.Addr { return addr{} }

// Serve answers the relay at the other end of conn until ctx ends or the
// stream does: each of its streams is one connection dialed with dial, bytes
// copied both ways. It closes conn.
func Serve(ctx context.Context, conn *Conn, dial func(context.Context) (net.Conn, error)) error {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{
		Protocols: &p,
		HTTP2:     &http.HTTP2Config{MaxConcurrentStreams: maxStreams},
		Handler:   http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serveStream(w, r, dial) }),
	}
	ln := &oneConn{c: make(chan net.Conn, 1), closed: make(chan struct{})}
	ln.c <- conn
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case <-conn.Done():
	}
	srv.Close()
	conn.Close()
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// serveStream copies one stream to a fresh connection of dial's and back.
// Each side's end of writing is passed on as the other's, as on a direct
// connection; the stream ends when the gateway's side has.
func serveStream(w http.ResponseWriter, r *http.Request, dial func(context.Context) (net.Conn, error)) {
	up, err := dial(r.Context())
	if err != nil {
		http.Error(w, "dial the gateway: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer up.Close()
	rc := http.NewResponseController(w)
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}
	go func() {
		if _, err := io.Copy(up, r.Body); err != nil {
			up.Close()
			return
		}
		closeWrite(up)
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Relay makes each connection accepted on ln a stream over conn, until ln
// fails or conn ends. It closes ln.
func Relay(ln net.Listener, conn *Conn) error {
	defer ln.Close()
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{
		Protocols:          &p,
		DisableCompression: true,
		DialContext: func(context.Context, string, string) (net.Conn, error) {
			return conn, nil
		},
	}
	// The one connection: a stream past its concurrency limit waits for
	// another to end rather than ask for a second.
	cc, err := tr.NewClientConn(context.Background(), "http", "gateway:80")
	if err != nil {
		return fmt.Errorf("start the tunnel: %w", err)
	}
	defer cc.Close()
	go func() {
		<-conn.Done()
		ln.Close()
	}()
	return AcceptEach(ln, func(c net.Conn) { relayConn(cc, c) })
}

// AcceptEach accepts connections on ln until it is closed (nil) or fails,
// and handles each in its own goroutine. A failure that passes (a timeout,
// too many open files) is waited out, longer each time in a row.
func AcceptEach(ln net.Listener, handle func(net.Conn)) error {
	var delay time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		go handle(c)
	}
}

// bodyOf reads a connection as a request's body without closing it when the
// transport is done with the body.
type bodyOf struct{ c net.Conn }

func (b bodyOf) Read(p []byte) (int, error) { return b.c.Read(p) }

// relayConn carries one accepted connection as a stream.
func relayConn(cc *http.ClientConn, c net.Conn) {
	defer c.Close()
	req, err := http.NewRequest(http.MethodPost, "http://gateway/", bodyOf{c})
	if err != nil {
		return
	}
	req.ContentLength = -1
	resp, err := cc.RoundTrip(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(os.Stderr, io.LimitReader(resp.Body, 4<<10))
		return
	}
	if _, err := io.Copy(c, resp.Body); err != nil {
		return
	}
	closeWrite(c)
	// The agent may still be writing (a request it sends after the
	// gateway's last answer is lost as on a closed connection); the
	// connection closes when the stream has.
}
