package gateway

import (
	"math"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/suite"
)

// TestCallBound: a model call's bound counts its request's bytes and the
// margins in, its own output limit (or the stated one) out, at the highest
// input price; a request with no limit and none stated cannot be bounded.
func TestCallBound(t *testing.T) {
	limit := int64(1000)
	for _, c := range []struct {
		body          string
		limit         *int64
		input, output int64
		err           string
	}{
		{`{"max_tokens":10,"messages":[]}`, nil, 31 + InputMargin, 10, ""},
		{`{"max_output_tokens":20,"input":"x"}`, nil, 36 + InputMargin, 20, ""},
		{`{"max_tokens":10,"tools":[{"name":"a"}]}`, nil, 40 + InputMargin + ToolMargin, 10, ""},
		{`{"input":"x"}`, &limit, 13 + InputMargin, 1000, ""},
		{`{"input":"x"}`, nil, 0, 0, "names no max_tokens"},
		{`not json`, &limit, 8 + InputMargin, 1000, ""},
	} {
		in, out, err := requestBound([]byte(c.body), c.limit)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want %q", c.body, err, c.err)
			}
			continue
		}
		if err != nil || in != c.input || out != c.output {
			t.Errorf("%s: %d in, %d out, %v; want %d, %d", c.body, in, out, err, c.input, c.output)
		}
	}
	three, fifteen, four := 3.0, 15.0, 3.75
	p := &suite.Prices{InputPerMTok: &three, OutputPerMTok: &fifteen, CacheWritePerMTok: &four}
	if v := CallBound(p, 1_000_000, 1_000_000); v == nil || math.Abs(*v-18.75) > 1e-9 {
		t.Errorf("bound %v, want $18.75: input at the cache-write price", v)
	}
	if v := CallBound(&suite.Prices{PerCall: &three}, 1, 1); v != nil {
		t.Errorf("bound without token prices: %v", *v)
	}
}
