package agent

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
)

// ClaudeCodeVersion is the Claude Code CLI built by default: the one the
// samples in ../shared/samples/agent-transcripts came from. The claudeCode
// preset of schema/agents names its image.
const ClaudeCodeVersion = "2.1.332"

// claudeCode runs Claude Code headless (`claude -p`), its transcript as
// stream-json. With no prompt argument it reads the prompt on its standard
// input.
var claudeCode = Kind{
	recipe: &recipe{
		pkg:      "@anthropic-ai/claude-code",
		platform: "@anthropic-ai/claude-code-linux-x64",
		dir:      "claude", dest: "usr/local/bin/claude", bin: "", // a file
		env:     " DISABLE_AUTOUPDATER=1",
		version: ClaudeCodeVersion,
	},
	Env:       claudeEnv,
	Stdin:     true,
	StdinArgs: []string{},
	Parse:     parseClaude,
}

// claudeEnv points Claude Code at the gateway, with the cell's dummy key.
func claudeEnv(model, token string) []string {
	env := []string{"ANTHROPIC_BASE_URL=" + ModelURL, "ANTHROPIC_API_KEY=" + token, "HOME=" + Home}
	if model != "" {
		env = append(env, "ANTHROPIC_MODEL="+model)
	}
	return env
}

// claudeEvent is the part of a Claude Code stream-json event (`claude -p ...
// --output-format stream-json --verbose`) that telemetry needs.
type claudeEvent struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	Model   string `json:"model"` // init
	// Version is the CLI's own version (init).
	Version string `json:"claude_code_version"`
	Message *struct {
		ID      string        `json:"id"`
		Model   string        `json:"model"`
		Content []claudeBlock `json:"content"`
	} `json:"message"` // assistant, user
	// result
	Result     *string                    `json:"result"`
	NumTurns   *int                       `json:"num_turns"`
	Usage      *claudeUsage               `json:"usage"`
	ModelUsage map[string]json.RawMessage `json:"modelUsage"`
	Denials    []claudeDenial             `json:"permission_denials"`
}

// claudeBlock is one content block of an assistant message.
type claudeBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Text  string          `json:"text"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// claudeUsage is the session total of the result event: the only usage to trust, since
// the per-message usage of assistant events reflects only message_start.
type claudeUsage struct {
	Input      int64 `json:"input_tokens"`
	Output     int64 `json:"output_tokens"`
	CacheRead  int64 `json:"cache_read_input_tokens"`
	CacheWrite int64 `json:"cache_creation_input_tokens"`
}

// claudeDenial is a tool call refused by Claude Code's permission mode.
type claudeDenial struct {
	Tool  string          `json:"tool_name"`
	Input json.RawMessage `json:"tool_input"`
}

// claudeToolInput holds the inputs of the tools whose use is routing evidence.
type claudeToolInput struct {
	Skill    string `json:"skill"`     // Skill
	FilePath string `json:"file_path"` // Read, Write, Edit
	Command  string `json:"command"`   // Bash
}

// parseClaude reads Claude Code's stream-json output: one invocation's, or every turn's
// of a session with replies, each ending in its result event. The answer comes from the
// final result event, turns and tokens from all of them; without one after the last
// turn's messages (a crash), the answer is the text of the last assistant message and
// turns and tokens are unknown. Skill events: a Skill tool call is observed; a Read of
// .claude/skills/NAME/SKILL.md, or a Bash command naming it, is inferred. Built-in skills
// listed in the init event are not routing.
func parseClaude(stdout, _ []byte) Session {
	r := newRouting()
	var (
		result    *claudeEvent   // the last turn's result, if it has one
		results   []*claudeEvent // every turn's
		model     string
		version   string   // the CLI's, as its init event says
		lastMsg   string   // id of the last assistant message with text
		lastText  []string // its text blocks
		messages  []string // every assistant message's text, and each turn's result
		fresh     int      // messages since the last result
		toolCalls int
		seenTool  = map[string]bool{}
		events    int
	)
	flush := func() {
		if len(lastText) > 0 {
			messages = append(messages, strings.Join(lastText, "\n"))
			fresh++
		}
	}
	jsonLines(stdout, func(line []byte) {
		var ev claudeEvent
		if json.Unmarshal(line, &ev) != nil {
			return
		}
		events++
		switch ev.Type {
		case "system":
			if ev.Subtype == "init" && ev.Model != "" && model == "" {
				model = ev.Model
			}
			if ev.Subtype == "init" && ev.Version != "" {
				version = ev.Version
			}
		case "result":
			result = &ev
			results = append(results, &ev)
			// A turn's result is its last message, unless it came from a tool
			// (a structured answer): then it is a message of its own.
			flush()
			if r := ev.Result; r != nil && *r != "" && (fresh == 0 || messages[len(messages)-1] != *r) {
				messages = append(messages, *r)
			}
			lastMsg, lastText, fresh = "", nil, 0
		case "assistant":
			if ev.Message == nil {
				return
			}
			for _, b := range ev.Message.Content {
				switch b.Type {
				case "text":
					if b.Text == "" {
						continue
					}
					if ev.Message.ID != lastMsg || ev.Message.ID == "" {
						flush()
						lastMsg, lastText = ev.Message.ID, nil
					}
					result = nil // a turn began after the last result
					lastText = append(lastText, b.Text)
				case "tool_use":
					// One event per block; an id seen twice is the same call.
					if b.ID != "" {
						if seenTool[b.ID] {
							continue
						}
						seenTool[b.ID] = true
					}
					toolCalls++
					claudeToolRouting(r, b)
				}
			}
		}
	})
	flush()
	t := r.telemetry()
	if events == 0 {
		return Session{Telemetry: t}
	}
	t.ToolCalls = &toolCalls
	answer := strings.Join(lastText, "\n")
	if result != nil {
		if result.Result != nil {
			answer = *result.Result
		}
		// Turns and tokens add up over the session's invocations, each of
		// which reports its own; one that reports none leaves them unknown.
		turns, tokens := 0, &grade.Tokens{}
		for _, res := range results {
			if res.NumTurns == nil {
				turns = -1
			} else if turns >= 0 {
				turns += *res.NumTurns
			}
			if u := res.Usage; u != nil && tokens != nil {
				tokens.Input, tokens.Output = tokens.Input+u.Input, tokens.Output+u.Output
				tokens.CacheRead, tokens.CacheWrite = tokens.CacheRead+u.CacheRead, tokens.CacheWrite+u.CacheWrite
			} else {
				tokens = nil
			}
		}
		if turns >= 0 {
			t.Turns = &turns
		}
		t.Tokens = tokens
		if model == "" && len(result.ModelUsage) > 0 {
			model = slices.Sorted(maps.Keys(result.ModelUsage))[0]
		}
	}
	t.Model, t.AgentVersion = model, version
	return Session{Answer: answer, Telemetry: t, Messages: messages}
}

// claudeToolRouting records the routing evidence of one tool call.
func claudeToolRouting(r *routing, b claudeBlock) {
	var in claudeToolInput
	if len(b.Input) > 0 && json.Unmarshal(b.Input, &in) != nil {
		return
	}
	switch b.Name {
	case "Skill":
		// A plugin's skill is named "plugin:skill"; a slash is not part of the name.
		if name := strings.TrimPrefix(strings.TrimSpace(in.Skill), "/"); name != "" {
			r.skill(name, grade.EvidenceObserved)
		}
	case "Read":
		if name, rest, ok := skillFile(in.FilePath, claudeSkillRoots); ok {
			r.file(name, rest)
		}
	case "Bash":
		for _, p := range skillPathsInCommand(in.Command, claudeSkillRoots) {
			r.file(p[0], p[1])
		}
	}
}

// ClaudePermissionDenials lists the tool calls that Claude Code's permission mode refused
// in a session, as "TOOL target" (the file path or command, else the input as JSON), from
// its stream-json output. A session with denials may still end with subtype "success".
func ClaudePermissionDenials(stdout []byte) []string {
	var denials []claudeDenial
	jsonLines(stdout, func(line []byte) {
		var ev claudeEvent
		if json.Unmarshal(line, &ev) == nil && ev.Type == "result" {
			denials = ev.Denials
		}
	})
	out := []string{}
	for _, d := range denials {
		var in claudeToolInput
		json.Unmarshal(d.Input, &in)
		target := in.FilePath
		if target == "" {
			target = in.Command
		}
		if target == "" && len(d.Input) > 0 {
			var c bytes.Buffer
			if json.Compact(&c, d.Input) == nil {
				target = c.String()
			}
		}
		out = append(out, strings.TrimSpace(d.Tool+" "+target))
	}
	return out
}

// claudeSkillRoots are the folders Claude Code loads skills from, as they end.
var claudeSkillRoots = []string{".claude/skills/"}
