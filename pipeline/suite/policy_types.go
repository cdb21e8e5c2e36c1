package suite

// RuleBase is shared by every policy rule.
type RuleBase struct {
	Enabled  bool   `json:"enabled"`
	Severity string `json:"severity"`
}

// Policy is a gate: one optional field per rule kind, as in schema/policy.cue.
type Policy struct {
	Name      string `json:"name,omitempty"`
	Calibrate bool   `json:"calibrate"`
	// TimeoutsIncomplete counts timed-out trials as incomplete.
	TimeoutsIncomplete bool `json:"timeoutsIncomplete"`
	// FixedTrials refuses a run folder's results of another trial count.
	FixedTrials bool `json:"fixedTrials"`
	// RerunRed is how many same-tree reruns a red panel gets.
	RerunRed       int             `json:"rerunRed"`
	Regression     *Regression     `json:"regression,omitempty"`
	Safety         *SafetyRule     `json:"safety,omitempty"`
	Uncovered      *Uncovered      `json:"uncovered,omitempty"`
	Worse          *Worse          `json:"worse,omitempty"`
	OpenedSkill    *OpenedSkill    `json:"openedSkill,omitempty"`
	Uplift         *Uplift         `json:"uplift,omitempty"`
	Portability    *Portability    `json:"portability,omitempty"`
	Retention      *Retention      `json:"retention,omitempty"`
	Routing        *RoutingGate    `json:"routing,omitempty"`
	Restraint      *Restraint      `json:"restraint,omitempty"`
	Forbidden      *Forbidden      `json:"forbidden,omitempty"`
	InvalidRun     *InvalidRun     `json:"invalidRun,omitempty"`
	NonRegression  *NonRegression  `json:"nonRegression,omitempty"`
	Improvement    *Improvement    `json:"improvement,omitempty"`
	RunKeys        *RunKeys        `json:"runKeys,omitempty"`
	SkillSize      *SkillSize      `json:"skillSize,omitempty"`
	Efficacy       *Efficacy       `json:"efficacy,omitempty"`
	PassAtK        *PassAtK        `json:"passAtK,omitempty"`
	JudgeAgreement *JudgeAgreement `json:"judgeAgreement,omitempty"`
	NoiseFloor     *NoiseFloor     `json:"noiseFloor,omitempty"`
	Significance   *Significance   `json:"significance,omitempty"`
	Adequacy       *Adequacy       `json:"adequacy,omitempty"`
	// Inference is the level and power every comparison is read at.
	Inference InferenceLevels `json:"inference"`
	// Reuse is how run --reuse checks what it takes for drift (schema
	// #Reuse); nil in a plan made before the schema gave it.
	Reuse *Reuse `json:"reuse,omitempty"`
	// Pairing is read by the paired gate, not by a run's verdict.
	Pairing *Pairing `json:"pairing,omitempty"`
	// Sequential, when set, runs the cells in rounds and stops each
	// comparison once decided.
	Sequential *Sequential `json:"sequential,omitempty"`
}

// Sequential is anytime-valid sequential stopping (schema #Sequential).
type Sequential struct {
	Alpha    float64 `json:"alpha"`
	Round    int     `json:"round"`
	Futility float64 `json:"futility"`
	Share    float64 `json:"share"`
}

// Pairing switches the paired gate's pairing conditions (schema #Pairing).
type Pairing struct {
	Benchmark   bool `json:"benchmark"`
	Phase       bool `json:"phase"`
	Target      bool `json:"target"`
	Companions  bool `json:"companions"`
	Provider    bool `json:"provider"`
	Model       bool `json:"model"`
	Adapter     bool `json:"adapter"`
	Judge       bool `json:"judge"`
	GitRevision bool `json:"gitRevision"`
	CaseSet     bool `json:"caseSet"`
	RunKeys     bool `json:"runKeys"`
	Metrics     bool `json:"metrics"`
}

// Regression is gstack's per-case before/after panel rule.
type Regression struct {
	RuleBase
	Before    string `json:"before"`
	After     string `json:"after"`
	MinPasses int    `json:"minPasses"`
}

// SafetyRule fails on any failed trial of a safety case in Arm.
type SafetyRule struct {
	RuleBase
	Arm string `json:"arm"`
}

// Uncovered reports cases every arm fails.
type Uncovered struct {
	RuleBase
	MinPasses int `json:"minPasses"`
}

// Worse compares overall pass rates in standard errors.
type Worse struct {
	RuleBase
	Before         string  `json:"before"`
	After          string  `json:"after"`
	StandardErrors float64 `json:"standardErrors"`
}

// OpenedSkill checks how often skill arms open a skill.
type OpenedSkill struct {
	RuleBase
	MinRate float64 `json:"minRate"`
}

// Uplift is the advisory forced-over-baseline gate.
type Uplift struct {
	RuleBase
	Treatment string   `json:"treatment"`
	Baseline  string   `json:"baseline"`
	MinPoints float64  `json:"minPoints"`
	Kinds     []string `json:"kinds"`
}

// Portability gates the uplift on every agent of a suite on several
// agents (schema #Portability).
type Portability struct {
	RuleBase
	RequireUpliftOnEvery bool    `json:"requireUpliftOnEvery"`
	MinPoints            float64 `json:"minPoints"`
}

// Retention is the advisory automatic-keeps-uplift gate.
type Retention struct {
	RuleBase
	Automatic string   `json:"automatic"`
	Forced    string   `json:"forced"`
	Baseline  string   `json:"baseline"`
	MinShare  float64  `json:"minShare"`
	Kinds     []string `json:"kinds"`
}

// RoutingGate bounds routing micro precision and recall.
type RoutingGate struct {
	RuleBase
	Arm          string  `json:"arm"`
	Level        string  `json:"level"`
	MinPrecision float64 `json:"minPrecision"`
	MinRecall    float64 `json:"minRecall"`
	// MinEvidence is the weakest evidence counted: reported, inferred or
	// observed.
	MinEvidence string `json:"minEvidence"`
}

// Restraint keeps no-change controls at or above the baseline.
type Restraint struct {
	RuleBase
	Arms     []string `json:"arms"`
	Baseline string   `json:"baseline"`
}

// Forbidden bounds violated negative expectations.
type Forbidden struct {
	RuleBase
	Arms []string `json:"arms"`
	Max  int      `json:"max"`
	// Actions, when set, are the checks whose failure is a forbidden
	// action, counted per cell with writes outside the allowed paths of a
	// case that is not a no-change control (chrisbanes/skills' count); nil,
	// every violated negative expectation counts.
	Actions *[]string `json:"actions,omitempty"`
}

// InvalidRun bounds invalid cells.
type InvalidRun struct {
	RuleBase
	Max float64 `json:"max"`
}

// NonRegression keeps metrics from falling below the baseline.
type NonRegression struct {
	RuleBase
	Baseline  string   `json:"baseline"`
	Candidate string   `json:"candidate"`
	Metrics   []string `json:"metrics"`
	// Required are the metrics the paired gate always compares.
	Required []string `json:"required"`
}

// Improvement requires a strict improvement on one metric.
type Improvement struct {
	RuleBase
	Baseline   string   `json:"baseline"`
	Candidate  string   `json:"candidate"`
	AllowEqual bool     `json:"allowEqual"`
	Metrics    []string `json:"metrics"`
}

// RunKeys requires a minimum of run keys per case.
type RunKeys struct {
	RuleBase
	Min int `json:"min"`
}

// SkillSize bounds the candidate skill's bytes against the baseline's.
type SkillSize struct {
	RuleBase
	Baseline    string  `json:"baseline"`
	Candidate   string  `json:"candidate"`
	MaxRatio    float64 `json:"maxRatio"`
	AllowLonger bool    `json:"allowLonger"`
}

// Efficacy is the pairwise wins/losses rule.
type Efficacy struct {
	RuleBase
	Candidate string `json:"candidate"`
	Baseline  string `json:"baseline"`
	MinWins   int    `json:"minWins"`
	MaxLosses int    `json:"maxLosses"`
}

// PassAtK is the weighted pass@k delta rule.
type PassAtK struct {
	RuleBase
	With      string  `json:"with"`
	Without   string  `json:"without"`
	Split     string  `json:"split"`
	K         int     `json:"k"`
	FailBelow float64 `json:"failBelow"`
	WarnBelow float64 `json:"warnBelow"`
	Decimals  int     `json:"decimals"`
}

// InferenceLevels is the level and power comparisons are read at (schema
// #InferenceLevels).
type InferenceLevels struct {
	Alpha float64 `json:"alpha"`
	Power float64 `json:"power"`
}

// Reuse is run --reuse's drift sentinels (schema #Reuse).
type Reuse struct {
	// Sentinels is how many reused cells per agent and model run again;
	// 0 is off.
	Sentinels int `json:"sentinels"`
	// Arms the sentinels are drawn from; empty: every arm.
	Arms []string `json:"arms"`
	// Alpha is the level a sentinel test refuses the reuse at.
	Alpha float64 `json:"alpha"`
}

// Significance gates on the paired inference of the rules that compare
// arms (schema #Significance).
type Significance struct {
	RuleBase
	Alpha    float64  `json:"alpha"`
	Interval bool     `json:"interval"`
	Rules    []string `json:"rules"`
}

// Adequacy requires a mutate run's kill rate (schema #Adequacy).
type Adequacy struct {
	RuleBase
	MinKillRate float64 `json:"minKillRate"`
}

// JudgeAgreement requires swapped-order judgements to agree.
type JudgeAgreement struct {
	RuleBase
	Min float64 `json:"min"`
}

// NoiseFloor bounds the noise a run measures on its replicate arms
// (schema #NoiseFloor).
type NoiseFloor struct {
	RuleBase
	MaxFlipRate    float64 `json:"maxFlipRate"`
	MaxVerdictFlip float64 `json:"maxVerdictFlip"`
}
