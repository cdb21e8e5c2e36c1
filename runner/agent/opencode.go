package agent

import (
	"encoding/json"
	"path"
	"strconv"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
)

// OpenCodeVersion is the OpenCode CLI built by default. The openCode preset
// of schema/agents names its image.
const OpenCodeVersion = "1.18.33"

// openCode runs OpenCode headless (`opencode run --format json`), its
// transcript as JSON events. Its prompt always goes to its standard input:
// given as arguments, OpenCode quotes each one that holds a space.
var openCode = Kind{
	recipe: &recipe{
		pkg:      "opencode-ai",
		platform: "opencode-linux-x64",
		dir:      "bin/opencode", dest: "usr/local/bin/opencode", bin: "", // a file
		env: " OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1",
		// OpenCode lists a skill's files with ripgrep, which it downloads when
		// none is on the PATH: the static one Codex's npm package ships serves.
		extras: []extraFile{{
			pkg: "@openai/codex", version: CodexVersion + "-linux-x64",
			file: "vendor/x86_64-unknown-linux-musl/codex-path/rg", dest: "usr/local/bin/rg",
		}},
		version: OpenCodeVersion,
	},
	Env:         openCodeEnv,
	Files:       openCodeFiles,
	Stdin:       true,
	StdinArgs:   []string{},
	StdinAlways: true,
	// Its own global folders, the external ones it reads at user level
	// (~/.claude/skills, ~/.agents/skills) unless told not to, and those of
	// the folders above the workspace, which it walks up to the root when the
	// workspace is no git repository.
	UserSkillDirs: []string{
		path.Join(Home, ".config/opencode/skills"), path.Join(Home, ".config/opencode/skill"),
		path.Join(Home, ".claude/skills"), path.Join(Home, ".agents/skills"),
		"/.claude/skills", "/.agents/skills",
	},
	Parse: parseOpenCode,
}

// openCodeEnv gives OpenCode the cell's dummy key; its opencode.json points
// it at the gateway.
func openCodeEnv(_, token string) []string {
	return []string{"ANTHROPIC_API_KEY=" + token, "HOME=" + Home,
		"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_SHARE=1"}
}

// openCodeFiles is OpenCode's global opencode.json: Anthropic's provider at
// the gateway, the model asked for (declared, so a model outside OpenCode's
// built-in catalog is known too) as both its model and its small model, so
// no request names another, and every tool allowed, as a headless run
// cannot ask.
func openCodeFiles(model string) map[string][]byte {
	anthropic := map[string]any{"options": map[string]any{
		"baseURL": ModelURL + "/v1", "apiKey": "{env:ANTHROPIC_API_KEY}",
	}}
	cfg := map[string]any{
		"$schema":    "https://opencode.ai/config.json",
		"autoupdate": false,
		"share":      "disabled",
		"permission": "allow",
		"provider":   map[string]any{"anthropic": anthropic},
	}
	if model != "" {
		anthropic["models"] = map[string]any{model: map[string]any{}}
		cfg["model"] = "anthropic/" + model
		cfg["small_model"] = "anthropic/" + model
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	return map[string][]byte{path.Join(Home, ".config/opencode/opencode.json"): append(b, '\n')}
}

// openCodeSkillRoots are the folders OpenCode loads skills from, as they end:
// .opencode/skill(s) of the project and ~/.config/opencode/skill(s), and the
// .claude/skills and .agents/skills of the project and the user.
var openCodeSkillRoots = []string{".opencode/skills/", ".opencode/skill/", "opencode/skills/", "opencode/skill/", ".claude/skills/", ".agents/skills/"}

// openCodeEvent is the part of an `opencode run --format json` event that
// the transcript needs: each event carries one part of a message.
type openCodeEvent struct {
	Type  string          `json:"type"`
	Error json.RawMessage `json:"error"`
	Part  *struct {
		MessageID string `json:"messageID"`
		Type      string `json:"type"`
		Text      string `json:"text"`
		Tool      string `json:"tool"`
		CallID    string `json:"callID"`
		State     *struct {
			Status   string          `json:"status"`
			Input    json.RawMessage `json:"input"`
			Output   string          `json:"output"`
			Error    string          `json:"error"`
			Metadata *struct {
				Exit *int `json:"exit"`
			} `json:"metadata"`
		} `json:"state"`
		Tokens *struct {
			Input     int64 `json:"input"`
			Output    int64 `json:"output"`
			Reasoning int64 `json:"reasoning"`
			Cache     struct {
				Read  int64 `json:"read"`
				Write int64 `json:"write"`
			} `json:"cache"`
		} `json:"tokens"`
	} `json:"part"`
}

// openCodeToolInput holds the inputs of the tools whose use is routing evidence.
type openCodeToolInput struct {
	Name     string `json:"name"`     // skill
	FilePath string `json:"filePath"` // read, edit, write
	Command  string `json:"command"`  // bash
}

// openCodeToolRouting records the routing evidence of one tool call: a skill
// tool call is observed; a read of a skill's file, or a bash command naming
// one, is inferred.
func openCodeToolRouting(r *routing, tool string, raw json.RawMessage) {
	var in openCodeToolInput
	if len(raw) > 0 && json.Unmarshal(raw, &in) != nil {
		return
	}
	switch tool {
	case "skill":
		if name := strings.TrimSpace(in.Name); name != "" {
			r.skill(name, grade.EvidenceObserved)
		}
	case "read":
		if name, rest, ok := skillFile(in.FilePath, openCodeSkillRoots); ok {
			r.file(name, rest)
		}
	case "bash":
		for _, p := range skillPathsInCommand(in.Command, openCodeSkillRoots) {
			r.file(p[0], p[1])
		}
	}
}

// parseOpenCode reads OpenCode's JSON events: every turn's, for a session
// with replies (`opencode run --continue` prints the same events). The answer
// is the text of the last message that had text; turns count the model's
// steps (step_finish events), tool calls the tool parts, and tokens add up
// every step's (input without the cached tokens, as OpenCode counts them).
// The events name no model and no CLI version: the gateway's usage has the
// model.
func parseOpenCode(stdout, _ []byte) Session {
	r := newRouting()
	var (
		messages         []string
		lastMsg          string
		turns, toolCalls int
		events           int
		tokens           *grade.Tokens
	)
	jsonLines(stdout, func(line []byte) {
		var ev openCodeEvent
		if json.Unmarshal(line, &ev) != nil || ev.Type == "" {
			return
		}
		events++
		p := ev.Part
		if p == nil {
			return
		}
		switch ev.Type {
		case "text":
			if p.Text == "" {
				return
			}
			if p.MessageID != "" && p.MessageID == lastMsg && len(messages) > 0 {
				messages[len(messages)-1] += "\n" + p.Text
			} else {
				messages = append(messages, p.Text)
			}
			lastMsg = p.MessageID
		case "tool_use":
			toolCalls++
			if p.State != nil {
				openCodeToolRouting(r, p.Tool, p.State.Input)
			}
		case "step_finish":
			turns++
			if u := p.Tokens; u != nil {
				if tokens == nil {
					tokens = &grade.Tokens{}
				}
				tokens.Input += u.Input
				tokens.Output += u.Output + u.Reasoning
				tokens.CacheRead += u.Cache.Read
				tokens.CacheWrite += u.Cache.Write
			}
		}
	})
	return r.session(events, toolCalls, turns, tokens, "", messages)
}

// openCodeTurns are a session's steps from OpenCode's JSON events: text, tool
// calls with their input, output and exit status, and errors.
func openCodeTurns(stdout []byte) []Turn {
	var turns []Turn
	jsonLines(stdout, func(line []byte) {
		var ev openCodeEvent
		if json.Unmarshal(line, &ev) != nil {
			return
		}
		switch {
		case ev.Type == "error":
			turns = append(turns, Turn{Role: "tool", Tool: "error", Result: strings.TrimSpace(string(ev.Error))})
		case ev.Part == nil:
		case ev.Type == "text" && ev.Part.Text != "":
			turns = append(turns, Turn{Role: "assistant", Text: ev.Part.Text})
		case ev.Type == "tool_use" && ev.Part.State != nil:
			st := ev.Part.State
			r := newRouting()
			openCodeToolRouting(r, ev.Part.Tool, st.Input)
			t := Turn{Role: "tool", Tool: ev.Part.Tool, Input: toolInput(st.Input), Result: st.Output, Loads: loads(r)}
			if st.Status == "error" {
				t.Result = st.Error
			}
			if st.Metadata != nil && st.Metadata.Exit != nil {
				code := *st.Metadata.Exit
				t.ExitCode = &code
				if code != 0 {
					t.Result = strings.TrimRight(t.Result, "\n") + "\n(exit " + strconv.Itoa(code) + ")"
				}
			}
			turns = append(turns, t)
		}
	})
	return turns
}
