package verdict

import "fmt"

// Decisions of a reuse sentinel group.
const (
	SentinelsKept    = "kept"
	SentinelsRefused = "refused"
	SentinelsOff     = "off"
)

// ReuseSentinels is run --reuse's drift check by outcome, as the run
// folder's reuse-sentinels.json holds it: per agent and model asked, the
// reused cells run again as sentinels, their stored outcomes against the
// fresh ones, and what the paired test decided. Sentinel cells count in
// no metric and no verdict.
type ReuseSentinels struct {
	Groups []SentinelGroup `json:"groups"`
}

// SentinelGroup is one agent and model's sentinel check.
type SentinelGroup struct {
	Agent string `json:"agent"`
	Model string `json:"model"`
	// Reused is how many of the group's cells were reused when it was
	// decided.
	Reused int `json:"reused"`
	// Planned is the policy's sentinels per group (policy.reuse).
	Planned int            `json:"planned"`
	Cells   []SentinelPair `json:"cells"`
	// StoredPassed and FreshPassed count the passes among the Paired
	// sentinels (both outcomes valid).
	Paired       int     `json:"paired"`
	StoredPassed int     `json:"storedPassed"`
	FreshPassed  int     `json:"freshPassed"`
	Method       string  `json:"method,omitempty"`
	P            float64 `json:"p"`
	Alpha        float64 `json:"alpha"`
	// SmallestP is the smallest p the test could reach with these
	// sentinels' cases; at or above Alpha it could not refuse.
	SmallestP float64 `json:"smallestP"`
	// Decision is kept, refused or off; Reason says why.
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
	// Again is how many reused cells a refusal ran again.
	Again int `json:"again,omitempty"`
}

// SentinelPair is one sentinel: the reused cell and its sentinel, each
// outcome as graded (nil when not valid).
type SentinelPair struct {
	Cell     string `json:"cell"`
	Sentinel string `json:"sentinel"`
	Stored   *bool  `json:"stored"`
	Fresh    *bool  `json:"fresh"`
}

// Line says a group's check in one line, as the run's log and the
// reports do.
func (g SentinelGroup) Line() string {
	model := g.Model
	if model == "" {
		model = "(none asked)"
	}
	head := fmt.Sprintf("reuse sentinels for model %s (agent %s): ", model, g.Agent)
	if g.Decision == SentinelsOff {
		return head + g.Reason
	}
	s := fmt.Sprintf("%s%d rerun, stored %d/%d passed, now %d/%d; %s", head, len(g.Cells), g.StoredPassed, g.Paired, g.FreshPassed, g.Paired, g.Reason)
	if g.Decision == SentinelsRefused {
		return s + fmt.Sprintf(": reuse refused, %d reused cells run again", g.Again)
	}
	return s + ": reuse kept"
}

// Lines are every group's line.
func (r *ReuseSentinels) Lines() []string {
	if r == nil {
		return nil
	}
	var out []string
	for _, g := range r.Groups {
		out = append(out, g.Line())
	}
	return out
}
