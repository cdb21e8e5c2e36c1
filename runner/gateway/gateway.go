package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/runner/redact"

	"github.com/opencontainers/go-digest"
)

// GatewaySocket is the name of the gateway's socket in its folder. The folder is mounted
// read-only into every cell at /skillgate, where the forwarder finds the socket.
const GatewaySocket = "gateway.sock"

// gatewayMaxBody bounds a response body the gateway records.
const gatewayMaxBody = 64 << 20

// GatewayConfig configures one run's model gateway.
type GatewayConfig struct {
	// Dir is the folder of the socket; it is created if missing and made mode 0755, and
	// cells mount it read-only at /skillgate.
	Dir string
	// Provider is "anthropic", "openai", "scripted" or "replay" (Replay's
	// recorded exchanges, served again).
	Provider string
	// Upstream is the base URL of the real provider, such as "https://api.anthropic.com",
	// with or without its "/v1": a request for /v1/messages goes to
	// https://api.anthropic.com/v1/messages either way.
	Upstream string
	// APIKey is the real credential. It stays in the gateway: it is sent only to Upstream,
	// never logged, never stored, never given to a cell.
	APIKey string
	// Auth is how APIKey reaches the provider: "x-api-key", "bearer"
	// (Authorization: Bearer), "oauth" (a bearer token, with Anthropic's
	// OAuth beta added to anthropic-beta) or "api-key" (Azure OpenAI's
	// header). Empty: the provider's own, x-api-key for anthropic, bearer
	// for openai.
	Auth string
	// CredentialEnv names the host variable APIKey came from, for the
	// redactions an exchange records.
	CredentialEnv string
	// Headers are extra headers sent upstream with every request, by name,
	// with their real values; HeaderEnv names each one's host variable.
	// Their values, like APIKey's, are never stored.
	Headers   map[string]string
	HeaderEnv map[string]string
	// Redact scrubs the run's secrets from every recorded exchange.
	Redact *redact.Redactor
	// Record, when set, stores every exchange of every cell in its run
	// folder (see Recorder).
	Record *Recorder
	// Sampling says what to set in a cell's model requests (the suite's or
	// its case's temperature and reasoning effort); nil sets nothing.
	Sampling func(cell string) *Sampling
	// Replay is what provider "replay" serves.
	Replay *Recording
	// Script is what the scripted provider answers.
	Script *suite.Script
	// Prices turn token counts into USD; nil means no USD figures.
	Prices *suite.Prices
	// Retry is how transient provider errors are retried (limits.retry).
	Retry RetryPolicy
	// Stall cuts a try of an exchange after this long without a byte from the
	// provider (limits.stall); 0 means never.
	Stall time.Duration
	// CutSilence: an exchange the cell's end cuts after the provider was silent
	// this long is a stall all the same; 0 means half of Stall.
	CutSilence time.Duration
	// RootCAs, if set, are the certificates the provider's must chain to instead of
	// the host's.
	RootCAs *x509.CertPool
	// Conns is how many cells may be talking to the provider at once (the
	// run's jobs). The gateway keeps that many idle connections to it, so a
	// cell's next request reuses one instead of dialing and shaking hands
	// again; below 2, the transport's own 2.
	Conns int
	// Bounds are what one cell can make the host hold (limits.gateway).
	Bounds Bounds
	// OnExchange, when set, hears of every exchange with a real provider that
	// ended in a fault (after retries) or a success (fault nil), as it ends:
	// the run stops on a refused key or a run of faults from it.
	OnExchange func(cell string, fault *ProviderFault)
	// Spend, when set, admits every model call under the spend cap before it
	// is forwarded (see SpendGate).
	Spend SpendGate
}

// Gateway is the host side of the cells' only way out: an HTTP server on a unix socket
// that authenticates each request by its cell's dummy key, forwards it to the provider
// with the real key (or answers it with the scripted model), and records per cell the
// models, tokens, latency, cost and provider faults. Only exact model endpoints are
// forwarded (see matchEndpoint); anything else is answered 403 by the gateway, and a
// HEAD probe 200, never forwarded. Transient provider errors are retried before the
// agent sees them. It is safe for concurrent use.
type Gateway struct {
	cfg      GatewayConfig
	family   string // wire format of a real provider: "anthropic" or "openai"
	upstream *url.URL
	// transport reaches the provider: retries and stall bounds included.
	transport *faultTransport
	socket    string
	ln        net.Listener
	srv       *http.Server
	proxy     *httputil.ReverseProxy
	scripted  *scriptedModel
	served    chan struct{}

	mu     sync.Mutex
	idle   *sync.Cond              // signalled when an exchange of any cell ends
	tokens map[string]*gatewayCell // dummy key → cell
	cells  map[string]*gatewayCell // cell name → cell
	closed bool
	// held is the bytes of request bodies every cell holds (Bounds.RunBytes).
	held int64
}

// gatewayCell is the record of one cell.
type gatewayCell struct {
	name     string
	requests int
	asked    []string
	answered []string
	tokens   *grade.Tokens
	provider *ProviderTokens
	latency  time.Duration
	calls    int // scripted replies given, for deterministic ids

	// seq numbers the cell's exchanges in order of arrival.
	seq       int
	sampling  *Sampling
	sampled   *Sampling
	exchanges []Exchange
	// logDigest is the stored log of the first logCount exchanges.
	logDigest digest.Digest
	logCount  int
	recordErr error
	replay    *replayCell
	// replayMiss is the first request a replay could not match: the cell
	// stays invalid whatever follows.
	replayMiss *ProviderFault

	retries        int
	faults         []ProviderFault
	faultsDropped  int
	unrecovered    *ProviderFault // the last fault, until an exchange succeeds
	refused        []RefusedRequest
	refusedDropped int
	// active counts the cell's exchanges being served: Usage waits for them, so a
	// response the agent has read whole is accounted before anyone asks.
	active int
	// serving counts the cell's requests in the gateway's handler, and held the
	// bytes of its request bodies in flight, against the cell's Bounds.
	serving int
	held    int64
	// spendCut is why the spend cap refused a call of the cell: it is cut.
	spendCut string
}

// StartGateway listens on Dir/gateway.sock and serves until Close.
func StartGateway(cfg GatewayConfig) (*Gateway, error) {
	g := &Gateway{
		cfg:    cfg,
		tokens: map[string]*gatewayCell{},
		cells:  map[string]*gatewayCell{},
		served: make(chan struct{}),
	}
	g.idle = sync.NewCond(&g.mu)
	switch cfg.Provider {
	case "anthropic", "openai", "gemini":
		if err := g.startProvider(); err != nil {
			return nil, err
		}
	case "scripted":
		sm, err := newScriptedModel(cfg.Script)
		if err != nil {
			return nil, fmt.Errorf("start gateway: %w", err)
		}
		g.scripted = sm
	case "replay":
		if cfg.Replay == nil || cfg.Replay.Dir == "" {
			return nil, errors.New("start gateway: provider replay needs a recorded run folder")
		}
	default:
		return nil, fmt.Errorf("start gateway: unknown provider %q (want anthropic, openai, gemini, scripted or replay)", cfg.Provider)
	}
	if cfg.Dir == "" {
		return nil, errors.New("start gateway: no folder for the socket")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("start gateway: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("start gateway: %w", err)
	}
	// The cell's user must be able to reach the socket through the mounted folder.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, fmt.Errorf("start gateway: %w", err)
	}
	g.socket = filepath.Join(dir, GatewaySocket)
	if len(g.socket) >= 108 {
		return nil, fmt.Errorf("start gateway: socket path %s is too long for a unix socket (%d bytes, at most 107)", g.socket, len(g.socket))
	}
	if err := os.Remove(g.socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("start gateway: remove stale socket: %w", err)
	}
	ln, err := net.Listen("unix", g.socket)
	if err != nil {
		return nil, fmt.Errorf("start gateway: %w", err)
	}
	if ul, ok := ln.(*net.UnixListener); ok {
		ul.SetUnlinkOnClose(true)
	}
	// Connecting needs write permission on the socket; the cell runs as another user.
	if err := os.Chmod(g.socket, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("start gateway: %w", err)
	}
	g.ln = ln
	g.srv = &http.Server{
		Handler:           http.HandlerFunc(g.serve),
		ReadHeaderTimeout: time.Minute,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() {
		defer close(g.served)
		g.srv.Serve(ln)
	}()
	return g, nil
}

// Upstream is the base URL a real provider's requests go to; "" for the
// scripted model and replays.
func (g *Gateway) Upstream() string {
	if g.upstream == nil {
		return ""
	}
	return g.upstream.String()
}

// Socket is the host path of the gateway's unix socket.
func (g *Gateway) Socket() string { return g.socket }

// NewCellToken returns a fresh dummy API key for cell: "sk-skillgate-" and 32 hex digits.
// The cell's agent uses it as its API key, and the gateway attributes each request that
// carries it to cell. Several tokens of one cell share its record.
func (g *Gateway) NewCellToken(cell string) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("gateway: random token: %v", err)) // crypto/rand does not fail on Linux
	}
	tok := "sk-skillgate-" + hex.EncodeToString(b)
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.cells[cell]
	if c == nil {
		c = &gatewayCell{name: cell, replay: &replayCell{}}
		if g.cfg.Sampling != nil {
			c.sampling = g.cfg.Sampling(cell)
		}
		g.cells[cell] = c
	}
	g.tokens[tok] = c
	return tok
}

// Close stops the gateway: it stops accepting, gives requests in flight a few seconds,
// then cuts them, and removes the socket.
func (g *Gateway) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	g.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := g.srv.Shutdown(ctx)
	if err != nil {
		err = g.srv.Close()
	}
	<-g.served
	if rerr := os.Remove(g.socket); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
		err = rerr
	}
	return err
}

func (g *Gateway) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	family := g.wireFamily(r)
	if r.Method == http.MethodHead {
		// Probes such as HEAD /api/hello: answered here, never forwarded.
		w.WriteHeader(http.StatusOK)
		return
	}
	if g.scripted != nil && r.Method == http.MethodGet {
		w.WriteHeader(http.StatusOK) // nothing to list
		return
	}
	g.mu.Lock()
	c := g.tokens[cellToken(r)]
	var over *boundRefusal
	if c != nil {
		c.active++
		over = g.admit(c)
	}
	g.mu.Unlock()
	if c == nil {
		gatewayError(w, family, http.StatusUnauthorized, "authentication_error", "skillgate gateway: unknown API key")
		return
	}
	defer func() {
		g.mu.Lock()
		c.active--
		if over == nil {
			c.serving--
		}
		g.mu.Unlock()
		g.idle.Broadcast()
	}()
	if over != nil {
		g.refuseBound(w, r, c, family, over)
		return
	}
	var fwdPath, fwdQuery string
	if g.upstream != nil {
		var ok bool
		if fwdPath, fwdQuery, ok = matchEndpoint(g.family, r.Method, r.RequestURI); !ok {
			g.refuse(w, r, c)
			return
		}
		fwdQuery = dropKey(fwdQuery)
	}
	body, held, refused, err := g.readBody(c, r)
	if err != nil {
		gatewayError(w, family, http.StatusBadRequest, "invalid_request_error", "skillgate gateway: read request: "+err.Error())
		return
	}
	if refused != nil {
		g.refuseBound(w, r, c, family, refused)
		return
	}
	asked := requestModel(body)
	if asked == "" {
		asked = geminiPathModel(r.URL.Path)
	}
	counted := r.Method == http.MethodPost
	g.mu.Lock()
	c.seq++
	rec := &exchangeRecord{seq: c.seq, method: r.Method, target: withoutKey(r.RequestURI), started: start, header: r.Header, held: held}
	sampling := c.sampling
	g.mu.Unlock()
	// The body's bytes stay held until its exchange is recorded: account hands
	// them to the recorder, else they are given back here, last.
	defer func() { g.release(c, rec.held) }()
	if counted && !sampling.empty() {
		p := r.URL.Path
		if fwdPath != "" {
			p = fwdPath
		}
		if b, set, err := applySampling(p, body, sampling); err == nil && set != nil {
			body, rec.sampling = b, set
		}
	}
	rec.body = body

	ow := &observingWriter{ResponseWriter: w, obs: newUsageObserver(family)}
	if g.cfg.Record != nil {
		ow.capture = &capture{}
	}
	if counted && g.cfg.Spend != nil {
		bound, ok := g.admitSpend(w, r, c, family, body)
		if !ok {
			return
		}
		defer g.settleSpend(c, ow, bound) // after account: the exchange's tokens are read
	}
	switch {
	case g.scripted != nil:
		var call int
		if counted {
			g.mu.Lock()
			c.calls++
			call = c.calls
			g.mu.Unlock()
		}
		g.scripted.serve(ow, r, body, call)
		g.account(c, r, ow, nil, rec, asked, counted, false)
		return
	case g.cfg.Replay != nil:
		rec.replayOf, rec.fault = g.serveReplay(ow, r, c, body, rec.seq)
		g.account(c, r, ow, nil, rec, asked, counted, false)
		return
	}
	ex := &exchange{body: body}
	r = r.WithContext(context.WithValue(r.Context(), exchangeKey{}, ex))
	r.URL.Path, r.URL.RawPath, r.URL.RawQuery = fwdPath, "", fwdQuery
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	// A response cut mid-stream (by the provider, a stall or the cell) ends the proxy
	// with http.ErrAbortHandler: what was received is accounted all the same.
	defer func() {
		p := recover()
		g.account(c, r, ow, ex, rec, asked, counted, p != nil)
		if p != nil {
			panic(p)
		}
	}()
	g.proxy.ServeHTTP(ow, r)
	// Returned without a panic: the response was relayed whole (a copy the
	// cell broke off panics), unless the provider was never reached.
	ex.set(func() { ex.delivered = ex.err == nil && ex.readErr == nil && ow.writeErr == nil })
}

// exchangeRecord is what the gateway keeps of one exchange while it is
// served, for the cell's exchange log.
type exchangeRecord struct {
	seq            int
	method, target string
	started        time.Time
	// header is the request's as received; the forwarded one, when the
	// request went to a provider, is in the exchange.
	header   http.Header
	body     []byte // as forwarded or answered
	sampling *Sampling
	replayOf int
	fault    *ProviderFault // a replay's miss
	// held is the bytes of the cell's Bounds.Bytes the body holds, until the
	// exchange is recorded.
	held int64
}
