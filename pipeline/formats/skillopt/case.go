package skillopt

// EvalCase is one line of an exported data/*.jsonl file: SkillOpt's case,
// its fields in the order SkillOpt's schema declares them, which is the
// order it serializes (and digests) them in.
type EvalCase struct {
	ID                  string      `json:"id"`
	Title               string      `json:"title"`
	Skill               string      `json:"skill"`
	Kind                string      `json:"kind"`
	Split               string      `json:"split"`
	Prompt              string      `json:"prompt"`
	Fixture             *string     `json:"fixture,omitempty"`
	ExpectedSkills      []string    `json:"expectedSkills"`
	ForbiddenSkills     []string    `json:"forbiddenSkills"`
	RequiredReferences  []string    `json:"requiredReferences"`
	ForbiddenReferences []string    `json:"forbiddenReferences"`
	Assertions          []Assertion `json:"assertions"`
	Rubric              []string    `json:"rubric"`
	OracleStrength      string      `json:"oracleStrength"`
	SourceIDs           []string    `json:"sourceIds"`
	EvidenceStatus      string      `json:"evidenceStatus"`
	Tags                []string    `json:"tags"`
	Rationale           string      `json:"rationale"`
}

// Assertion is one deterministic assertion of a case. Which fields apply
// depends on Kind; marshalling writes each kind's fields in SkillOpt's
// order.
type Assertion struct {
	Kind             string   `json:"kind"`
	Value            *string  `json:"value,omitempty"`
	CaseSensitive    *bool    `json:"caseSensitive,omitempty"`
	Flags            *string  `json:"flags,omitempty"`
	Command          []string `json:"command,omitempty"`
	ExpectedExitCode *int     `json:"expectedExitCode,omitempty"`
	Stdout           *string  `json:"stdout,omitempty"`
	Stderr           *string  `json:"stderr,omitempty"`
	TimeoutMs        *int     `json:"timeoutMs,omitempty"`
}

// Assertion kinds, as SkillOpt names them.
const (
	KindContains       = "contains"
	KindNotContains    = "not-contains"
	KindRegex          = "regex"
	KindFileExists     = "file-exists"
	KindFileNotExists  = "file-not-exists"
	KindFileUnchanged  = "file-unchanged"
	KindFileChanged    = "file-changed"
	KindCommand        = "command"
	defaultRegexFlags  = "i"
	defaultTimeoutMs   = 120000
	defaultOracle      = "routing-smoke"
	defaultEvidence    = "unresolved"
	defaultExitCode    = 0
	defaultInsensitive = false
)

// fillDefaults gives absent fields SkillOpt's defaults, as its parser does
// before the exporter serializes a case. They are SkillOpt's, not
// skillgate's: part of how it digests a case, and the same as #EvalCase's
// in skillgate.dev/schema/formats/skillopt, which say what they mean.
func (c *EvalCase) fillDefaults() {
	for _, l := range []*[]string{&c.ExpectedSkills, &c.ForbiddenSkills, &c.RequiredReferences, &c.ForbiddenReferences, &c.Rubric, &c.SourceIDs} {
		if *l == nil {
			*l = []string{}
		}
	}
	if c.OracleStrength == "" {
		c.OracleStrength = defaultOracle
	}
	if c.EvidenceStatus == "" {
		c.EvidenceStatus = defaultEvidence
	}
	for i := range c.Assertions {
		a := &c.Assertions[i]
		switch a.Kind {
		case KindContains, KindNotContains:
			if a.CaseSensitive == nil {
				v := defaultInsensitive
				a.CaseSensitive = &v
			}
		case KindRegex:
			if a.Flags == nil {
				v := defaultRegexFlags
				a.Flags = &v
			}
		case KindCommand:
			if a.ExpectedExitCode == nil {
				v := defaultExitCode
				a.ExpectedExitCode = &v
			}
			if a.TimeoutMs == nil {
				v := defaultTimeoutMs
				a.TimeoutMs = &v
			}
		}
	}
}
