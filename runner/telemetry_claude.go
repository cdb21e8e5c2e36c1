package runner

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
)

func init() {
	parsers["claude-code"] = parseClaude
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

// jsonLines calls f with each line of out that is a JSON object; other lines, such as a
// last line cut short by a crash, are skipped.
func jsonLines(out []byte, f func(line []byte)) {
	for _, l := range bytes.Split(out, []byte("\n")) {
		l = bytes.TrimSpace(l)
		if len(l) < 2 || l[0] != '{' || !json.Valid(l) {
			continue
		}
		f(l)
	}
}

// parseClaude reads Claude Code's stream-json output. The answer, turns and tokens come
// from the final result event; without one (a crash), the answer is the text of the last
// assistant message and turns and tokens are unknown. Skill events: a Skill tool call is
// observed; a Read of .claude/skills/NAME/SKILL.md, or a Bash command naming it, is
// inferred. Built-in skills listed in the init event are not routing.
func parseClaude(stdout, _ []byte) (string, Telemetry) {
	r := newRouting()
	var (
		result    *claudeEvent
		model     string
		version   string   // the CLI's, as its init event says
		lastMsg   string   // id of the last assistant message with text
		lastText  []string // its text blocks
		toolCalls int
		seenTool  = map[string]bool{}
		events    int
	)
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
						lastMsg, lastText = ev.Message.ID, nil
					}
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
	t := r.telemetry()
	if events == 0 {
		return "", t
	}
	t.ToolCalls = &toolCalls
	answer := strings.Join(lastText, "\n")
	if result != nil {
		if result.Result != nil {
			answer = *result.Result
		}
		t.Turns = result.NumTurns
		if u := result.Usage; u != nil {
			t.Tokens = &grade.Tokens{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite}
		}
		if model == "" && len(result.ModelUsage) > 0 {
			model = slices.Sorted(maps.Keys(result.ModelUsage))[0]
		}
	}
	t.Model, t.AgentVersion = model, version
	return answer, t
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

// routing collects skill and reference events, keeping the strongest evidence per name.
type routing struct {
	skills, refs map[string]string
}

func newRouting() *routing {
	return &routing{skills: map[string]string{}, refs: map[string]string{}}
}

var evidenceRank = map[string]int{
	grade.EvidenceObserved: 4, grade.EvidenceInferred: 3,
	grade.EvidenceReported: 2, grade.EvidenceUnobservable: 1,
}

func stronger(m map[string]string, name, ev string) {
	if evidenceRank[ev] > evidenceRank[m[name]] {
		m[name] = ev
	}
}

func (r *routing) skill(name, ev string) { stronger(r.skills, name, ev) }

// file records a read of the file rest inside the skill folder name: SKILL.md is the
// skill (inferred), any other file a reference NAME/rest (inferred).
func (r *routing) file(name, rest string) {
	if rest == "SKILL.md" {
		stronger(r.skills, name, grade.EvidenceInferred)
	} else {
		stronger(r.refs, name+"/"+rest, grade.EvidenceInferred)
	}
}

func (r *routing) telemetry() Telemetry {
	t := Telemetry{Skills: []grade.RoutingEvent{}, References: []grade.RoutingEvent{}}
	for _, n := range slices.Sorted(maps.Keys(r.skills)) {
		t.Skills = append(t.Skills, grade.RoutingEvent{Name: n, Evidence: r.skills[n]})
	}
	for _, n := range slices.Sorted(maps.Keys(r.refs)) {
		t.References = append(t.References, grade.RoutingEvent{Name: n, Evidence: r.refs[n]})
	}
	return t
}

// skillFile splits a path inside a skill folder (ROOT/NAME/REST, where ROOT is one of
// roots, the last occurrence wins) into the skill's name and the file's path in it.
// Folders, hidden skill folders such as Codex's built-in .system, and paths that leave
// the folder are not skill files.
func skillFile(p string, roots []string) (name, rest string, ok bool) {
	at, root := -1, ""
	for _, r := range roots {
		if i := strings.LastIndex(p, r); i > at && (i == 0 || strings.HasSuffix(p[:i], "/") || r[0] == '/' || r[0] == '$') {
			at, root = i, r
		}
	}
	if at < 0 {
		return "", "", false
	}
	name, rest, ok = strings.Cut(p[at+len(root):], "/")
	if !ok || name == "" || strings.HasPrefix(name, ".") || rest == "" || strings.HasSuffix(rest, "/") {
		return "", "", false
	}
	for _, el := range strings.Split(rest, "/") {
		if el == ".." || el == "." || el == "" {
			return "", "", false
		}
	}
	return name, rest, true
}

// skillPathsInCommand finds the skill files a shell command names, as [name, rest] pairs.
// It does not parse the shell: a path is a run of characters that are not blanks,
// quotes or shell operators, and it counts when it lies inside a skill root.
func skillPathsInCommand(cmd string, roots []string) [][2]string {
	var out [][2]string
	fields := strings.FieldsFunc(cmd, func(r rune) bool {
		return strings.ContainsRune(" \t\r\n'\"`;|&<>()", r)
	})
	for _, f := range fields {
		if name, rest, ok := skillFile(f, roots); ok {
			out = append(out, [2]string{name, rest})
		}
	}
	return out
}
