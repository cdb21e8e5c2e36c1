package report

// The results model of a benchmark-skill report (NAME.json): what its
// HTML page shows, as data.

// BenchmarkSkillResults is benchmark-skill's results model of one skill: the
// Efficacy verdict, the run's identity, each arm's cost and every case's
// paired trials, in authored order. It is a pure function of a report and
// its evidence; the HTML report renders it alone.
type BenchmarkSkillResults struct {
	Skill string `json:"skill"`
	// Efficacy is green when every case of the skill passes the efficacy
	// rule, red when one fails, incomplete while one is not yet judged.
	Efficacy string `json:"efficacy"`
	// Passed of Cases passed the efficacy rule; Rule is the rule's detail
	// as the verdict gives it, its thresholds included.
	Passed int               `json:"passed"`
	Rule   string            `json:"rule,omitempty"`
	Run    BenchmarkSkillRun `json:"run"`
	// Arms in authored order; Comparisons are the pairs the judge compared.
	Arms        []BenchmarkSkillArm        `json:"arms"`
	Comparisons []BenchmarkSkillComparison `json:"comparisons"`
	Footnote    string                     `json:"footnote"`
	Cases       []BenchmarkSkillCase       `json:"cases"`
}

// BenchmarkSkillRun is the run metadata at the top of the report.
type BenchmarkSkillRun struct {
	Suite    string `json:"suite"`
	Plan     string `json:"plan"`
	CaseSet  string `json:"caseSet"`
	Harness  string `json:"harness"`
	Agent    string `json:"agent"`
	Provider string `json:"provider"`
	Model    string `json:"model,omitempty"`
	// Judge is the judge's provider and model.
	Judge   string `json:"judge,omitempty"`
	Trials  int    `json:"trials"`
	Policy  string `json:"policy"`
	StandIn string `json:"standIn,omitempty"`
	// Verdict is the whole run's, over every skill it ran.
	Verdict string `json:"verdict"`
	// Prices are the agent's USD prices per million tokens that weigh the
	// cost table; absent, it shows raw tokens only.
	Prices *BenchmarkSkillPrices `json:"prices,omitempty"`
}

// BenchmarkSkillPrices are USD per million tokens of each component.
type BenchmarkSkillPrices struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
}

// BenchmarkSkillArm is one row of the cost table: an arm's sums over the
// skill's cells.
type BenchmarkSkillArm struct {
	Name string `json:"name"`
	// Cells are the arm's cells of the skill's cases that ran.
	Cells int `json:"cells"`
	// Turns are the tool-call rounds of the cells' transcripts, one per
	// tool call.
	Turns *int `json:"turns,omitempty"`
	// Tokens are the raw tokens of the TokenCells whose provider reported
	// them (a cell that reported none is not counted as 0).
	Tokens     *BenchmarkSkillTokens `json:"tokens,omitempty"`
	TokenCells int                   `json:"tokenCells"`
	// CostEquivalentTokens count every token at its price relative to an
	// input token; ImputedCostUSD is their price.
	CostEquivalentTokens *float64 `json:"costEquivalentTokens,omitempty"`
	ImputedCostUSD       *float64 `json:"imputedCostUSD,omitempty"`
	// Ratio is the arm's cost-equivalent tokens over its comparison's
	// baseline's, on a candidate arm.
	Ratio *float64 `json:"ratio,omitempty"`
}

// BenchmarkSkillTokens are raw tokens across the four components.
type BenchmarkSkillTokens struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cacheRead"`
	CacheWrite int64 `json:"cacheWrite"`
}

// BenchmarkSkillComparison is one pairwise comparison and the rule that
// decides it.
type BenchmarkSkillComparison struct {
	Candidate string `json:"candidate"`
	Baseline  string `json:"baseline"`
	Rule      string `json:"rule"`
}

// BenchmarkSkillCase is one case: its paired trials collapsed to WIN, TIE
// or LOSS for the candidate, its hard assertions, and the rule's outcome.
type BenchmarkSkillCase struct {
	ID string `json:"id"`
	// Case is the case folder's name.
	Case        string `json:"case"`
	Description string `json:"description,omitempty"`
	// Efficacy is pass or fail as the efficacy rule decided, fail on a
	// failed hard assertion, and incomplete while a trial is not judged.
	Efficacy string `json:"efficacy"`
	Wins     int    `json:"wins"`
	Ties     int    `json:"ties"`
	Losses   int    `json:"losses"`
	// Review: a trial was lost, for a person to look at.
	Review bool `json:"review"`
	// HardAssertions count the candidate's trials by the hard-assertion
	// gate; absent when the case has none.
	HardAssertions *BenchmarkSkillHard   `json:"hardAssertions,omitempty"`
	Trials         []BenchmarkSkillTrial `json:"trials"`
}

// BenchmarkSkillHard counts a case's candidate trials by the hard-assertion
// gate.
type BenchmarkSkillHard struct {
	Passed int `json:"passed"`
	Failed int `json:"failed"`
}

// BenchmarkSkillTrial is one paired trial.
type BenchmarkSkillTrial struct {
	Trial int `json:"trial"`
	// Outcome is WIN, TIE, LOSS or INVALID for the candidate, or
	// NOT-JUDGED.
	Outcome string `json:"outcome"`
	// First is where the candidate was shown first: A or B.
	First string `json:"first,omitempty"`
	// HardAssertions is pass, fail or not-run on the candidate's cell;
	// absent when the case has none.
	HardAssertions string `json:"hardAssertions,omitempty"`
}
