package verdict

import (
	"github.com/opencontainers/go-digest"
	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// Metric is a scalar with its sample count; metrics with no applicable
// sample are omitted, never 0 or 1.
type Metric struct {
	Value   float64 `json:"value"`
	Samples int     `json:"samples"`
	// StdErr and CI95 (Wilson) are given for rates.
	StdErr *float64    `json:"stderr,omitempty"`
	CI95   *[2]float64 `json:"ci95,omitempty"`
}

// Verdicts and their exit codes.
const (
	VerdictPass       = "PASS"
	VerdictFail       = "FAIL"
	VerdictIncomplete = "INCOMPLETE"
	// VerdictCalibration: the calibration checks failed; nothing else ran.
	VerdictCalibration = "CALIBRATION-FAILED"
)

// ExitCode is the process exit code of a verdict.
func ExitCode(verdict string) int {
	switch verdict {
	case VerdictPass:
		return 0
	case VerdictFail:
		return 1
	case VerdictCalibration:
		return 3
	default:
		return 2
	}
}

// RuleOutcome is one policy rule evaluated.
type RuleOutcome struct {
	// Rule is the policy field name, such as "regression".
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	Met      bool   `json:"met"`
	// Reasons are stable strings such as "REGRESSION adds-entry"; empty
	// when met.
	Reasons []string `json:"reasons"`
	// Detail explains the figures, for people.
	Detail string `json:"detail"`
	// Flags lists items for human review that do not fail the rule (an
	// efficacy loss, sizeComparable=false, ...).
	Flags []string `json:"flags,omitempty"`
	// Warnings are raised by a rule that is met but only narrowly, such as
	// a marginal pass@k delta; they join the verdict's warnings.
	Warnings []string `json:"warnings,omitempty"`
	// Findings say each reason as a sentence, with the cells behind it.
	Findings []Finding `json:"findings,omitempty"`
	// NotMeasured says why the rule could not be evaluated on this run's
	// results (an arm with no valid cell: filtered out, interrupted, all
	// invalid); such a rule is neither met nor failed, and keeps the
	// verdict INCOMPLETE.
	NotMeasured string `json:"notMeasured,omitempty"`
	// Inference is the paired, case-clustered comparison of the arms the
	// rule compares, beside its own figures; it never changes Met.
	Inference *Inference `json:"inference,omitempty"`
}

// Finding is one reason of a rule, said for people, with the cells that
// made it: the failing trials, the violations, the invalid cells.
type Finding struct {
	// Reason is the stable code, as in the rule's Reasons.
	Reason string `json:"reason"`
	// Text says it as a sentence with its figures.
	Text string `json:"text"`
	// Cells are the cells behind it, by ID; none for an aggregate that no
	// cell alone explains.
	Cells []string `json:"cells,omitempty"`
}

// Verdict is the gate's decision with its reasons.
type Verdict struct {
	Verdict string `json:"verdict"`
	// Reasons of failed fail-severity rules, and of incompleteness, then
	// those listed in NotFailing.
	Reasons []string `json:"reasons"`
	// NotFailing are the reasons that fail nothing: a warn-severity rule
	// that reports among the reasons (uncovered: gstack's policy reports
	// an uncovered case, never drops it, and fails nothing for it), last.
	NotFailing []string `json:"notFailing,omitempty"`
	// Warnings of the other failed warn-severity rules.
	Warnings []string      `json:"warnings"`
	Rules    []RuleOutcome `json:"rules"`
	ExitCode int           `json:"exitCode"`
	// Resumable: the verdict is INCOMPLETE and a rerun into the same run
	// folder can finish it (what is missing or invalid runs again); false
	// when what keeps it incomplete is stored for good, such as timeouts a
	// policy counts as incomplete, which a rerun reuses.
	Resumable bool `json:"resumable"`
	// Adequacy is how a mutate run's suite told the skills from their
	// mutants; absent in a run without mutants.
	Adequacy *Adequacy `json:"adequacy,omitempty"`
	// NoiseFloor is what the run's replicate arms measured; absent
	// without one.
	NoiseFloor *NoiseFloor `json:"noiseFloor,omitempty"`
}

// Report is everything a run's reports show: the run's identity, metrics
// per arm, every case's trial outcomes per arm, and the verdict. It is a
// pure function of a plan and its CellResults (BuildReport), and every
// report file is rendered from it alone.
type Report struct {
	Suite string        `json:"suite"`
	Plan  digest.Digest `json:"plan"`
	// Root is the run folder's root digest (store.Root), when the report is
	// read from one: verdict.json and the terminal show it, report.json
	// not, so two folders of the same results still give equal reports.
	Root digest.Digest `json:"-"`
	// Harness is the version of skillgate that built the report.
	Harness string `json:"harness"`
	// CaseSet digests the sorted case IDs with their case digests: two
	// reports with equal case sets ran the same cases, whatever their
	// order or other fields.
	CaseSet digest.Digest `json:"caseSet"`
	// Agent is the agent as configured; Observed as the rollouts saw it.
	Agent    AgentIdentity    `json:"agent"`
	Observed ObservedIdentity `json:"observed"`
	// Judge is the judge's identity when the suite has one.
	Judge *JudgeIdentity `json:"judge,omitempty"`
	// StandIn, when set, says that the agent or its model is a scripted
	// stand-in, not a real model; every report shows it.
	StandIn string `json:"standIn,omitempty"`
	Policy  string `json:"policy"`
	Trials  int    `json:"trials"`
	// Formats are the other systems whose files the cases come from (the
	// plan's Formats); reports add each one's own output files.
	Formats []string `json:"formats,omitempty"`
	// Arms in authored order.
	Arms []ArmReport `json:"arms"`
	// Cases in authored order.
	Cases []CaseReport `json:"cases"`
	// Pairwise are the judge's pairwise judgements, when it made any.
	Pairwise []grade.PairwiseResult `json:"pairwise,omitempty"`
	// Reruns are the same-tree reruns of red panels (policy rerunRed): the
	// first outcomes stay in Cases; a rerun that passed made its case FLAKY.
	Reruns []RerunReport `json:"reruns,omitempty"`
	// Calibration is the outcome of the calibration checks when they ran.
	Calibration *Calibration `json:"calibration,omitempty"`
	// Adjudication lists the disputed rubric cells, when the suite has a
	// judge.
	Adjudication *grade.AdjudicationReport `json:"adjudication,omitempty"`
	Verdict      Verdict                   `json:"verdict"`
	// Sequential is what sequential stopping decided, when the policy
	// asks for it: why each comparison stopped and the cells not needed.
	Sequential *Sequential `json:"sequential,omitempty"`
	// ReuseSentinels is run --reuse's drift check by outcome, when the
	// run folder took rollouts (reuse-sentinels.json); its cells count in
	// no metric.
	ReuseSentinels *ReuseSentinels `json:"reuseSentinels,omitempty"`
	// Portability is the verdict on each agent of a suite on several.
	Portability *Portability `json:"portability,omitempty"`
}

// AgentIdentity names the agent of a run as configured.
type AgentIdentity struct {
	Kind     string `json:"kind"`
	Image    string `json:"image"`
	Model    string `json:"model,omitempty"`
	Provider string `json:"provider"`
	// Host is the provider's host (its upstream URL's), when one is set.
	Host   string        `json:"host,omitempty"`
	Digest digest.Digest `json:"digest"`
	// Prices are the agent's prices when the suite gives them, which
	// weigh its tokens in reports that price them.
	Prices *suite.Prices `json:"prices,omitempty"`
}

// ObservedIdentity is who answered, as the stored rollouts recorded it:
// distinct values, sorted, over the rollouts that count (invalid ones do
// not). More than one value in a list means the rollouts were mixed.
type ObservedIdentity struct {
	// Rollouts is how many rollouts the figures come from.
	Rollouts int `json:"rollouts"`
	// Models answered, from the gateway's record and the transcripts.
	Models []string `json:"models"`
	// AgentImages are the agent image IDs the cells ran on.
	AgentImages []string `json:"agentImages"`
	// AgentVersions are the agent CLI versions the agent images were
	// labelled with (dev.skillgate.agent-version); CLIVersions those the
	// transcripts report.
	AgentVersions []string `json:"agentVersions"`
	CLIVersions   []string `json:"cliVersions"`
	// Harness are the skillgate versions that ran the rollouts.
	Harness []string `json:"harness"`
	// Git lists the suite's git revisions the rollouts ran at (none when
	// the suite is in no git repository); GitMixed says they were more
	// than one, or some rollouts ran outside a repository.
	Git      []plan.GitRevision `json:"git"`
	GitMixed bool               `json:"gitMixed"`
}

// RolloutRecord is what a report's identity reads from one plan cell's
// stored rollout.
type RolloutRecord struct {
	Cell   string
	Arm    string
	Status string
	Inputs plan.RolloutInputs
	// Models answered; CLIVersion as the transcript reports it.
	Models     []string
	CLIVersion string
	// InputsChanged names the skill or fixture files that changed while
	// the rollout's invocation ran, which made it invalid.
	InputsChanged []string
}

// JudgeIdentity names the judge of a run.
type JudgeIdentity struct {
	Provider string `json:"provider"`
	Model    string `json:"model,omitempty"`
	// Host is the judge's provider host, when it has an upstream URL.
	Host   string        `json:"host,omitempty"`
	Mode   string        `json:"mode"`
	Digest digest.Digest `json:"digest"`
}

// ArmReport is one arm's metrics. Metrics follow the SkillOpt report
// contract: every scalar has its sample count, and a metric with no
// applicable sample is absent.
type ArmReport struct {
	Name   string   `json:"name"`
	Skills []string `json:"skills"`
	// Installed are the arm's skills by revision.
	Installed  []plan.InstalledSkill `json:"installed"`
	Activation string                `json:"activation,omitempty"`
	// SkillBytes: complete file bytes of the installed skills; 0 only for a
	// genuine no-skill arm.
	SkillBytes int64          `json:"skillBytes"`
	Cells      int            `json:"cells"`
	Statuses   map[string]int `json:"statuses"`
	// Metrics are quality metrics: taskSuccess, invalidRun, per split
	// (validUnseen, transfer, adversarial, frozen, train, validation, ...),
	// per kind (composition, safety, artifact, noChange), per tag
	// (hallucination, markdownPreservation, verification), fixture,
	// prohibitedOutcome, skillPrecision, skillRecall, referencePrecision,
	// referenceRecall, openedSkill, and passAtK.<split>.
	Metrics map[string]Metric `json:"metrics"`
	// Cost metrics (means per cell): agentSeconds, totalSeconds, toolCalls,
	// turns, tokensInput, tokensOutput, tokensCacheRead, tokensCacheWrite
	// (only over cells whose provider reported tokens), changedFiles,
	// linesAdded, linesDeleted, answerChars, usd; for judged cells,
	// judgeSeconds, judgeTokensInput and judgeTokensOutput.
	Cost map[string]Metric `json:"cost"`
	// FilesLoaded counts reads of each skill file (NAME/PATH) over the arm.
	FilesLoaded map[string]int `json:"filesLoaded"`
	// Evidence is the weakest routing evidence seen in the arm.
	Evidence string `json:"evidence"`
	// Observed is who answered in the arm's rollouts.
	Observed ObservedIdentity `json:"observed"`
}

// CaseReport is one case's outcomes, per arm, per trial.
type CaseReport struct {
	ID string `json:"id"`
	// Digest covers all that decides the case's rollouts, grades and
	// metrics (see CaseDigest).
	Digest      digest.Digest `json:"digest"`
	Description string        `json:"description,omitempty"`
	Kind        string        `json:"kind"`
	Split       string        `json:"split"`
	Safety      bool          `json:"safety"`
	Weight      float64       `json:"weight"`
	// Trials by arm name, in trial order.
	Trials map[string][]TrialOutcome `json:"trials"`
}

// TrialOutcome is one cell in the case × arm grid.
type TrialOutcome struct {
	Cell    string        `json:"cell"`
	Trial   int           `json:"trial"`
	Status  string        `json:"status"`
	Passed  bool          `json:"passed"`
	Score   float64       `json:"score"`
	Rollout digest.Digest `json:"rollout"`
	// Failed names the checks that failed.
	Failed []string `json:"failed,omitempty"`
	// USD is the cell's cost where its prices and tokens are known, and
	// Model the model that answered it.
	USD   *float64 `json:"usd,omitempty"`
	Model string   `json:"model,omitempty"`
}

// Calibration checks: each asks the agent something only a correctly set
// up cell can answer.
const (
	// CalibrationSkill: the agent quotes a line only its arm's copy of a
	// skill holds.
	CalibrationSkill = "skill"
	// CalibrationNone: the agent of a no-skill arm says it has no skill.
	CalibrationNone = "none"
	// CalibrationShell: the agent runs a shell command and reports its
	// output.
	CalibrationShell = "shell"
)

// Calibration is the outcome of the calibration checks, in verdict.json's
// shape (gstack's calibration: {skill, none, shell}): each is true when
// every check of its kind passed, false when one failed, and null when no
// check of that kind applied (no arm installs skills, no arm lacks them).
type Calibration struct {
	Skill *bool `json:"skill"`
	None  *bool `json:"none"`
	Shell *bool `json:"shell"`
	// Checks are every check, by arm in authored order, then kind.
	Checks []CalibrationCheck `json:"checks"`
	// Ran and Reused count the calibration cells started now and those
	// whose stored rollouts were reused; they are not part of the record.
	Ran    int `json:"-"`
	Reused int `json:"-"`
	// SpentUSD is the model spend of the calibration cells run now.
	SpentUSD float64 `json:"-"`
}

// CalibrationCheck is one calibration cell and its outcome.
type CalibrationCheck struct {
	// Agent names the check's agent in a plan on several agents.
	Agent string `json:"agent,omitempty"`
	Arm   string `json:"arm"`
	// Check is "skill", "none" or "shell".
	Check  string `json:"check"`
	Passed bool   `json:"passed"`
	// Detail says what was asked and, when it failed, why.
	Detail string `json:"detail"`
	// Answer is the agent's final answer.
	Answer string `json:"answer"`
	// Cell names the calibration cell; Rollout is its key in the store.
	Cell    string        `json:"cell"`
	Rollout digest.Digest `json:"rollout"`
	Status  string        `json:"status"`
}

// Passed reports whether every calibration check passed.
func (c *Calibration) Passed() bool {
	for _, ch := range c.Checks {
		if !ch.Passed {
			return false
		}
	}
	return true
}

// Reasons are the failed checks as stable verdict reasons, such as
// "CALIBRATION skill after" ("CALIBRATION skill after (agent codex)" in a
// plan on several agents), in check order.
func (c *Calibration) Reasons() []string {
	out := []string{}
	for _, ch := range c.Checks {
		if ch.Passed {
			continue
		}
		r := "CALIBRATION " + ch.Check + " " + ch.Arm
		if ch.Agent != "" {
			r += " (agent " + ch.Agent + ")"
		}
		out = append(out, r)
	}
	return out
}

// Tally sets Skill, None and Shell from the checks: each true when every
// check of its kind passed, false when one failed, nil when there is none.
func (c *Calibration) Tally() {
	c.Skill, c.None, c.Shell = nil, nil, nil
	for _, ch := range c.Checks {
		var kind **bool
		switch ch.Check {
		case CalibrationSkill:
			kind = &c.Skill
		case CalibrationNone:
			kind = &c.None
		default:
			kind = &c.Shell
		}
		if *kind == nil {
			*kind = new(bool)
			**kind = true
		}
		**kind = **kind && ch.Passed
	}
}

// CalibrationVerdict is the verdict of a run stopped by failed calibration
// checks: CALIBRATION-FAILED, exit 3, one reason per failed check.
func CalibrationVerdict(c *Calibration) Verdict {
	return Verdict{Verdict: VerdictCalibration, Reasons: c.Reasons(), Warnings: []string{}, Rules: []RuleOutcome{},
		ExitCode: ExitCode(VerdictCalibration)}
}
