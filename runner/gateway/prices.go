package gateway

import (
	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// PriceTokens prices t; nil without per-token prices or without tokens. A missing cache
// price falls back to the input price.
func PriceTokens(p *suite.Prices, t *grade.Tokens) *float64 {
	if t == nil || !tokenPriced(p) {
		return nil
	}
	val := func(f *float64, fallback *float64) float64 {
		if f != nil {
			return *f
		}
		if fallback != nil {
			return *fallback
		}
		return 0
	}
	usd := (float64(t.Input)*val(p.InputPerMTok, nil) +
		float64(t.Output)*val(p.OutputPerMTok, nil) +
		float64(t.CacheRead)*val(p.CacheReadPerMTok, p.InputPerMTok) +
		float64(t.CacheWrite)*val(p.CacheWritePerMTok, p.InputPerMTok)) / 1e6
	return &usd
}

func tokenPriced(p *suite.Prices) bool {
	return p != nil && (p.InputPerMTok != nil || p.OutputPerMTok != nil || p.CacheReadPerMTok != nil || p.CacheWritePerMTok != nil)
}
