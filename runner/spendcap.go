package runner

import (
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/gateway"
)

// The spend cap is enforced in runner/spend; this file only says which of a
// run's model calls the gateway meters under it.

// gatewayPriced says whether the agent's model calls have token prices, so the
// gateway admits each call by its bound under the spend cap; with a perCall
// price alone a session costs that price, whatever its calls.
func gatewayPriced(p *plan.Plan) bool {
	pr := p.Agent.Prices
	return gateway.CallBound(pr, 0, 0) != nil
}
