package tunnel

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// pair is the two ends of a tunnel's byte stream, as an exec gives them:
// each end's writes are the other's reads.
func pair() (*Conn, *Conn) {
	ar, bw := io.Pipe()
	br, aw := io.Pipe()
	a := NewConn(ar, aw, func() error { aw.Close(); ar.Close(); return nil })
	b := NewConn(br, bw, func() error { bw.Close(); br.Close(); return nil })
	return a, b
}

// TestTunnelCarriesConnections runs an HTTP server as the gateway behind
// Serve and a relay's socket in front: keep-alive requests, a streamed
// answer, many connections at once, and a half-closed raw connection all
// come through unchanged.
func TestTunnelCarriesConnections(t *testing.T) {
	dir := t.TempDir()
	gwSock := filepath.Join(dir, "gw.sock")
	gl, err := net.Listen("unix", gwSock)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %d", r.URL.Query().Get("n"), len(b))
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		for i := range 3 {
			fmt.Fprintf(w, "event %d\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(20 * time.Millisecond)
		}
	})
	gw := &http.Server{Handler: mux}
	go gw.Serve(gl)
	defer gw.Close()
	// A raw service beside it: reads to EOF, then answers with what it read.
	rawSock := filepath.Join(dir, "raw.sock")
	rl, err := net.Listen("unix", rawSock)
	if err != nil {
		t.Fatal(err)
	}
	defer rl.Close()
	go func() {
		for {
			c, err := rl.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c)
				c.Write([]byte("got " + string(b)))
			}()
		}
	}()

	for _, target := range []string{gwSock, rawSock} {
		t.Run(filepath.Base(target), func(t *testing.T) {
			skill, cell := pair()
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() {
				served <- Serve(ctx, skill, func(ctx context.Context) (net.Conn, error) {
					var d net.Dialer
					return d.DialContext(ctx, "unix", target)
				})
			}()
			relaySock := filepath.Join(t.TempDir(), "relay.sock")
			ln, err := net.Listen("unix", relaySock)
			if err != nil {
				t.Fatal(err)
			}
			relayed := make(chan error, 1)
			go func() { relayed <- Relay(ln, cell) }()

			if target == rawSock {
				c, err := net.Dial("unix", relaySock)
				if err != nil {
					t.Fatal(err)
				}
				c.Write([]byte("hello"))
				c.(*net.UnixConn).CloseWrite()
				b, err := io.ReadAll(c)
				c.Close()
				if err != nil || string(b) != "got hello" {
					t.Errorf("half-closed connection: %q, %v; want %q", b, err, "got hello")
				}
			} else {
				client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
					var d net.Dialer
					return d.DialContext(ctx, "unix", relaySock)
				}}}
				var wg sync.WaitGroup
				errs := make(chan error, 64)
				for i := range 64 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						body := strings.Repeat("x", i*1000)
						resp, err := client.Post(fmt.Sprintf("http://cell/echo?n=%d", i), "text/plain", strings.NewReader(body))
						if err != nil {
							errs <- err
							return
						}
						b, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						if want := fmt.Sprintf("%d %d", i, i*1000); string(b) != want {
							errs <- fmt.Errorf("request %d: %q, want %q", i, b, want)
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
				resp, err := client.Get("http://cell/stream")
				if err != nil {
					t.Fatal(err)
				}
				sc := bufio.NewScanner(resp.Body)
				var lines []string
				for sc.Scan() {
					lines = append(lines, sc.Text())
				}
				resp.Body.Close()
				if strings.Join(lines, ",") != "event 0,event 1,event 2" {
					t.Errorf("streamed answer: %q", lines)
				}
			}

			// Ending skillgate's side ends the relay, as a deleted Pod's exec would.
			cancel()
			if err := <-served; err != nil {
				t.Errorf("serve: %v", err)
			}
			select {
			case err := <-relayed:
				if err != nil {
					t.Errorf("relay: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the relay did not end with its stream")
			}
		})
	}
}
