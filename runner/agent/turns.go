package agent

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
)

// Turn is one step of a session as a person reads it: a message, or a tool call with
// its input and result, with the skills (NAME) and references (NAME/PATH) it loaded.
type Turn struct {
	// Role is "user", "assistant" or "tool".
	Role   string
	Text   string
	Tool   string
	Input  string
	Result string
	Loads  []grade.RoutingEvent
	// ExitCode is a shell command's exit status as the transcript tells it
	// (Codex's exit code; 0 or 1 from Claude Code's error flag); nil when
	// it tells none.
	ExitCode *int
}

// Turns reads a finished session's steps from its output, for the report's view of a
// cell; a kind with no structured transcript has none.
func Turns(kind string, stdout, stderr []byte) []Turn {
	switch kind {
	case ClaudeCode:
		return claudeTurns(stdout)
	case Codex:
		return codexTurns(stdout)
	case OpenCode:
		return openCodeTurns(stdout)
	case Pi:
		return piTurns(stdout)
	case Gemini:
		return geminiTurns(stdout)
	case Command:
		return commandTurns(stderr)
	}
	return nil
}

// SessionTurns are Turns of a session that took the user's replies (a case with
// replies): each invocation's steps, and between them the reply that started the next
// one, as a user step. A command agent's steps are its routing lines, which tell no
// turn apart: the replies follow them.
func SessionTurns(kind string, stdout, stderr []byte, replies []string) []Turn {
	if len(replies) == 0 || kind == Command {
		out := Turns(kind, stdout, stderr)
		for _, r := range replies {
			out = append(out, Turn{Role: "user", Text: r})
		}
		return out
	}
	var out []Turn
	for i, part := range bytes.Split(stdout, []byte("\n"+TurnMarker+"\n")) {
		if i > 0 && i <= len(replies) {
			out = append(out, Turn{Role: "user", Text: replies[i-1]})
		}
		out = append(out, Turns(kind, part, stderr)...)
	}
	return out
}

// claudeTurnEvent is what a turn needs of a stream-json event: assistant text and tool
// calls, and the tool results of the user events that follow them.
type claudeTurnEvent struct {
	Type    string `json:"type"`
	Message *struct {
		Content []struct {
			claudeBlock
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
			IsError   *bool           `json:"is_error"`
		} `json:"content"`
	} `json:"message"`
}

func claudeTurns(stdout []byte) []Turn {
	var turns []Turn
	byID := map[string]int{}
	jsonLines(stdout, func(line []byte) {
		var ev claudeTurnEvent
		if json.Unmarshal(line, &ev) != nil || ev.Message == nil {
			return
		}
		for _, b := range ev.Message.Content {
			switch {
			case ev.Type == "assistant" && b.Type == "text" && b.Text != "":
				turns = append(turns, Turn{Role: "assistant", Text: b.Text})
			case ev.Type == "assistant" && b.Type == "tool_use":
				if _, seen := byID[b.ID]; seen && b.ID != "" {
					continue
				}
				r := newRouting()
				claudeToolRouting(r, b.claudeBlock)
				turns = append(turns, Turn{Role: "tool", Tool: b.Name, Input: toolInput(b.Input), Loads: loads(r)})
				if b.ID != "" {
					byID[b.ID] = len(turns) - 1
				}
			case ev.Type == "user" && b.Type == "tool_result":
				if i, ok := byID[b.ToolUseID]; ok {
					turns[i].Result = toolResult(b.Content)
					if b.IsError != nil {
						code := map[bool]int{false: 0, true: 1}[*b.IsError]
						turns[i].ExitCode = &code
					}
				}
			case ev.Type == "user" && b.Type == "text" && b.Text != "":
				// What a tool put into the conversation, such as a skill's text.
				if n := len(turns); n > 0 && turns[n-1].Role == "tool" {
					turns[n-1].Result = strings.TrimSpace(turns[n-1].Result + "\n" + b.Text)
				}
			}
		}
	})
	return turns
}

// toolInput is a tool call's input as a person reads it: the command, the path or the
// skill where the tool has one, else its JSON.
func toolInput(raw json.RawMessage) string {
	var in map[string]any
	if json.Unmarshal(raw, &in) != nil {
		return string(raw)
	}
	for _, k := range []string{"command", "file_path", "skill", "pattern", "url"} {
		if v, ok := in[k].(string); ok && len(in) == 1 {
			return v
		}
	}
	if v, ok := in["command"].(string); ok {
		return v
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(in)
	return strings.TrimSpace(b.String())
}

// toolResult is a tool result's content: a string, or the text of its blocks.
func toolResult(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) == nil {
		var parts []string
		for _, b := range blocks {
			if b.Text != "" {
				parts = append(parts, b.Text)
			}
		}
		return strings.Join(parts, "\n")
	}
	return string(raw)
}

// loads are one step's routing events: skills by name, references as NAME/PATH.
func loads(r *routing) []grade.RoutingEvent {
	t := r.telemetry()
	return append(append([]grade.RoutingEvent{}, t.Skills...), t.References...)
}

// codexTurnEvent is what a turn needs of a `codex exec --json` event.
type codexTurnEvent struct {
	Type string `json:"type"`
	Item *struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Message  string `json:"message"`
		Command  string `json:"command"`
		Query    string `json:"query"`
		Server   string `json:"server"`
		ToolName string `json:"tool"`
		Output   string `json:"aggregated_output"`
		ExitCode *int   `json:"exit_code"`
		Changes  []struct {
			Path string `json:"path"`
			Kind string `json:"kind"`
		} `json:"changes"`
	} `json:"item"`
}

func codexTurns(stdout []byte) []Turn {
	var turns []Turn
	jsonLines(stdout, func(line []byte) {
		var ev codexTurnEvent
		if json.Unmarshal(line, &ev) != nil || ev.Type != "item.completed" || ev.Item == nil {
			return
		}
		it := ev.Item
		switch it.Type {
		case "agent_message":
			turns = append(turns, Turn{Role: "assistant", Text: it.Text})
		case "command_execution":
			r := newRouting()
			for _, p := range skillPathsInCommand(it.Command, codexSkillRoots) {
				r.file(p[0], p[1])
			}
			res := it.Output
			if it.ExitCode != nil && *it.ExitCode != 0 {
				res = strings.TrimRight(res, "\n") + "\n(exit " + strconv.Itoa(*it.ExitCode) + ")"
			}
			turns = append(turns, Turn{Role: "tool", Tool: "shell", Input: it.Command, Result: res, Loads: loads(r), ExitCode: it.ExitCode})
		case "file_change":
			var paths []string
			for _, c := range it.Changes {
				paths = append(paths, c.Kind+" "+c.Path)
			}
			turns = append(turns, Turn{Role: "tool", Tool: "file_change", Input: strings.Join(paths, "\n")})
		case "error":
			turns = append(turns, Turn{Role: "tool", Tool: "error", Result: it.Message})
		case "mcp_tool_call", "web_search":
			// Calls outside the workspace: shown, and read by trajectory checks.
			in := it.Query
			if it.Server != "" || it.ToolName != "" {
				in = it.Server + "/" + it.ToolName
			}
			turns = append(turns, Turn{Role: "tool", Tool: it.Type, Input: in})
		}
	})
	return turns
}

// commandTurns are a command agent's routing lines, each a step that loaded what it names.
func commandTurns(stderr []byte) []Turn {
	var turns []Turn
	for _, raw := range bytes.Split(stderr, []byte("\n")) {
		line := strings.TrimSpace(string(raw))
		if cmd, ok := strings.CutPrefix(line, CommandRanPrefix); ok && strings.TrimSpace(cmd) != "" {
			turns = append(turns, Turn{Role: "tool", Tool: "shell", Input: strings.TrimSpace(cmd)})
			continue
		}
		if !strings.HasPrefix(line, "skillgate: opened skill ") && !strings.HasPrefix(line, "skillgate: read ") {
			continue
		}
		t := parseCommand(nil, []byte(line)).Telemetry
		turns = append(turns, Turn{Role: "tool", Tool: "skillgate", Input: strings.TrimPrefix(line, "skillgate: "),
			Loads: append(append([]grade.RoutingEvent{}, t.Skills...), t.References...)})
	}
	return turns
}
