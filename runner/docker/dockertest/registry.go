package dockertest

import (
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Registry is an image registry served in the test's process on 127.0.0.1
// over plain HTTP, which the Docker engine (127.0.0.0/8 is an insecure
// registry by default) and the local cluster's containerd push to and pull
// from. It keeps its blobs in memory and every request it answered.
type Registry struct {
	// Host is its HOST:PORT.
	Host string

	mu       sync.Mutex
	requests []string
}

// NewRegistry starts a registry that stops when the test ends.
func NewRegistry(t testing.TB) *Registry {
	t.Helper()
	return NewLoginRegistry(t, "", "")
}

// NewLoginRegistry starts a registry that answers only requests with the
// basic credentials user and password (none when user is empty), as a
// private registry does.
func NewLoginRegistry(t testing.TB, user, password string) *Registry {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Registry{Host: ln.Addr().String()}
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests = append(r.requests, req.Method+" "+req.URL.Path)
		r.mu.Unlock()
		if u, p, _ := req.BasicAuth(); user != "" && (u != user || p != password) {
			w.Header().Set("WWW-Authenticate", `Basic realm="skillgate-test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"log in"}]}`, http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, req)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return r
}

// Requests are the "METHOD PATH" of the requests it answered whose path
// has the prefix given, in order.
func (r *Registry) Requests(prefix string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, q := range r.requests {
		if _, p, _ := strings.Cut(q, " "); strings.HasPrefix(p, prefix) {
			out = append(out, q)
		}
	}
	return slices.Clip(out)
}
