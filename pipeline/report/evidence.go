package report

import (
	"github.com/skillgate/skillgate/pipeline/plan"
	"unicode/utf8"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// Evidence is what the report shows of each cell beyond its grade: what the agent was
// asked, what it did, what it left and what the checks found. The runner reads it from the
// store; report.html embeds it, one capped block per cell, and renders a cell's view only
// when it is opened, so a page of thousands of cells stays fast.
type Evidence struct {
	// Cells by cell ID.
	Cells map[string]CellEvidence
	// Plan is the run's plan, for the outputs of other systems that speak
	// of a cell's case in their own words (chrisbanes' kind, task mode and
	// target skills); nil where a caller has none.
	Plan *plan.Plan
}

// CellEvidence is one cell's evidence.
type CellEvidence struct {
	Cell  string `json:"cell"`
	Case  string `json:"case"`
	Arm   string `json:"arm"`
	Trial int    `json:"trial"`

	Status   string `json:"status"`
	Passed   bool   `json:"passed"`
	Error    string `json:"error,omitempty"`
	ExitCode int    `json:"exitCode"`

	// Prompt is what the agent was asked (a forced arm's prompt included), Seed the
	// conversation before it.
	Prompt string       `json:"prompt"`
	Seed   []suite.Turn `json:"seed,omitempty"`
	// Turns is the session as the transcript tells it.
	Turns  []Turn `json:"turns"`
	Answer string `json:"answer"`
	// Diffs are the changed files, each as a unified diff (or a note).
	Diffs  []FileDiff          `json:"diffs"`
	Checks []grade.CheckResult `json:"checks"`
	Judge  *JudgeEvidence      `json:"judge,omitempty"`

	Skills     []grade.RoutingEvent `json:"skills"`
	References []grade.RoutingEvent `json:"references"`

	AgentSeconds float64       `json:"agentSeconds"`
	TotalSeconds float64       `json:"totalSeconds"`
	Tokens       *grade.Tokens `json:"tokens,omitempty"`
	USD          *float64      `json:"usd,omitempty"`
	Requests     int           `json:"requests,omitempty"`
	Model        string        `json:"model,omitempty"`
	Collection   string        `json:"collection,omitempty"`
	// Reused says the cell's rollout was taken from another run folder by
	// run --reuse, and how old it was then; nil for a cell run here.
	Reused *ReusedEvidence `json:"reused,omitempty"`
	// ModelAsked and ModelAnswered are the models the cell's requests named
	// and its responses did; LatencySeconds sums its model exchanges'.
	ModelAsked     string  `json:"modelAsked,omitempty"`
	ModelAnswered  string  `json:"modelAnswered,omitempty"`
	LatencySeconds float64 `json:"latencySeconds,omitempty"`
	// ProviderTokens are Tokens as the provider counted them (OpenAI's input
	// includes the cached tokens); Sampling what the gateway set.
	ProviderTokens *ProviderTokens `json:"providerTokens,omitempty"`
	Sampling       string          `json:"sampling,omitempty"`
	// Replayed says the cell was answered from a recording, not a provider.
	Replayed bool `json:"replayed,omitempty"`
	// Exchanges are the cell's recorded model exchanges, in order; the log
	// itself is Files["exchanges"].
	Exchanges []ExchangeEvidence `json:"exchanges,omitempty"`

	// Files are the stored raw files, relative to the run folder: transcript, stderr,
	// answer.
	Files map[string]string `json:"files,omitempty"`
	// Cut says something was shortened for the page; the stored files hold it whole.
	Cut bool `json:"cut,omitempty"`
}

// ProviderTokens are token counts in a provider's own convention.
type ProviderTokens struct {
	Convention string `json:"convention"`
	Input      int64  `json:"input"`
	Output     int64  `json:"output"`
	CacheRead  int64  `json:"cacheRead,omitempty"`
	CacheWrite int64  `json:"cacheWrite,omitempty"`
}

// ExchangeEvidence is one recorded model exchange of a cell: what was asked
// and answered, how long it took, what it cost, and where its stored
// request and response are.
type ExchangeEvidence struct {
	Seq            int           `json:"seq"`
	Method         string        `json:"method"`
	Path           string        `json:"path"`
	Status         int           `json:"status"`
	ModelAsked     string        `json:"modelAsked,omitempty"`
	ModelAnswered  string        `json:"modelAnswered,omitempty"`
	LatencySeconds float64       `json:"latencySeconds"`
	Tokens         *grade.Tokens `json:"tokens,omitempty"`
	USD            *float64      `json:"usd,omitempty"`
	Fault          string        `json:"fault,omitempty"`
	// Request and Response are the stored bodies, relative to the run
	// folder; empty for an empty body.
	Request  string `json:"request,omitempty"`
	Response string `json:"response,omitempty"`
}

// Turn is one step of an agent's session: a message, or a tool call with its result, and
// any skill or reference it loaded, with the evidence level of that load.
type Turn struct {
	// Role is "user", "assistant" or "tool".
	Role string `json:"role"`
	Text string `json:"text,omitempty"`
	// Tool, Input and Result describe a tool call.
	Tool   string `json:"tool,omitempty"`
	Input  string `json:"input,omitempty"`
	Result string `json:"result,omitempty"`
	// Loads are the skills (NAME) and references (NAME/PATH) this step loaded.
	Loads []grade.RoutingEvent `json:"loads,omitempty"`
}

// FileDiff is one changed file of a cell.
type FileDiff struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
	// Diff is a unified diff; empty with a Note (binary, a folder, not collected).
	Diff string `json:"diff,omitempty"`
	Note string `json:"note,omitempty"`
}

// JudgeEvidence is what the judge was asked and answered about a cell.
type JudgeEvidence struct {
	Criteria []grade.CriterionResult `json:"criteria"`
	Rubric   []string                `json:"rubric"`
	Reply    string                  `json:"reply"`
	Valid    bool                    `json:"valid"`
	Reason   string                  `json:"reason,omitempty"`
}

// What one cell's block in report.html keeps; the stored files keep everything.
const (
	pageTextBytes   = 8 << 10  // the prompt, the answer, a judge's reply
	pageTurnBytes   = 2 << 10  // one turn's text, input or result
	pageTurns       = 80       // turns of a session
	pageDiffBytes   = 16 << 10 // one file's diff
	pageDiffs       = 40       // changed files shown
	pageDetailBytes = 1 << 10  // one check's detail
)

// forPage is the evidence cut to what one cell's block keeps.
func (e CellEvidence) forPage() CellEvidence {
	cut := false
	clip := func(s string, n int) string {
		if len(s) <= n {
			return s
		}
		cut = true
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		return s[:n] + "…"
	}
	e.Prompt, e.Answer = clip(e.Prompt, pageTextBytes), clip(e.Answer, pageTextBytes)
	if len(e.Turns) > pageTurns {
		cut = true
		e.Turns = append(append([]Turn{}, e.Turns[:pageTurns/2]...), append([]Turn{{Role: "tool", Text: "… turns left out of the page; the transcript holds them"}}, e.Turns[len(e.Turns)-pageTurns/2:]...)...)
	}
	turns := make([]Turn, len(e.Turns))
	for i, t := range e.Turns {
		t.Text, t.Input, t.Result = clip(t.Text, pageTurnBytes), clip(t.Input, pageTurnBytes), clip(t.Result, pageTurnBytes)
		turns[i] = t
	}
	e.Turns = turns
	if len(e.Diffs) > pageDiffs {
		cut = true
		e.Diffs = e.Diffs[:pageDiffs]
	}
	diffs := make([]FileDiff, len(e.Diffs))
	for i, d := range e.Diffs {
		d.Diff = clip(d.Diff, pageDiffBytes)
		diffs[i] = d
	}
	e.Diffs = diffs
	if len(e.Exchanges) > pageTurns {
		cut = true
		e.Exchanges = e.Exchanges[:pageTurns]
	}
	checks := make([]grade.CheckResult, len(e.Checks))
	for i, ch := range e.Checks {
		ch.Detail = clip(ch.Detail, pageDetailBytes)
		checks[i] = ch
	}
	e.Checks = checks
	if e.Judge != nil {
		j := *e.Judge
		j.Reply = clip(j.Reply, pageTextBytes)
		e.Judge = &j
	}
	e.Cut = e.Cut || cut
	return e
}

// ReusedEvidence is where a reused cell's rollout came from and when it ran.
type ReusedEvidence struct {
	From string `json:"from"`
	// RanAt is when its session started (RFC 3339, UTC); Age how long
	// before it was taken (a fixed figure, so the report stays a function
	// of the run folder).
	RanAt string `json:"ranAt"`
	Age   string `json:"age"`
}
