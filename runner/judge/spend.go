package judge

import (
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/runner/gateway"
)

// capError is a judge call the spend cap left unasked: it is not judged, for
// the cap, and its failure record says so.
type capError struct {
	key, role, name string
	cells           []string
	err             error
}

func (e *capError) Error() string { return e.err.Error() }
func (e *capError) Unwrap() error { return e.err }

// callBound is the most one judge call of prompt can cost at prices: the
// prompt's bytes and the margin in, the judge's max_tokens out (every judge call
// skillgate makes names it); 0 without token prices, where the judge's perCall
// price is the bound.
func callBound(prices *suite.Prices, prompt string) float64 {
	if v := gateway.CallBound(prices, int64(len(prompt))+gateway.InputMargin, judgeMaxTokens); v != nil {
		return *v
	}
	return 0
}
