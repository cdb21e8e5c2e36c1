package agent

import (
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
)

// Kinds of agent, as a suite's agent.kind names them.
const (
	ClaudeCode = "claude-code"
	Codex      = "codex"
	OpenCode   = "opencode"
	Pi         = "pi"
	Gemini     = "gemini"
	Command    = "command"
)

// The gateway as the agent sees it: a forwarder inside the cell listens
// here and relays to the gateway's socket; Home is the agent user's home.
const (
	ModelURL = "http://127.0.0.1:8080"
	Home     = "/home/agent"
)

// Kind is everything skillgate knows of one kind of agent: how its image
// is built, what it needs in its cell to reach its model, how it takes a
// prompt too large for its command line, and how its transcript reads.
type Kind struct {
	// recipe builds the kind's image from npm; nil when the suite names an
	// image skillgate does not build.
	recipe *recipe
	// Env is what the agent needs to reach its model through the gateway,
	// given the model asked for ("" for the CLI's own) and the cell's dummy
	// token.
	Env func(model, token string) []string
	// Files are files the agent needs in its cell image, by absolute path,
	// given the model asked for; nil needs none. They enter the cell
	// image's key.
	Files func(model string) map[string][]byte
	// Stdin says the CLI reads its prompt from its standard input when
	// StdinArgs stand where the {{prompt}} argument stood, as it must when
	// the prompt is too large for the command line.
	Stdin     bool
	StdinArgs []string
	// StdinAlways says the prompt always goes to the standard input, as
	// when it is too large: the CLI changes a prompt given as an argument
	// (OpenCode quotes one that holds a space).
	StdinAlways bool
	// UserSkillDirs are the skill folders the CLI scans outside the
	// workspace (its user-level folders), by absolute path: every cell sees
	// each of them empty, whatever the image holds there, so only the arm's
	// skills can be found.
	UserSkillDirs []string
	// Parse reads the final answer, the telemetry and the assistant
	// messages of a finished session from its output: every turn's, when
	// the session had several (see TurnMarker).
	Parse func(stdout, stderr []byte) Session
}

// kinds are the agents skillgate has an adapter for, by kind.
var kinds = map[string]Kind{
	ClaudeCode: claudeCode,
	Codex:      codex,
	OpenCode:   openCode,
	Pi:         pi,
	Gemini:     gemini,
	Command:    command,
}

// other is a kind skillgate has no adapter for: its stdout is its answer,
// and it reaches its model the way a command agent does.
var other = Kind{Env: commandEnv, Parse: plainTranscript}

// Of is the kind named name, or one with no adapter of its own when
// skillgate knows no such kind.
func Of(name string) Kind {
	if k, ok := kinds[name]; ok {
		return k
	}
	return other
}

// ImageKinds are the kinds whose images skillgate builds, sorted.
func ImageKinds() []string {
	var out []string
	for name, k := range kinds {
		if k.recipe != nil {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Version is the default version of a kind's CLI, or "" for a kind whose
// image skillgate does not build.
func Version(kind string) string {
	if r := Of(kind).recipe; r != nil {
		return r.version
	}
	return ""
}

// ImageRepo is the repository of a kind's images: skillgate/KIND.
func ImageRepo(kind string) string { return "skillgate/" + kind }

// ParseTranscript reads an agent's final answer and telemetry from its
// output, by agent kind.
func ParseTranscript(kind string, stdout, stderr []byte) (string, Telemetry) {
	s := ParseSession(kind, stdout, stderr)
	return s.Answer, s.Telemetry
}

// ParseSession reads all an agent's output tells of its session, by agent
// kind.
func ParseSession(kind string, stdout, stderr []byte) Session {
	return Of(kind).Parse(stdout, stderr)
}

// Session is what a finished session's transcript tells.
type Session struct {
	Answer    string
	Telemetry Telemetry
	// Messages are the text of every assistant message, in order, over
	// every turn.
	Messages []string
}

// TurnMarker is the line the cell writes to the agent's stdout between
// two turns of a session (a case with replies), after a newline of its
// own. JSON transcripts skip it; a plain one is split at it, each turn's
// stdout one message.
const TurnMarker = "\x1eskillgate: next turn\x1e"

// plainTranscript takes stdout as the answer (the last turn's, when the
// session had several) and tells nothing of routing.
func plainTranscript(stdout, _ []byte) Session {
	msgs := plainTurns(stdout)
	return Session{Answer: msgs[len(msgs)-1], Messages: msgs, Telemetry: Telemetry{Skills: []grade.RoutingEvent{}, References: []grade.RoutingEvent{}}}
}

// plainTurns splits a plain stdout into its turns' outputs at the marker
// lines: one message per turn, at least one.
func plainTurns(stdout []byte) []string {
	return strings.Split(string(stdout), "\n"+TurnMarker+"\n")
}
