package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/skillgate/skillgate/runner/gateway"
	"github.com/skillgate/skillgate/runner/redact"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"

	"github.com/opencontainers/go-digest"
)

// usesGateway reports whether the agent reaches a model.
func usesGateway(p *plan.Plan) bool { return p.Agent.Provider != "none" }

// startGateway starts the run's gateway and puts the forwarder beside its
// socket. The real credential and the extra headers' values are read from
// the host here and nowhere else; secrets are what the run must never
// store. Every exchange is recorded into the run folder out; with
// opts.Replay (or provider "replay") the cells are answered from a
// recorded run folder instead, with no network.
func startGateway(p *plan.Plan, opts Options, out string) (g *gateway.Gateway, secrets []redact.Secret, err error) {
	a := p.Agent.Agent
	cfg := gateway.GatewayConfig{Provider: a.Provider, Script: a.Script, Prices: a.Prices,
		Record: &gateway.Recorder{Out: out}, Sampling: cellSampling(p), Conns: opts.Jobs, OnExchange: opts.onExchange, Spend: opts.spendGate}
	replay := opts.Replay
	if a.Provider == "replay" && replay == "" {
		if a.Replay == "" {
			return nil, nil, errors.New("start gateway: provider replay needs agent.replay, the recorded run folder")
		}
		replay = filepath.Join(opts.SuiteDir, filepath.FromSlash(a.Replay))
	}
	switch {
	case replay != "":
		rec, err := loadRecording(p, replay, out)
		if err != nil {
			return nil, nil, err
		}
		cfg.Provider, cfg.Replay = "replay", rec
	case a.Provider == "anthropic" || a.Provider == "openai" || a.Provider == "gemini":
		conn, err := gateway.ReadConnection(gateway.ConnectionSettings{Provider: a.Provider, Upstream: a.Upstream, UpstreamEnv: a.UpstreamEnv,
			UpstreamDefault: a.UpstreamDefault, CredentialEnv: a.CredentialEnv, Auth: a.Auth, Headers: a.Headers}, "agent")
		if err != nil {
			return nil, nil, fmt.Errorf("start gateway: %w", err)
		}
		cfg.Upstream, cfg.APIKey, cfg.Auth, cfg.CredentialEnv = conn.Upstream, conn.Key, conn.Auth, a.CredentialEnv
		cfg.Headers, cfg.HeaderEnv = conn.Headers, a.Headers
		secrets = conn.Secrets
	}
	cfg.Redact = redact.NewNamed(p, secrets...)
	if cfg.Retry, cfg.Stall, err = gatewayLimits(p.Limits.Limits); err != nil {
		return nil, nil, err
	}
	if cfg.Bounds, err = gatewayBounds(p.Limits.Gateway); err != nil {
		return nil, nil, err
	}
	// A provider silent for half the stall bound, or half the cell's timeout
	// when that is shorter, when the cell ends made it end: a stall.
	if timeout, err := time.ParseDuration(p.Limits.Timeout); err == nil && cfg.Stall > 0 {
		cfg.CutSilence = min(cfg.Stall, timeout) / 2
	}
	// A short folder: a unix socket path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "sg-gw-")
	if err != nil {
		return nil, nil, fmt.Errorf("start gateway: %w", err)
	}
	cfg.Dir = dir
	g, err = gateway.StartGateway(cfg)
	if err == nil {
		err = gateway.WriteForwarder(dir)
	}
	if err != nil {
		if g != nil {
			g.Close()
		}
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return g, secrets, nil
}

// cellSampling is what the gateway sets in each cell's model requests: its
// case's temperature and effort, else the agent's.
func cellSampling(p *plan.Plan) func(cell string) *gateway.Sampling {
	byCell := map[string]*gateway.Sampling{}
	cases := map[string]plan.PlanCase{}
	for _, c := range p.Cases {
		cases[c.ID] = c
	}
	for _, c := range p.Cells {
		pc := cases[c.Case]
		s := &gateway.Sampling{Temperature: p.Agent.Temperature, Effort: p.Agent.Effort}
		if pc.Temperature != nil {
			s.Temperature = pc.Temperature
		}
		if pc.Effort != "" {
			s.Effort = pc.Effort
		}
		if s.Temperature != nil || s.Effort != "" {
			byCell[c.ID] = s
		}
	}
	return func(cell string) *gateway.Sampling { return byCell[cell] }
}

// loadRecording reads which exchange log each cell of a recorded run
// folder left, for the plan's cells: by rollout key where the recording ran
// the same plan, else by cell (case, arm, trial) through the recording's
// own plan.
func loadRecording(p *plan.Plan, dir, out string) (*gateway.Recording, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("replay %s: %w", dir, err)
	}
	if abs == out {
		return nil, fmt.Errorf("replay %s: that is the run folder itself; replay into another one (--out)", dir)
	}
	recorded, err := plan.ReadPlan(filepath.Join(abs, store.FilePlan))
	if err != nil {
		return nil, fmt.Errorf("replay %s: %w", dir, err)
	}
	st := &store.Store{Dir: abs}
	rec := &gateway.Recording{Dir: abs, Logs: map[string]digest.Digest{}}
	byID := map[string]digest.Digest{}
	for _, c := range recorded.Cells {
		ro, ok, err := st.Rollout(c.Rollout)
		if err != nil {
			return nil, fmt.Errorf("replay %s: %w", dir, err)
		}
		if ok && ro.Gateway != nil && ro.Gateway.Exchanges != "" {
			byID[c.ID] = ro.Gateway.Exchanges
		}
	}
	n := 0
	for _, c := range p.Cells {
		if d, ok := byID[c.ID]; ok {
			rec.Logs[c.ID] = d
			n++
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("replay %s: no recorded exchanges of any cell of this plan (was it run by a skillgate that records them?)", dir)
	}
	return rec, nil
}

// gatewayLimits reads limits.retry and limits.stall.
func gatewayLimits(l suite.Limits) (gateway.RetryPolicy, time.Duration, error) {
	parse := func(name, v string) (time.Duration, error) {
		if v == "" {
			return 0, fmt.Errorf("read limits.%s: unset (a plan of an older skillgate? compile it again)", name)
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, fmt.Errorf("read limits.%s: %w", name, err)
		}
		return d, nil
	}
	stall, err := parse("stall", l.Stall)
	if err != nil {
		return gateway.RetryPolicy{}, 0, err
	}
	delay, err := parse("retry.delay", l.Retry.Delay)
	if err != nil {
		return gateway.RetryPolicy{}, 0, err
	}
	maxDelay, err := parse("retry.maxDelay", l.Retry.MaxDelay)
	if err != nil {
		return gateway.RetryPolicy{}, 0, err
	}
	return gateway.RetryPolicy{Attempts: l.Retry.Attempts, Delay: delay, MaxDelay: maxDelay}, stall, nil
}

// gatewayBounds reads limits.gateway.
func gatewayBounds(l *suite.GatewayLimits) (gateway.Bounds, error) {
	if l == nil {
		return gateway.Bounds{}, errors.New("read limits.gateway: unset (a plan of an older skillgate? compile it again)")
	}
	body, err := suite.ParseBytes(l.Body)
	if err != nil {
		return gateway.Bounds{}, fmt.Errorf("read limits.gateway.body: %w", err)
	}
	bytes, err := suite.ParseBytes(l.Bytes)
	if err != nil {
		return gateway.Bounds{}, fmt.Errorf("read limits.gateway.bytes: %w", err)
	}
	var run int64 // unset in a plan of an older skillgate: no bound across cells
	if l.RunBytes != "" {
		if run, err = suite.ParseBytes(l.RunBytes); err != nil {
			return gateway.Bounds{}, fmt.Errorf("read limits.gateway.runBytes: %w", err)
		}
	}
	return gateway.Bounds{Requests: l.Requests, Body: body, Bytes: bytes, RunBytes: run}, nil
}

// preflight checks the real provider's key and reachability before any cell, and
// says what to fix when it fails: the credential variable for a refused key, the
// upstream for a provider out of reach.
func preflight(ctx context.Context, g *gateway.Gateway, p *plan.Plan, log io.Writer) error {
	note, err := g.Preflight(ctx) // nothing to check for the scripted model or a replay
	var pe *gateway.PreflightError
	switch {
	case errors.As(err, &pe) && pe.Fault.Kind == gateway.FaultStatus:
		return fmt.Errorf("check provider %s: %s answered GET /v1/models with %s; the key in %s is refused: fix it and run again (no cell was started)",
			p.Agent.Provider, g.Upstream(), pe.Fault.What(), p.Agent.CredentialEnv)
	case errors.As(err, &pe):
		tries := ""
		if n := pe.Fault.Retries; n > 0 {
			tries = fmt.Sprintf(", after %d %s", n, plural(n, "retry", "retries"))
		}
		return fmt.Errorf("check provider %s: GET %s: %s%s; check agent.upstream and the way to it (no cell was started)",
			p.Agent.Provider, pe.Fault.URL, pe.Fault.What(), tries)
	case err != nil:
		return err
	}
	if note != "" {
		fmt.Fprintf(log, "check provider %s: %s\n", p.Agent.Provider, note)
	}
	return nil
}

// plural is one or many, by n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
