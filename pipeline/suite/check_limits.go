package suite

import (
	"strings"
	"time"

	"cuelang.org/go/cue"
)

// checkLimits checks what CUE cannot of the limits: bounds that could never act.
// The stall bound acts on a real provider only.
func checkLimits(c *checker, s *Suite) {
	l := s.Limits
	timeout, terr := time.ParseDuration(l.Timeout)
	stall, serr := time.ParseDuration(l.Stall)
	// Only a stall the suite sets: a default one the timeout reaches first
	// is still decided at the cell's end (half the shorter of the two).
	stallSel := []cue.Selector{str("limits"), str("stall")}
	pos := userPos(c.v.LookupPath(cue.MakePath(stallSel...)))
	set := pos.IsValid() && !strings.Contains(pos.Filename(), "cue.mod") && !strings.Contains(pos.Filename(), "skillgate.dev/schema")
	real := s.Agent.Provider == "anthropic" || s.Agent.Provider == "openai" || s.Agent.Provider == "gemini"
	if real && set && terr == nil && serr == nil && stall >= timeout {
		// A stall the cell's timeout ends first would never be cut as the
		// provider's: the cell would time out as if the agent were slow.
		c.add(stallSel, "limits.stall is %s, not below limits.timeout (%s): a stalled provider would end the cell by its timeout before the stall is cut; make it shorter", l.Stall, l.Timeout)
	}
	if g := l.Gateway; g != nil {
		body, berr := ParseBytes(g.Body)
		held, herr := ParseBytes(g.Bytes)
		if berr == nil && herr == nil && held < body {
			c.add([]cue.Selector{str("limits"), str("gateway"), str("bytes")}, "limits.gateway.bytes is %s, below limits.gateway.body (%s): a body the body bound allows could never be held", g.Bytes, g.Body)
		}
	}
}
