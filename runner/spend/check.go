package spend

import (
	"fmt"
	"math"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/runner/gateway"
)

// priced: prices the spend cap can count with.
func priced(p *suite.Prices) bool {
	return p != nil && (p.PerCall != nil || p.InputPerMTok != nil && p.OutputPerMTok != nil)
}

// Cost is what one cell or judge call cost: its tokens at the prices, else the
// per-call price when it made a model call; ok is false when there is nothing to
// record (no model call, or no price to count it with).
func Cost(p *suite.Prices, t *grade.Tokens, called bool) (usd float64, estimated, ok bool) {
	if v := gateway.PriceTokens(p, t); v != nil {
		return *v, false, true
	}
	if !called {
		return 0, false, false // nothing to record
	}
	if p != nil && p.PerCall != nil {
		return *p.PerCall, true, true
	}
	return 0, false, false
}

// CheckCap refuses a spend cap that cannot be kept: a negative or non-finite one,
// one on a suite whose agent (or real judge) has no prices to count with, or one
// whose agent's model calls have no bound on their output. It needs nothing but
// the plan, so a run stops on it before any engine or provider is asked.
func CheckCap(p *plan.Plan, capUSD float64) error {
	if capUSD == 0 {
		return nil
	}
	if capUSD < 0 || math.IsNaN(capUSD) || math.IsInf(capUSD, 0) {
		return fmt.Errorf("check spend cap: --spend-cap %v: want a positive amount in USD", capUSD)
	}
	if p.Agent.Provider == "none" {
		return fmt.Errorf("check spend cap: suite %s: the agent calls no model (provider \"none\"): there is no spend to cap; run without --spend-cap", p.Suite.Name)
	}
	if !priced(p.Agent.Prices) {
		return fmt.Errorf("check spend cap: suite %s gives its agent no prices, so --spend-cap has nothing to count; "+
			"add the model's USD prices per million tokens to the agent, as in `agent: prices: {inputPerMTok: 3, outputPerMTok: 15}`, "+
			"or an estimate per cell, as in `agent: prices: perCall: 0.5`", p.Suite.Name)
	}
	if pr := p.Agent.Prices; pr.InputPerMTok != nil && (p.Agent.Provider == "openai" || p.Agent.Provider == "gemini") && pr.MaxOutputTokens == nil {
		return fmt.Errorf("check spend cap: suite %s: the agent's model calls cannot be bounded: an OpenAI Responses request need not name "+
			"max_output_tokens (nor a Gemini request generationConfig.maxOutputTokens), and the suite states no output limit for model %s, so one call's cost has no upper bound; "+
			"state the model's output limit, as in `agent: prices: maxOutputTokens: 128000`", p.Suite.Name, p.Agent.Model)
	}
	if j := p.Judge; j != nil && (j.Provider == "anthropic" || j.Provider == "openai") && !priced(j.Prices) {
		return fmt.Errorf("check spend cap: suite %s gives its %s judge no prices, so --spend-cap cannot count its calls; "+
			"add them as in `judge: prices: {inputPerMTok: 3, outputPerMTok: 15}`, or an estimate per call, as in `judge: prices: perCall: 0.05`",
			p.Suite.Name, j.Provider)
	}
	return nil
}
