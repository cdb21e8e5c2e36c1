package agent

import (
	"encoding/json"
	"path"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
)

// GeminiVersion is the Gemini CLI built by default: the version its lockfile
// (runner/agent/gemini) pins. The gemini preset of schema/agents names its image.
const GeminiVersion = "0.61.0"

// geminiTree is where the Gemini CLI's npm tree goes in its image.
const geminiTree = "usr/local/lib/gemini"

// gemini runs the Gemini CLI headless (a positional prompt with
// `--output-format stream-json`), its transcript as JSON events, on the host's
// Node.js. With no prompt argument and its standard input not a terminal, it
// reads the prompt there.
var gemini = Kind{
	recipe: &recipe{
		pkg:     "@google/gemini-cli",
		dest:    geminiTree,
		node:    &nodeApp{lock: "gemini", main: "node_modules/@google/gemini-cli/bundle/gemini.js", bin: "gemini", omitOptional: true},
		env:     " GEMINI_CLI_TRUST_WORKSPACE=true",
		version: GeminiVersion,
	},
	Env:       geminiEnv,
	Files:     geminiFiles,
	Stdin:     true,
	StdinArgs: []string{},
	// Its user-level folders (~/.gemini/skills, ~/.agents/skills), its
	// extensions, which may bring skills, and the skills built into the CLI
	// (bundle/builtin): the baseline sees none of them. The workspace's
	// .gemini/skills and .agents/skills are the arm's.
	UserSkillDirs: []string{
		path.Join(Home, ".gemini/skills"), path.Join(Home, ".agents/skills"), path.Join(Home, ".gemini/extensions"),
		"/" + geminiTree + "/node_modules/@google/gemini-cli/bundle/builtin",
	},
	Parse: parseGemini,
}

// geminiEnv points the Gemini CLI at the gateway: with GOOGLE_GEMINI_BASE_URL
// set, it authenticates as a gateway client with GEMINI_API_KEY, the cell's
// dummy key, sent as x-goog-api-key. The workspace is trusted (else a
// headless run stops, and a project's skills are ignored).
func geminiEnv(_, token string) []string {
	return []string{"GEMINI_API_KEY=" + token, "GOOGLE_GEMINI_BASE_URL=" + ModelURL, "HOME=" + Home,
		"GEMINI_CLI_TRUST_WORKSPACE=true", "GEMINI_CLI_NO_RELAUNCH=true"}
}

// geminiFiles is the Gemini CLI's user settings.json: the gateway as its
// authentication, the model asked for, and nothing that would reach the
// network on its own (updates, usage statistics, telemetry, an IDE).
func geminiFiles(model string) map[string][]byte {
	if model == "" {
		model = "gemini-2.5-pro"
	}
	settings := map[string]any{
		"general":   map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"ide":       map[string]any{"enabled": false},
		"model":     map[string]any{"name": model},
		"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
	}
	b, _ := json.MarshalIndent(settings, "", "  ")
	return map[string][]byte{path.Join(Home, ".gemini/settings.json"): append(b, '\n')}
}

// geminiSkillRoots are the folders the Gemini CLI loads skills from, as they
// end: .gemini/skills and .agents/skills of the project and the user.
var geminiSkillRoots = []string{".gemini/skills/", ".agents/skills/"}

// geminiEvent is one event of `gemini --output-format stream-json`.
type geminiEvent struct {
	Type  string `json:"type"`
	Model string `json:"model"` // init
	// message: the user's prompt, or a piece (delta) of the assistant's text.
	Role    string `json:"role"`
	Content string `json:"content"`
	// tool_use and tool_result
	ToolName   string          `json:"tool_name"`
	ToolID     string          `json:"tool_id"`
	Parameters json.RawMessage `json:"parameters"`
	Status     string          `json:"status"`
	Output     string          `json:"output"`
	Error      *struct {
		Message string `json:"message"`
	} `json:"error"`
	Message string `json:"message"` // error
	// result
	Stats *struct {
		Input     int64 `json:"input"`
		Cached    int64 `json:"cached"`
		Output    int64 `json:"output_tokens"`
		ToolCalls int   `json:"tool_calls"`
	} `json:"stats"`
}

// geminiToolRouting records the routing evidence of one tool call: the
// activate_skill tool names the skill it loads (observed); a read of a skill's
// file, or a shell command naming one, is inferred.
func geminiToolRouting(r *routing, tool string, raw json.RawMessage) {
	var in struct {
		Name     string `json:"name"`
		FilePath string `json:"file_path"`
		Command  string `json:"command"`
	}
	if len(raw) > 0 && json.Unmarshal(raw, &in) != nil {
		return
	}
	switch tool {
	case "activate_skill":
		if in.Name != "" {
			r.skill(in.Name, grade.EvidenceObserved)
		}
	case "read_file":
		if name, rest, ok := skillFile(in.FilePath, geminiSkillRoots); ok {
			r.file(name, rest)
		}
	case "run_shell_command":
		for _, p := range skillPathsInCommand(in.Command, geminiSkillRoots) {
			r.file(p[0], p[1])
		}
	}
}

// geminiSteps walks Gemini's events in order, calling text with each
// assistant message (its deltas joined), tool with each tool call, result
// with each tool result and turn at the start of each model response: the
// first text or tool call after the prompt or after tool results.
type geminiSteps struct {
	text   func(string)
	tool   func(ev *geminiEvent)
	result func(ev *geminiEvent)
	turn   func()
	other  func(ev *geminiEvent)
}

func (s geminiSteps) walk(stdout []byte) {
	var text strings.Builder
	inTurn := false
	flush := func() {
		if text.Len() > 0 && s.text != nil {
			s.text(text.String())
		}
		text.Reset()
	}
	startTurn := func() {
		if !inTurn && s.turn != nil {
			s.turn()
		}
		inTurn = true
	}
	jsonLines(stdout, func(line []byte) {
		var ev geminiEvent
		if json.Unmarshal(line, &ev) != nil || ev.Type == "" {
			return
		}
		switch {
		case ev.Type == "message" && ev.Role == "assistant":
			startTurn()
			text.WriteString(ev.Content)
			return
		case ev.Type == "tool_use":
			flush()
			startTurn()
			if s.tool != nil {
				s.tool(&ev)
			}
			return
		}
		flush()
		switch ev.Type {
		case "tool_result":
			inTurn = false
			if s.result != nil {
				s.result(&ev)
			}
		case "message", "init", "result":
			inTurn = false
			if s.other != nil {
				s.other(&ev)
			}
		default:
			if s.other != nil {
				s.other(&ev)
			}
		}
	})
	flush()
}

// parseGemini reads the Gemini CLI's stream-json events: every turn's, for a
// session with replies (`--resume latest` prints the same events). The
// answer is the last assistant message; turns are the model's responses as
// the event order shows them (its text and tool calls up to the tool
// results), tool calls its tool_use events, and tokens add up each
// invocation's result statistics (input without the cached tokens). The
// model is the one its init event names; the events name no CLI version.
func parseGemini(stdout, _ []byte) Session {
	r := newRouting()
	var (
		messages         []string
		turns, toolCalls int
		events           int
		tokens           *grade.Tokens
		model            string
	)
	geminiSteps{
		text: func(s string) { messages = append(messages, s) },
		tool: func(ev *geminiEvent) {
			toolCalls++
			geminiToolRouting(r, ev.ToolName, ev.Parameters)
		},
		turn: func() { turns++ },
		other: func(ev *geminiEvent) {
			events++
			if ev.Type == "init" && model == "" {
				model = ev.Model
			}
			if ev.Type == "result" && ev.Stats != nil {
				if tokens == nil {
					tokens = &grade.Tokens{}
				}
				tokens.Input += ev.Stats.Input
				tokens.CacheRead += ev.Stats.Cached
				tokens.Output += ev.Stats.Output
			}
		},
	}.walk(stdout)
	return r.session(events, toolCalls, turns, tokens, model, messages)
}

// geminiTurns are a session's steps from Gemini's events: the assistant's
// messages and tool calls, each call with its result (an error result as
// exit status 1, else 0), and errors the CLI reported.
func geminiTurns(stdout []byte) []Turn {
	var turns []Turn
	byID := map[string]int{}
	geminiSteps{
		text: func(s string) { turns = append(turns, Turn{Role: "assistant", Text: s}) },
		tool: func(ev *geminiEvent) {
			r := newRouting()
			geminiToolRouting(r, ev.ToolName, ev.Parameters)
			turns = append(turns, Turn{Role: "tool", Tool: ev.ToolName, Input: toolInput(ev.Parameters), Loads: loads(r)})
			if ev.ToolID != "" {
				byID[ev.ToolID] = len(turns) - 1
			}
		},
		result: func(ev *geminiEvent) {
			i, ok := byID[ev.ToolID]
			if !ok {
				return
			}
			turns[i].Result = ev.Output
			code := 0
			if ev.Status == "error" {
				code = 1
				if ev.Error != nil && ev.Error.Message != "" {
					turns[i].Result = ev.Error.Message
				}
			}
			turns[i].ExitCode = &code
		},
		other: func(ev *geminiEvent) {
			if ev.Type == "error" && ev.Message != "" {
				turns = append(turns, Turn{Role: "tool", Tool: "error", Result: ev.Message})
			}
		},
	}.walk(stdout)
	return turns
}
