package suite

import (
	"fmt"
	"strconv"
	"strings"
)

// The types in this file mirror the CUE schema in schema/ for decoding an
// already validated, concrete suite. They carry no defaults or thresholds:
// every value comes from the schema or the suite.

// Skill is a skill folder under test.
type Skill struct {
	Path string `json:"path"`
	Name string `json:"name"`
}

// Arm is one condition compared by the suite.
type Arm struct {
	Description string   `json:"description,omitempty"`
	Skills      []string `json:"skills"`
	Activation  string   `json:"activation"`
	// Targets: the arm also installs each case's target skills.
	Targets bool `json:"targets,omitempty"`
	// ReplicateOf names the arm this one repeats with the same bytes, its
	// own cells and keys: the run measures its noise floor from the two.
	ReplicateOf string `json:"replicateOf,omitempty"`
}

// Turn is one message of a case's seed conversation.
type Turn struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Expectation lists what must and what must not be observed.
type Expectation struct {
	Required  []string `json:"required"`
	Forbidden []string `json:"forbidden"`
	// Allowed may be observed without counting against precision, nor
	// toward recall.
	Allowed []string `json:"allowed,omitempty"`
}

// Routing is what a case expects the agent to load.
type Routing struct {
	Skills     Expectation `json:"skills"`
	References Expectation `json:"references"`
}

// TextCheck checks a text: the final answer or its code blocks.
type TextCheck struct {
	Contains    *string `json:"contains,omitempty"`
	NotContains *string `json:"notContains,omitempty"`
	Matches     *string `json:"matches,omitempty"`
	NotMatches  *string `json:"notMatches,omitempty"`
}

// Assertion is one deterministic check; exactly one of File, Answer, Code,
// Run, Commands, Tool and Sequence is set.
type Assertion struct {
	Name string `json:"name,omitempty"`

	File      *string `json:"file,omitempty"`
	Exists    *bool   `json:"exists,omitempty"`
	Unchanged *bool   `json:"unchanged,omitempty"`
	TextCheck
	// Glob names the subject files by a pathlib pattern, Count their
	// number; Bullets and TaskGraph check a file's or each glob file's
	// Markdown (#Assertion).
	Glob      *string         `json:"glob,omitempty"`
	Count     *int            `json:"count,omitempty"`
	Bullets   *BulletCheck    `json:"bullets,omitempty"`
	TaskGraph *TaskGraphCheck `json:"taskGraph,omitempty"`

	Answer *TextCheck `json:"answer,omitempty"`
	Code   *TextCheck `json:"code,omitempty"`
	// Messages is "all" for an answer or code check over every assistant
	// message; "" or "last" for the final answer.
	Messages string `json:"messages,omitempty"`

	Run     *string `json:"run,omitempty"`
	Timeout string  `json:"timeout,omitempty"`

	// Shell runs a run: check, "" for sh; Environment names the suite
	// environment it runs in, "" for the cell's.
	Shell       string `json:"shell,omitempty"`
	Environment string `json:"environment,omitempty"`

	// Commands, Tool and Sequence are trajectory checks: over what the
	// agent did, read from its stored session (see #Assertion).
	Commands *CommandCheck `json:"commands,omitempty"`
	Tool     *ToolCheck    `json:"tool,omitempty"`
	Sequence []Step        `json:"sequence,omitempty"`
}

// CommandCheck checks the shell commands the agent ran (#CommandCheck).
type CommandCheck struct {
	Matches    *string `json:"matches,omitempty"`
	NotMatches *string `json:"notMatches,omitempty"`
	Unless     *string `json:"unless,omitempty"`
	None       bool    `json:"none,omitempty"`
	Succeeded  bool    `json:"succeeded,omitempty"`
}

// ArgsCheck filters tool calls by their input (as the report shows it).
type ArgsCheck struct {
	Matches    *string `json:"matches,omitempty"`
	NotMatches *string `json:"notMatches,omitempty"`
}

// ToolCheck checks the agent's calls of a tool (#ToolCheck); Name is an
// RE2 expression the whole tool name must match.
type ToolCheck struct {
	Name   string     `json:"name"`
	Args   *ArgsCheck `json:"args,omitempty"`
	Called bool       `json:"called"`
}

// Step is one step of a sequence check: a tool call or a command (#Step).
type Step struct {
	Tool    string     `json:"tool,omitempty"`
	Command string     `json:"command,omitempty"`
	Args    *ArgsCheck `json:"args,omitempty"`
}

// Case is one task given identically to every arm.
type Case struct {
	ID          string `json:"id"`
	Description string `json:"description,omitempty"`
	Prompt      string `json:"prompt"`
	Seed        []Turn `json:"seed,omitempty"`
	// Temperature and Effort override the agent's sampling controls.
	Temperature *float64    `json:"temperature,omitempty"`
	Effort      string      `json:"effort,omitempty"`
	Fixture     string      `json:"fixture,omitempty"`
	Overlay     string      `json:"overlay,omitempty"`
	Targets     []string    `json:"targets,omitempty"`
	Calibration bool        `json:"calibration,omitempty"`
	Replies     []string    `json:"replies,omitempty"`
	Split       string      `json:"split"`
	Kind        string      `json:"kind"`
	Tags        []string    `json:"tags"`
	Weight      float64     `json:"weight"`
	Safety      bool        `json:"safety"`
	Routing     Routing     `json:"routing"`
	Writes      *[]string   `json:"writes,omitempty"`
	Assert      []Assertion `json:"assert"`
	Rubric      []string    `json:"rubric"`
	// RubricPass is the fraction of criteria the rubric needs met.
	RubricPass float64 `json:"rubricPass"`

	// Reference is a right answer the case's run: checks must pass on
	// before a run (a folder over the fixture, or a patch file).
	Reference string `json:"reference,omitempty"`

	// Environment names the suite environment the case runs in; in a
	// plan, the one its cells run in after the suite's default applies.
	Environment string `json:"environment,omitempty"`
	// CaseDir is the case's own folder, seen by setup and checks only.
	CaseDir string `json:"caseDir,omitempty"`
	Setup   *Setup `json:"setup,omitempty"`

	// Sources are the files other than the suite's CUE files the case's
	// values come from (another system's files named under `formats`),
	// suite-relative; skillgate sets them, the schema has no such field.
	Sources []string `json:"sources,omitempty"`
}

// Prices are the suite author's USD prices.
type Prices struct {
	PerCall           *float64 `json:"perCall,omitempty"`
	InputPerMTok      *float64 `json:"inputPerMTok,omitempty"`
	OutputPerMTok     *float64 `json:"outputPerMTok,omitempty"`
	CacheReadPerMTok  *float64 `json:"cacheReadPerMTok,omitempty"`
	CacheWritePerMTok *float64 `json:"cacheWritePerMTok,omitempty"`
	// MaxOutputTokens is the model's output limit: under a spend cap it bounds
	// a model call whose request names no max_tokens.
	MaxOutputTokens *int64 `json:"maxOutputTokens,omitempty"`
}

// Agent is the coding agent run in every cell.
type Agent struct {
	Kind          string   `json:"kind"`
	Image         string   `json:"image"`
	Command       []string `json:"command"`
	Model         string   `json:"model,omitempty"`
	Provider      string   `json:"provider"`
	Script        *Script  `json:"script,omitempty"`
	Upstream      string   `json:"upstream,omitempty"`
	CredentialEnv string   `json:"credentialEnv,omitempty"`
	// Replay is the recorded run folder a replay provider serves.
	Replay string `json:"replay,omitempty"`
	// UpstreamEnv, UpstreamDefault, Auth and Headers: how the gateway
	// reaches the provider (see #Agent); none is in the rollout key.
	UpstreamEnv     string            `json:"upstreamEnv,omitempty"`
	UpstreamDefault string            `json:"upstreamDefault,omitempty"`
	Auth            string            `json:"auth,omitempty"`
	Headers         map[string]string `json:"headers,omitempty"`
	// Temperature and Effort are the sampling controls the gateway sets.
	Temperature  *float64          `json:"temperature,omitempty"`
	Effort       string            `json:"effort,omitempty"`
	SkillsDir    string            `json:"skillsDir"`
	User         string            `json:"user"`
	Env          map[string]string `json:"env"`
	ForcedPrompt string            `json:"forcedPrompt"`
	// Resume sends a case's next reply in the same session ({{prompt}},
	// {{session}}).
	Resume []string `json:"resume,omitempty"`
	// SessionArgs give the first turn of a case with replies its session's
	// ID ({{session}}).
	SessionArgs []string `json:"sessionArgs,omitempty"`
	// Report, when set, asks for a structured final answer declaring the
	// skills used; ReportArgs are the CLI's flags for it.
	Report     *Report  `json:"report,omitempty"`
	ReportArgs []string `json:"reportArgs,omitempty"`
	SeedPrompt string   `json:"seedPrompt"`
	StandIn    string   `json:"standIn,omitempty"`
	Prices     *Prices  `json:"prices,omitempty"`
}

// Report is the structured final answer an agent is asked for (schema
// #Report): Schema is the JSON Schema, Answer and Skills the fields that
// hold the final answer and the skills used.
type Report struct {
	Schema map[string]any `json:"schema"`
	Answer string         `json:"answer"`
	Skills string         `json:"skills"`
}

// Script is the scripted model's replies (schema #Script).
type Script struct {
	Model string       `json:"model"`
	Rules []ScriptRule `json:"rules"`
}

// ScriptRule is one scripted reply and when to give it.
type ScriptRule struct {
	When  *ScriptWhen   `json:"when,omitempty"`
	Reply []ScriptBlock `json:"reply"`
	Usage ScriptUsage   `json:"usage"`
}

// ScriptWhen are a rule's conditions; nil ones are not checked.
type ScriptWhen struct {
	Contains    *string `json:"contains,omitempty"`
	NotContains *string `json:"notContains,omitempty"`
	SkillListed *string `json:"skillListed,omitempty"`
	ToolResults *int    `json:"toolResults,omitempty"`
	// PromptMatches is a regular expression (RE2) the user's prompt matches.
	PromptMatches *string `json:"promptMatches,omitempty"`
}

// ScriptBlock is text or a tool call.
type ScriptBlock struct {
	Text  *string        `json:"text,omitempty"`
	Tool  string         `json:"tool,omitempty"`
	Input map[string]any `json:"input,omitempty"`
}

// ScriptUsage are the token counts a scripted reply reports.
type ScriptUsage struct {
	Input  int64 `json:"input"`
	Output int64 `json:"output"`
}

// Pair is one pairwise comparison of two arms.
type Pair struct {
	Candidate string `json:"candidate"`
	Baseline  string `json:"baseline"`
}

// Judge grades rubrics and pairwise comparisons.
type Judge struct {
	Provider      string   `json:"provider"`
	Model         string   `json:"model,omitempty"`
	Command       []string `json:"command,omitempty"`
	Script        *Script  `json:"script,omitempty"`
	Upstream      string   `json:"upstream,omitempty"`
	CredentialEnv string   `json:"credentialEnv,omitempty"`
	// UpstreamEnv, UpstreamDefault, Auth and Headers: how the judge
	// reaches its provider (see #Judge).
	UpstreamEnv     string            `json:"upstreamEnv,omitempty"`
	UpstreamDefault string            `json:"upstreamDefault,omitempty"`
	Auth            string            `json:"auth,omitempty"`
	Headers         map[string]string `json:"headers,omitempty"`
	Mode            string            `json:"mode"`
	Pairs           []Pair            `json:"pairs"`
	Swap            bool              `json:"swap"`
	Templates       JudgeTemplates    `json:"templates"`
	Prices          *Prices           `json:"prices,omitempty"`
	Adjudication    Adjudication      `json:"adjudication"`
	Packet          PacketCaps        `json:"packet"`
}

// PacketCaps bound a judge's packet, as #Bytes sizes (see #PacketCaps).
type PacketCaps struct {
	FileBytes   string `json:"fileBytes"`
	FilesBytes  string `json:"filesBytes"`
	DiffBytes   string `json:"diffBytes"`
	AnswerBytes string `json:"answerBytes"`
	DetailBytes string `json:"detailBytes"`
}

// Adjudication says whether and by whom disputed rubric cells are judged
// again (see #Adjudication).
type Adjudication struct {
	Enabled bool         `json:"enabled"`
	Cases   []string     `json:"cases"`
	Judge   *Adjudicator `json:"judge,omitempty"`
}

// Adjudicator is another judge for disputes; Template "" is the judge's
// rubric template.
type Adjudicator struct {
	Provider      string   `json:"provider"`
	Model         string   `json:"model,omitempty"`
	Command       []string `json:"command,omitempty"`
	Script        *Script  `json:"script,omitempty"`
	Upstream      string   `json:"upstream,omitempty"`
	CredentialEnv string   `json:"credentialEnv,omitempty"`
	Template      string   `json:"template,omitempty"`
	Prices        *Prices  `json:"prices,omitempty"`
}

// JudgeTemplates are the judge's instructions, with {{packet}}.
type JudgeTemplates struct {
	Rubric   string `json:"rubric"`
	Pairwise string `json:"pairwise"`
}

// Limits bound every cell. Sizes and durations are as written in CUE;
// ParseBytes and time.ParseDuration read them.
type Limits struct {
	Timeout     string        `json:"timeout"`
	Memory      string        `json:"memory"`
	CPUs        float64       `json:"cpus"`
	Pids        int64         `json:"pids"`
	Output      string        `json:"output"`
	Check       string        `json:"check"`
	Stall       string        `json:"stall"`
	Retry       Retry         `json:"retry"`
	CheckMemory string        `json:"checkMemory"`
	CheckPids   int64         `json:"checkPids"`
	Prompt      string        `json:"prompt"`
	PromptArg   string        `json:"promptArg"`
	Collect     CollectLimits `json:"collect"`

	// CheckOutput and Setup enter no digest of the limits (see #Limits);
	// a plan leaves them out of its limits digest.
	CheckOutput string `json:"checkOutput,omitempty"`
	Setup       string `json:"setup,omitempty"`
	// Gateway enters no digest of the limits either; nil in a plan of an
	// older skillgate.
	Gateway *GatewayLimits `json:"gateway,omitempty"`
	// ProviderFaults enters no digest either; 0 in a plan of an older
	// skillgate, which then never stops for faults in a row.
	ProviderFaults int `json:"providerFaults,omitempty"`
}

// GatewayLimits bound what one cell can make the host hold through the
// model gateway (#Limits.gateway).
type GatewayLimits struct {
	Requests int    `json:"requests"`
	Body     string `json:"body"`
	Bytes    string `json:"bytes"`
	RunBytes string `json:"runBytes"`
}

// CollectLimits bound what is read back of a cell's workspace (#Limits.collect).
type CollectLimits struct {
	Entries    int    `json:"entries"`
	FileBytes  string `json:"fileBytes"`
	TotalBytes string `json:"totalBytes"`
	Timeout    string `json:"timeout"`
}

// Suite is a loaded, validated suite.
type Suite struct {
	Name        string           `json:"name"`
	Description string           `json:"description,omitempty"`
	Skills      map[string]Skill `json:"skills"`
	Agent       Agent            `json:"agent"`
	// Agents are the agents of a suite on several (schema agentSet), by
	// name; AgentOrder lists them as written. Agent is then the first.
	Agents map[string]Agent `json:"agentSet,omitempty"`
	Router string           `json:"router,omitempty"`
	Judge  *Judge           `json:"judge,omitempty"`
	Trials int              `json:"trials"`
	Arms   map[string]Arm   `json:"arms"`
	Cases  map[string]Case  `json:"cases"`
	Limits Limits           `json:"limits"`
	Policy Policy           `json:"policy"`
	// CalibrationSkipped: UseStandIn turned the policy's calibration off
	// (never part of the plan).
	CalibrationSkipped bool  `json:"-"`
	Seed               int64 `json:"seed"`
	Audit              Audit `json:"audit"`
	// Mutants is what `skillgate mutate` derives and runs (schema
	// #Mutants); it never enters a plan of `run`.
	Mutants   Mutants  `json:"mutants"`
	RedactEnv []string `json:"redactEnv"`

	// Environments by name, and the one cases run in by default ("" for
	// the agent's own image).
	Environments map[string]Environment `json:"environments"`
	Environment  string                 `json:"environment,omitempty"`

	// Formats are the fields of the suite's `formats` it sets: the other
	// systems whose files its cases come from, sorted.
	Formats []string `json:"-"`

	// Dir is the suite folder, absolute.
	Dir string `json:"-"`
	// Root is the repository holding the suite, absolute: the nearest
	// folder above Dir with a .git, else Dir.
	Root string `json:"-"`
	// CaseOrder and ArmOrder list IDs in authored order.
	CaseOrder  []string `json:"-"`
	ArmOrder   []string `json:"-"`
	AgentOrder []string `json:"-"`
}

// Environment is where cells, their setup and their run: checks run
// (schema #Environment): at most one of Debian, Dockerfile and Image.
type Environment struct {
	Description string            `json:"description,omitempty"`
	Debian      *Debian           `json:"debian,omitempty"`
	Dockerfile  *Dockerfile       `json:"dockerfile,omitempty"`
	Image       *ImageRef         `json:"image,omitempty"`
	Env         map[string]string `json:"env"`
}

// Debian is skillgate's Debian userland with extra packages (#Debian).
type Debian struct {
	Release  string   `json:"release"`
	Packages []string `json:"packages"`
}

// Dockerfile is a repository folder with a Dockerfile (#Dockerfile); From
// names the environment whose image is its BASE argument.
type Dockerfile struct {
	Path string `json:"path"`
	From string `json:"from,omitempty"`
}

// ImageRef is a local image by reference and digest (#ImageRef).
type ImageRef struct {
	Ref    string `json:"ref"`
	Digest string `json:"digest"`
}

// Setup prepares a case's workspace before its agent starts (#Setup);
// Shell "" is sh, Timeout "" is limits.setup.
type Setup struct {
	Run     string `json:"run"`
	Shell   string `json:"shell,omitempty"`
	Timeout string `json:"timeout,omitempty"`
}

// Audit is what the audit queue samples.
type Audit struct {
	// SamplePercent of the valid cells no other reason queues are drawn.
	SamplePercent int `json:"samplePercent"`
}

// ParseBytes reads a #Bytes size such as "512m" (k, m, g are powers of 1024).
func ParseBytes(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "k"):
		mult = 1 << 10
	case strings.HasSuffix(s, "m"):
		mult = 1 << 20
	case strings.HasSuffix(s, "g"):
		mult = 1 << 30
	}
	n, err := strconv.ParseInt(strings.TrimRight(s, "kmg"), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("parse size %q: want digits with an optional k, m or g", s)
	}
	return n * mult, nil
}
