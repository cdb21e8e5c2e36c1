package runner

import (
	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/verdict"
	"github.com/skillgate/skillgate/runner/gateway"
	"github.com/skillgate/skillgate/runner/store"
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

// markSpendCapped tells in r's verdict the cells the spend cap left unrun (the
// ledger's refusals) or cut from those missing or invalid for other reasons.
func markSpendCapped(out string, r *verdict.Report, results []grade.CellResult) error {
	refused, err := store.SpendRefusals(out)
	if err != nil {
		return err
	}
	verdict.MarkSpendCapped(&r.Verdict, results, refused)
	return nil
}
