package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"

	"github.com/skillgate/skillgate/pipeline/grade"
)

// CodexVersion is the Codex CLI built by default: the one the samples in
// ../shared/samples/agent-transcripts came from. The codex preset of
// schema/agents names its image.
const CodexVersion = "0.171.0"

// codex runs Codex's `exec` mode, its transcript as JSON events. Given "-"
// for its prompt it reads the prompt on its standard input.
var codex = Kind{
	recipe: &recipe{
		// The binary finds its helpers (codex-path/rg, codex-resources/bwrap,
		// codex-package.json) next to its real path, so the whole folder is kept and
		// /usr/local/bin/codex links to it. The voice helper and its GStreamer libraries
		// are left out: a headless run has no audio.
		pkg:      "@openai/codex",
		platform: "@openai/codex-linux-x64",
		dir:      "vendor/x86_64-unknown-linux-musl", dest: "usr/local/lib/codex", bin: "bin/codex",
		skip:    []string{"codex-resources/voice/"},
		links:   map[string]string{"usr/local/bin/codex": "../lib/codex/bin/codex", "usr/local/bin/rg": "../lib/codex/codex-path/rg"},
		version: CodexVersion,
	},
	Env:       codexEnv,
	Files:     codexFiles,
	Stdin:     true,
	StdinArgs: []string{"-"},
	Parse:     parseCodex,
}

// codexEnv gives Codex the cell's dummy key; its config.toml points it at
// the gateway.
func codexEnv(_, token string) []string {
	return []string{"OPENAI_API_KEY=" + token, "CODEX_HOME=" + path.Join(Home, ".codex"), "HOME=" + Home}
}

// codexFiles is Codex's config.toml: the gateway as its model provider.
func codexFiles(model string) map[string][]byte {
	var b bytes.Buffer
	if model != "" {
		fmt.Fprintf(&b, "model = %q\n", model)
	}
	// The container is the sandbox: Codex's own (bwrap) cannot start in it.
	b.WriteString(`model_provider = "skillgate"
sandbox_mode = "danger-full-access"
approval_policy = "never"

[model_providers.skillgate]
name = "skillgate gateway"
base_url = "` + ModelURL + `/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"

[analytics]
enabled = false
`)
	return map[string][]byte{path.Join(Home, ".codex", "config.toml"): b.Bytes()}
}

// codexEvent is the part of a `codex exec --json` event that telemetry needs.
type codexEvent struct {
	Type  string `json:"type"`
	Model string `json:"model"`
	// Thread is the session's id (thread.started).
	Thread string `json:"thread_id"`
	Item   *struct {
		Type    string `json:"type"`
		Text    string `json:"text"`    // agent_message
		Command string `json:"command"` // command_execution
		Model   string `json:"model"`
	} `json:"item"`
	Usage *struct {
		Input      int64 `json:"input_tokens"`
		CacheRead  int64 `json:"cached_input_tokens"`
		CacheWrite int64 `json:"cache_write_input_tokens"`
		Output     int64 `json:"output_tokens"`
	} `json:"usage"` // turn.completed
}

// codexSkillRoots are the folders Codex loads skills from, as they end: <cwd>/.agents/skills,
// <cwd>/.codex/skills and $CODEX_HOME/skills, recognized when CODEX_HOME ends in .codex (as
// its default ~/.codex does) or is named literally. Its built-in skills, in
// $CODEX_HOME/skills/.system, are never reported.
var codexSkillRoots = []string{".agents/skills/", ".codex/skills/", "$CODEX_HOME/skills/", "${CODEX_HOME}/skills/"}

// codexToolItems are the item types that are tool calls.
var codexToolItems = map[string]bool{
	"command_execution": true, "file_change": true, "mcp_tool_call": true, "web_search": true,
}

// parseCodex reads `codex exec --json` output (every turn's, for a session with replies:
// `codex exec resume` prints the same events). The answer is the last agent message;
// tokens are the sum of every turn's usage, in skillgate's convention: the Responses API's
// input_tokens include the cached ones, so Input is what is left without them, as Claude
// Code reports it (the provider's own figures are in the gateway's usage); a resumed
// session (a thread.started naming a thread seen before) reports its thread's usage so
// far, which replaces what that thread counted; turns count turn.completed events; tool calls count
// completed command executions, file changes, MCP tool calls and web searches. Codex has
// no skill tool: a command that reads a skill's SKILL.md is inferred evidence, and one
// that reads another file of a skill folder an inferred reference.
func parseCodex(stdout, _ []byte) Session {
	r := newRouting()
	var (
		answer           string
		model            string
		turns, toolCalls int
		events           int
		messages         []string
		// Usage by thread: a resumed thread reports its total so far.
		usage   = map[string]*grade.Tokens{}
		threads []string
		thread  string
	)
	jsonLines(stdout, func(line []byte) {
		var ev codexEvent
		if json.Unmarshal(line, &ev) != nil {
			return
		}
		events++
		if model == "" {
			model = ev.Model
			if model == "" && ev.Item != nil {
				model = ev.Item.Model
			}
		}
		switch ev.Type {
		case "thread.started":
			thread = ev.Thread
			if _, seen := usage[thread]; seen {
				usage[thread] = nil // resumed: its reports start over from the total
			} else {
				threads = append(threads, thread)
				usage[thread] = nil
			}
		case "turn.completed":
			turns++
			if u := ev.Usage; u != nil {
				if _, ok := usage[thread]; !ok {
					threads = append(threads, thread)
				}
				tokens := usage[thread]
				if tokens == nil {
					tokens = &grade.Tokens{}
					usage[thread] = tokens
				}
				tokens.Input += max(u.Input-u.CacheRead, 0)
				tokens.CacheRead += u.CacheRead
				tokens.CacheWrite += u.CacheWrite
				tokens.Output += u.Output
			}
		case "item.completed":
			if ev.Item == nil {
				return
			}
			if codexToolItems[ev.Item.Type] {
				toolCalls++
			}
			switch ev.Item.Type {
			case "agent_message":
				answer = ev.Item.Text
				messages = append(messages, ev.Item.Text)
			case "command_execution":
				for _, p := range skillPathsInCommand(ev.Item.Command, codexSkillRoots) {
					r.file(p[0], p[1])
				}
			}
		}
	})
	t := r.telemetry()
	if events == 0 {
		return Session{Telemetry: t}
	}
	var tokens *grade.Tokens
	for _, th := range threads {
		if u := usage[th]; u != nil {
			if tokens == nil {
				tokens = &grade.Tokens{}
			}
			tokens.Input, tokens.Output = tokens.Input+u.Input, tokens.Output+u.Output
			tokens.CacheRead, tokens.CacheWrite = tokens.CacheRead+u.CacheRead, tokens.CacheWrite+u.CacheWrite
		}
	}
	t.ToolCalls, t.Turns, t.Tokens, t.Model = &toolCalls, &turns, tokens, model
	return Session{Answer: answer, Telemetry: t, Messages: messages}
}
