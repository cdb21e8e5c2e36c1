package cell

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/runner/backend"
	"github.com/skillgate/skillgate/runner/images"

	"github.com/skillgate/skillgate/runner/agent"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"

	"github.com/opencontainers/go-digest"
)

// Where a cell finds its prompt and seed conversation: root-owned files it can read and
// never change. A session of several turns (a case with replies) is run by SessionFile,
// each reply that is too large for the command line read from its own file; a report's
// JSON Schema is in ReportSchemaFile.
const (
	PromptFile       = "/skillgate-input/prompt.txt"
	SeedFile         = "/skillgate-input/seed.json"
	SessionFile      = "/skillgate-input/session.sh"
	ReportSchemaFile = "/skillgate-input/report-schema.json"
)

// replyFile is where the reply of turn n (from 1: the first reply) is, when it is too
// large for the command line.
func replyFile(n int) string { return fmt.Sprintf("/skillgate-input/reply-%d.txt", n) }

// cellInput is what a cell's agent is asked: the prompt, the seed conversation as JSON,
// the user's replies, and whether they are small enough for its environment and command
// line.
type cellInput struct {
	prompt  string
	seed    []byte
	replies []string
	session string // the session's ID, for a case with replies
	inline  bool
	max     int64 // limits.promptArg
}

func newCellInput(p *plan.Plan, pc plan.PlanCase, arm plan.PlanArm) (cellInput, error) {
	in := cellInput{prompt: plan.Prompt(p, pc, arm), replies: pc.Replies}
	if len(pc.Seed) > 0 {
		in.seed, _ = json.Marshal(pc.Seed)
	}
	max, err := suite.ParseBytes(p.Limits.PromptArg)
	if err != nil {
		return in, fmt.Errorf("read limits.promptArg: %w", err)
	}
	in.max = max
	in.inline = int64(len(in.prompt)) <= max && int64(len(in.seed)) <= max
	return in, nil
}

// files are the prompt and seed files of the cell.
func (in cellInput) files() []backend.SpecFile {
	fs := []backend.SpecFile{{Path: PromptFile, Mode: 0o444, Data: []byte(in.prompt)}}
	if in.seed != nil {
		fs = append(fs, backend.SpecFile{Path: SeedFile, Mode: 0o444, Data: in.seed})
	}
	return fs
}

// cellEnv is the agent's whole environment: nothing of the host's. The environment's env
// comes first, so the agent's own env wins over it.
func cellEnv(p *plan.Plan, pc plan.PlanCase, arm plan.PlanArm, in cellInput) []string {
	env := images.EnvironmentEnv(p, pc.Environment)
	env = append(env, "SKILLGATE_PROMPT_FILE="+PromptFile)
	if in.inline {
		env = append(env, "SKILLGATE_PROMPT="+in.prompt)
	}
	if in.seed != nil {
		env = append(env, "SKILLGATE_SEED_FILE="+SeedFile)
		if in.inline {
			env = append(env, "SKILLGATE_SEED="+string(in.seed))
		}
	}
	if len(arm.Skills) > 0 {
		env = append(env, "SKILLGATE_SKILLS_DIR="+path.Join(backend.Workspace, p.Agent.SkillsDir))
	}
	for _, k := range slices.Sorted(maps.Keys(p.Agent.Env)) {
		// "" leaves out a variable a preset sets (see schema/agents).
		if v := p.Agent.Env[k]; v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// PromptArg is the argument that stands for the prompt in an agent's command.
const PromptArg = "{{prompt}}"

// The arguments of agent.reportArgs that stand for the report's JSON Schema: as JSON
// text, and as the path of a file holding it.
const (
	SchemaArg     = "{{schema}}"
	SchemaFileArg = "{{schemaFile}}"
)

// cellCommand is what the cell runs: the agent's command with the prompt in it, and the
// report's flags when a report is asked for. A prompt too large for the command line
// goes to the agent's standard input instead, when its kind's CLI reads it there (Claude
// Code when no prompt argument is given, Codex when the argument is "-"). It returns the
// standard input to give, or nil, and the files the command reads.
//
// A case with replies is a session of several turns: the cell runs a script
// (SessionFile) that starts the command, and after it ends sends each reply with the
// agent's resume command (the first turn given agent.sessionArgs, {{session}} in both
// the cell's SessionID), in the same container, through the same gateway, stopping at
// the first turn that fails, with its exit code. Between turns it writes
// agent.TurnMarker on a line of its own to stdout (after a newline, so a last line
// without one stays whole), so a plain transcript tells the turns apart.
func cellCommand(p *plan.Plan, in cellInput) ([]string, []byte, []backend.SpecFile, error) {
	var files []backend.SpecFile
	var extra []string
	if r := p.Agent.Report; r != nil {
		schema, err := json.Marshal(r.Schema)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("build the agent's command: encode agent.report.schema: %w", err)
		}
		files = append(files, backend.SpecFile{Path: ReportSchemaFile, Mode: 0o444, Data: schema})
		rep := strings.NewReplacer(SchemaArg, string(schema), SchemaFileArg, ReportSchemaFile)
		for _, a := range p.Agent.ReportArgs {
			extra = append(extra, rep.Replace(a))
		}
	}
	first, stdin, err := turnCommand(p, p.Agent.Command, in.prompt, in.inline)
	if err != nil {
		return nil, nil, nil, err
	}
	first = append(first, extra...)
	if len(in.replies) == 0 {
		return first, stdin, files, nil
	}
	session := strings.NewReplacer(suite.SessionArg, in.session)
	for _, a := range p.Agent.SessionArgs {
		first = append(first, session.Replace(a))
	}
	var b strings.Builder
	b.WriteString("# The session of a case with replies: each turn starts when the one before it ends.\n")
	fmt.Fprintf(&b, "%s || exit $?\n", shellCommand(first))
	for i, reply := range in.replies {
		inline := int64(len(reply)) <= in.max
		cmd, replyIn, err := turnCommand(p, p.Agent.Resume, reply, inline)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("reply %d: %w", i+1, err)
		}
		for j, a := range cmd {
			cmd[j] = session.Replace(a)
		}
		cmd = append(cmd, extra...)
		from := "/dev/null"
		if replyIn != nil {
			from = replyFile(i + 1)
			files = append(files, backend.SpecFile{Path: from, Mode: 0o444, Data: replyIn})
		}
		fmt.Fprintf(&b, "printf '\\n%%s\\n' %s\n", shellQuote(agent.TurnMarker))
		fmt.Fprintf(&b, "%s <%s || exit $?\n", shellCommand(cmd), from)
	}
	files = append(files, backend.SpecFile{Path: SessionFile, Mode: 0o444, Data: []byte(b.String())})
	return []string{"/bin/sh", SessionFile}, stdin, files, nil
}

// turnCommand is command with text as its {{prompt}}, or, when text is not inline or
// the agent's kind always takes it there, the command that reads it on its standard
// input, and that input.
func turnCommand(p *plan.Plan, command []string, text string, inline bool) ([]string, []byte, error) {
	kind := agent.Of(p.Agent.Kind)
	out := make([]string, 0, len(command))
	var stdin []byte
	for _, a := range command {
		if (inline && !kind.StdinAlways) || !strings.Contains(a, PromptArg) {
			out = append(out, strings.ReplaceAll(a, PromptArg, text))
			continue
		}
		if a != PromptArg || !kind.Stdin {
			return nil, nil, fmt.Errorf("build the agent's command: its prompt (%d bytes) is over limits.promptArg (%s) for the command line; read it from $SKILLGATE_PROMPT_FILE instead of {{prompt}}", len(text), p.Limits.PromptArg)
		}
		out, stdin = append(out, kind.StdinArgs...), []byte(text)
	}
	return out, stdin, nil
}

// SessionID is the ID of the session of the cell with rollout key k, for a case with
// replies: a UUID (version 4 in form, its bits from the key), the same in every run of
// the cell, so a session resumed by ID never depends on what the first turn printed.
func SessionID(k digest.Digest) string {
	u := sha256.Sum256([]byte(k.String()))
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// shellCommand quotes args for sh, each as one word.
func shellCommand(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// shellQuote is s as one sh word, byte for byte.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
