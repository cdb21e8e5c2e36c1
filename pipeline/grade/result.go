package grade

import "github.com/opencontainers/go-digest"

// Cell statuses in results: a rollout's status, or StatusMissing when the
// cell has no stored rollout (not run: interrupted, spend cap, filtered).
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusTimeout   = "timeout"
	StatusOOM       = "oom"
	StatusInvalid   = "invalid"
	StatusMissing   = "missing"
)

// Evidence levels of routing events, strongest first.
const (
	EvidenceObserved     = "observed"
	EvidenceInferred     = "inferred"
	EvidenceReported     = "reported"
	EvidenceUnobservable = "unobservable"
)

// RoutingEvent is one skill or reference an agent loaded, with how we know.
type RoutingEvent struct {
	// Name is a skill's installed name, or NAME/PATH for a reference.
	Name     string `json:"name"`
	Evidence string `json:"evidence"`
}

// Tokens are what a provider reported, in one convention for every provider: Input
// excludes the tokens read from or written to the prompt cache (OpenAI's input counts its
// cached tokens, Anthropic's does not: they are moved to CacheRead), so prices apply alike;
// nil where it reported nothing.
type Tokens struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cacheRead"`
	CacheWrite int64 `json:"cacheWrite"`
}

// CellResult is the normalized record of one cell: how its rollout ended,
// its deterministic grade, its routing and its cost. Every metric and rule
// is a pure function of a plan's CellResults.
type CellResult struct {
	Cell    string        `json:"cell"`
	Case    string        `json:"case"`
	Arm     string        `json:"arm"`
	Trial   int           `json:"trial"`
	Rollout digest.Digest `json:"rollout"`
	Grade   digest.Digest `json:"grade"`

	// Status is the rollout's status, or StatusMissing.
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`

	// Passed: the rollout completed and every deterministic check passed
	// (and, once judged, every rubric criterion). Meaningless unless
	// Status is completed, failed, timeout or oom (those never pass).
	Passed bool `json:"passed"`
	// Score is the fraction of deterministic checks passed; 0 when the
	// agent did not complete.
	Score float64 `json:"score"`

	Checks  []CheckResult `json:"checks"`
	Routing Routing2      `json:"routing"`

	Telemetry CellTelemetry `json:"telemetry"`
	Cost      CellCost      `json:"cost"`

	// Judge is the rubric judge's grade, once judged (see ApplyRubric).
	Judge *CellJudgement `json:"judge,omitempty"`

	// Collection, when set, says why reading the cell's workspace back stopped
	// at a limit: the checks saw what was read (a file cut by a limit reads as
	// not collected), no more.
	Collection string `json:"collection,omitempty"`
}

// CheckJudge is the kind of a rubric criterion graded by the judge.
const CheckJudge = "judge"

// CriterionResult is the judge's result for one rubric criterion.
type CriterionResult struct {
	// Criterion is the criterion's index in the case's rubric, from 0.
	Criterion int    `json:"criterion"`
	Pass      bool   `json:"pass"`
	Evidence  string `json:"evidence,omitempty"`
}

// CellJudgement is the rubric judge's grade of one cell.
type CellJudgement struct {
	// Candidate is the opaque ID the packet gave the attempt.
	Candidate string `json:"candidate"`
	// Key names the judgement and its packet in the store
	// (store/judgements/KEY.json, store/packets/KEY.json).
	Key string `json:"key"`
	// Valid: the reply held exactly one well-formed result per criterion.
	// Reason says why not.
	Valid  bool   `json:"valid"`
	Reason string `json:"reason,omitempty"`
	// Status and DeterministicPassed are the cell's before judging.
	Status              string `json:"status"`
	DeterministicPassed bool   `json:"deterministicPassed"`
	// Criteria are the results in criterion order; Score the fraction
	// that passed.
	Criteria []CriterionResult `json:"criteria,omitempty"`
	Score    float64           `json:"score"`
	// Seconds and Tokens are what the judge call cost, as far as the judge
	// reported it; cost metrics, never gates.
	Seconds float64 `json:"seconds,omitempty"`
	Tokens  *Tokens `json:"tokens,omitempty"`
	// Dispute, when the judgement disputes the deterministic grade or the
	// suite names the case, is the disagreement and the adjudicator's
	// judgement, which decides the criteria when it was asked.
	Dispute *Dispute `json:"dispute,omitempty"`
}

// Valid reports whether the cell counts as a pass or a fail: it ran, and
// neither Docker nor skillgate failed it.
func (r CellResult) Valid() bool {
	return r.Status != StatusInvalid && r.Status != StatusMissing
}

// Check kinds.
const (
	CheckFile   = "file"
	CheckAnswer = "answer"
	CheckCode   = "code"
	CheckRun    = "run"
	CheckWrites = "writes"
	// CheckReport: the final answer is the structured report the agent
	// was asked for (agent.report).
	CheckReport = "report"
)

// CheckResult is one deterministic check of a cell.
type CheckResult struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Negative marks an authored negative expectation (notContains,
	// exists: false, unchanged): the observations of prohibitedOutcome.
	Negative bool   `json:"negative,omitempty"`
	Passed   bool   `json:"passed"`
	Detail   string `json:"detail,omitempty"`
	// Evidence is how a trajectory check knows what the agent did
	// (observed, reported, unobservable); "" for other checks.
	Evidence string `json:"evidence,omitempty"`
}

// Routing2 is a cell's routing against its case's expectations, for skills
// and for references. Routing never fails a cell on its own: it feeds the
// routing metrics and, for forbidden entries, prohibitedOutcome.
type Routing2 struct {
	Skills     RoutingTally `json:"skills"`
	References RoutingTally `json:"references"`
}

// RoutingTally counts one level of routing in one cell. Only the suite's
// own skills count: an agent's built-in skills are listed in Ignored.
type RoutingTally struct {
	// TP: observed and required; FP: observed, not required; FN: required,
	// not observed.
	TP int `json:"tp"`
	FP int `json:"fp"`
	FN int `json:"fn"`
	// Allowed: observed, not required but allowed; counted with TP in
	// precision only.
	Allowed int `json:"allowed,omitempty"`
	// Forbidden is the number of forbidden entries; ForbiddenSeen those
	// observed (violations).
	Forbidden     int      `json:"forbidden"`
	ForbiddenSeen []string `json:"forbiddenSeen"`
	Observed      []string `json:"observed"`
	Ignored       []string `json:"ignored"`
	// Evidence is the weakest evidence among the observed events, or
	// "unobservable" when the agent's adapter cannot tell.
	Evidence string `json:"evidence"`
	// Router: the suite's router skill was among the events, counted
	// neither in TP nor FP.
	Router bool `json:"router,omitempty"`
}

// CellTelemetry is what the agent's transcript told.
type CellTelemetry struct {
	Skills     []RoutingEvent `json:"skills"`
	References []RoutingEvent `json:"references"`
	ToolCalls  *int           `json:"toolCalls,omitempty"`
	Turns      *int           `json:"turns,omitempty"`
	Tokens     *Tokens        `json:"tokens,omitempty"`
	Model      string         `json:"model,omitempty"`
	// AgentVersion is the agent CLI's version as its transcript reports
	// it, where it does.
	AgentVersion string `json:"agentVersion,omitempty"`
	// OpenedSkill: the agent opened one of the suite's skills.
	OpenedSkill bool `json:"openedSkill"`
	// ReportError says why the final answer is not the structured report
	// the agent was asked for (agent.report); "" when it is or none was.
	ReportError string `json:"reportError,omitempty"`
}

// CellCost are a cell's cost measurements; they never gate unless a rule
// says so.
type CellCost struct {
	AgentSeconds float64 `json:"agentSeconds"`
	TotalSeconds float64 `json:"totalSeconds"`
	ChangedFiles int     `json:"changedFiles"`
	LinesAdded   int     `json:"linesAdded"`
	LinesDeleted int     `json:"linesDeleted"`
	// SkillBytes are the complete file bytes of the skills the arm installs.
	SkillBytes  int64    `json:"skillBytes"`
	AnswerChars int      `json:"answerChars"`
	USD         *float64 `json:"usd,omitempty"`
}

// Outcomes of a pairwise judgement, for the candidate arm.
const (
	PairwiseWin  = "WIN"
	PairwiseTie  = "TIE"
	PairwiseLoss = "LOSS"
)

// PairwiseResult is one blind pairwise judgement: for one case and trial,
// the candidate arm's outcome against the baseline arm's, shown to the
// judge as unlabelled A and B. The efficacy and judgeAgreement rules read
// these.
type PairwiseResult struct {
	Case      string `json:"case"`
	Trial     int    `json:"trial"`
	Candidate string `json:"candidate"`
	Baseline  string `json:"baseline"`
	// Outcome is WIN, TIE (a non-win) or LOSS for the candidate.
	Outcome string `json:"outcome"`
	// Orders, when the judge swaps, holds the candidate's outcome in each
	// presentation order (candidate shown as A, then as B); the pair agrees
	// when both are the same. Empty without swapping.
	Orders []string `json:"orders,omitempty"`
	// First is the candidate's position (A or B) in the first order shown,
	// random but fixed by the plan's seed.
	First string `json:"first,omitempty"`
	// Error says why a judgement was INVALID.
	Error string `json:"error,omitempty"`
}

// PairwiseInvalid is the outcome of a pair whose judge reply could not be
// read; the efficacy rule counts it as a non-win, like a tie.
const PairwiseInvalid = "INVALID"
