package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/skillgate/skillgate/runner/gateway"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// cellGatewayMount is where the gateway's folder (its socket and the
// forwarder) is mounted read-only in a cell.
const cellGatewayMount = "/skillgate"

// usesGateway reports whether the agent reaches a model.
func usesGateway(p *plan.Plan) bool { return p.Agent.Provider != "none" }

// startGateway starts the run's gateway and puts the forwarder beside its
// socket. The real credential is read from the host here and nowhere else.
func startGateway(p *plan.Plan) (*gateway.Gateway, string, error) {
	key := ""
	if p.Agent.Provider != "scripted" {
		if p.Agent.CredentialEnv == "" {
			return nil, "", fmt.Errorf("start gateway: agent.credentialEnv names no variable for provider %s", p.Agent.Provider)
		}
		if key = os.Getenv(p.Agent.CredentialEnv); key == "" {
			return nil, "", fmt.Errorf("start gateway: %s is not set; set it, or use provider \"scripted\" to run offline", p.Agent.CredentialEnv)
		}
	}
	retry, stall, err := gatewayLimits(p.Limits.Limits)
	if err != nil {
		return nil, "", err
	}
	// A short folder: a unix socket path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "sg-gw-")
	if err != nil {
		return nil, "", fmt.Errorf("start gateway: %w", err)
	}
	g, err := gateway.StartGateway(gateway.GatewayConfig{Dir: dir, Provider: p.Agent.Provider, Upstream: p.Agent.Upstream, APIKey: key,
		Script: p.Agent.Script, Prices: p.Agent.Prices, Retry: retry, Stall: stall})
	if err == nil {
		err = gateway.WriteForwarder(dir)
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	return g, key, nil
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

// preflight checks the real provider's key and reachability before any cell, and
// says what to fix when it fails: the credential variable for a refused key, the
// upstream for a provider out of reach.
func preflight(ctx context.Context, g *gateway.Gateway, p *plan.Plan, log io.Writer) error {
	note, err := g.Preflight(ctx)
	var pe *gateway.PreflightError
	switch {
	case errors.As(err, &pe) && pe.Fault.Kind == gateway.FaultStatus:
		return fmt.Errorf("check provider %s: %s answered GET /v1/models with %s; the key in %s is refused: fix it and run again (no cell was started)",
			p.Agent.Provider, p.Agent.Upstream, pe.Fault.What(), p.Agent.CredentialEnv)
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
