package agent

import (
	"encoding/json"
	"path"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
)

// PiVersion is the Pi coding agent built by default: the version its lockfile
// (runner/agent/pi) pins. The pi preset of schema/agents names its image.
const PiVersion = "0.73.1"

// pi runs the Pi coding agent headless (`pi -p --mode json`), its transcript
// as JSON events, on the host's Node.js. With no prompt argument it reads
// the prompt on its standard input.
var pi = Kind{
	recipe: &recipe{
		pkg:     "@mariozechner/pi-coding-agent",
		dest:    "usr/local/lib/pi",
		node:    &nodeApp{lock: "pi", main: "node_modules/@mariozechner/pi-coding-agent/dist/cli.js", bin: "pi"},
		env:     " PI_OFFLINE=1",
		version: PiVersion,
	},
	Env:       piEnv,
	Files:     piFiles,
	Stdin:     true,
	StdinArgs: []string{},
	// Its user-level folders (its own and ~/.agents/skills), and the
	// .agents/skills of the root, the one folder above the workspace, which it
	// reads when the workspace is no git repository.
	UserSkillDirs: []string{path.Join(Home, ".pi/agent/skills"), path.Join(Home, ".agents/skills"), "/.agents/skills"},
	Parse:         parsePi,
}

// piProvider is the provider Pi's models.json declares for the gateway.
const piProvider = "skillgate"

// piEnv gives Pi the cell's dummy key (its models.json names the variable)
// and keeps it from reaching the network at start.
func piEnv(_, token string) []string {
	return []string{"ANTHROPIC_API_KEY=" + token, "HOME=" + Home, "PI_OFFLINE=1"}
}

// piFiles are Pi's models.json, which declares the gateway as a provider
// speaking Anthropic Messages with the model asked for, and its
// settings.json, which makes that provider and model the default.
func piFiles(model string) map[string][]byte {
	if model == "" {
		model = "claude-sonnet-4-5"
	}
	models, _ := json.MarshalIndent(map[string]any{"providers": map[string]any{piProvider: map[string]any{
		"baseUrl": ModelURL, "api": "anthropic-messages", "apiKey": "ANTHROPIC_API_KEY",
		"models": []any{map[string]any{"id": model}},
	}}}, "", "  ")
	settings, _ := json.MarshalIndent(map[string]any{"defaultProvider": piProvider, "defaultModel": model}, "", "  ")
	return map[string][]byte{
		path.Join(Home, ".pi/agent/models.json"):   append(models, '\n'),
		path.Join(Home, ".pi/agent/settings.json"): append(settings, '\n'),
	}
}

// piSkillRoots are the folders Pi loads skills from, as they end: .pi/skills
// and .agents/skills of the project, ~/.pi/agent/skills and ~/.agents/skills.
var piSkillRoots = []string{".pi/skills/", ".pi/agent/skills/", ".agents/skills/"}

// piEvent is the part of a `pi --mode json` event that the transcript needs.
type piEvent struct {
	Type    string     `json:"type"`
	Message *piMessage `json:"message"` // message_end
	// tool_execution_end
	ToolCallID string `json:"toolCallId"`
	Result     *struct {
		Content json.RawMessage `json:"content"`
	} `json:"result"`
	IsError bool `json:"isError"`
}

// piMessage is a message of Pi's session: the assistant's with its content
// blocks, usage and model.
type piMessage struct {
	Role    string `json:"role"`
	Model   string `json:"model"`
	Content []struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"content"`
	Usage *struct {
		Input      int64 `json:"input"`
		Output     int64 `json:"output"`
		CacheRead  int64 `json:"cacheRead"`
		CacheWrite int64 `json:"cacheWrite"`
	} `json:"usage"`
	StopReason   string `json:"stopReason"`
	ErrorMessage string `json:"errorMessage"`
}

// piToolRouting records the routing evidence of one tool call. Pi has no skill
// tool: a read of a skill's SKILL.md, or a bash command naming it, is inferred.
func piToolRouting(r *routing, tool string, raw json.RawMessage) {
	var in struct {
		Path    string `json:"path"`
		Command string `json:"command"`
	}
	if len(raw) > 0 && json.Unmarshal(raw, &in) != nil {
		return
	}
	switch tool {
	case "read":
		if name, rest, ok := skillFile(in.Path, piSkillRoots); ok {
			r.file(name, rest)
		}
	case "bash":
		for _, p := range skillPathsInCommand(in.Command, piSkillRoots) {
			r.file(p[0], p[1])
		}
	}
}

// parsePi reads Pi's JSON events: every turn's, for a session with replies
// (`pi --continue` prints the same events). The answer is the text of the
// last assistant message that had text; turns count the assistant's
// messages, tool calls their tool call blocks, and tokens add up their usage
// (input without the cached tokens, as Pi counts them). The model is the one
// the messages name; the events name no CLI version.
func parsePi(stdout, _ []byte) Session {
	r := newRouting()
	var (
		messages         []string
		turns, toolCalls int
		events           int
		tokens           *grade.Tokens
		model            string
	)
	jsonLines(stdout, func(line []byte) {
		var ev piEvent
		if json.Unmarshal(line, &ev) != nil || ev.Type == "" {
			return
		}
		events++
		m := ev.Message
		if ev.Type != "message_end" || m == nil || m.Role != "assistant" {
			return
		}
		turns++
		if model == "" {
			model = m.Model
		}
		var text []string
		for _, b := range m.Content {
			switch b.Type {
			case "text":
				if b.Text != "" {
					text = append(text, b.Text)
				}
			case "toolCall":
				toolCalls++
				piToolRouting(r, b.Name, b.Arguments)
			}
		}
		if len(text) > 0 {
			messages = append(messages, strings.Join(text, "\n"))
		}
		if u := m.Usage; u != nil {
			if tokens == nil {
				tokens = &grade.Tokens{}
			}
			tokens.Input += u.Input
			tokens.Output += u.Output
			tokens.CacheRead += u.CacheRead
			tokens.CacheWrite += u.CacheWrite
		}
	})
	return r.session(events, toolCalls, turns, tokens, model, messages)
}

// piTurns are a session's steps from Pi's JSON events: the assistant's text
// and tool calls, each call with the result of its execution (an error
// result as exit status 1, else 0), and failed model calls.
func piTurns(stdout []byte) []Turn {
	var turns []Turn
	byID := map[string]int{}
	jsonLines(stdout, func(line []byte) {
		var ev piEvent
		if json.Unmarshal(line, &ev) != nil {
			return
		}
		switch {
		case ev.Type == "message_end" && ev.Message != nil && ev.Message.Role == "assistant":
			for _, b := range ev.Message.Content {
				switch {
				case b.Type == "text" && b.Text != "":
					turns = append(turns, Turn{Role: "assistant", Text: b.Text})
				case b.Type == "toolCall":
					r := newRouting()
					piToolRouting(r, b.Name, b.Arguments)
					turns = append(turns, Turn{Role: "tool", Tool: b.Name, Input: toolInput(b.Arguments), Loads: loads(r)})
					if b.ID != "" {
						byID[b.ID] = len(turns) - 1
					}
				}
			}
			if ev.Message.StopReason == "error" && ev.Message.ErrorMessage != "" {
				turns = append(turns, Turn{Role: "tool", Tool: "error", Result: ev.Message.ErrorMessage})
			}
		case ev.Type == "tool_execution_end":
			if i, ok := byID[ev.ToolCallID]; ok {
				if ev.Result != nil {
					turns[i].Result = toolResult(ev.Result.Content)
				}
				code := map[bool]int{false: 0, true: 1}[ev.IsError]
				turns[i].ExitCode = &code
			}
		}
	})
	return turns
}
