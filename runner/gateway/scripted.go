package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/suite"
)

// scriptedModel answers model requests from a Script, in the wire format the agent speaks:
// Anthropic Messages (POST .../messages, streamed or not) for Claude Code, OpenCode and
// Pi, OpenAI Responses (POST .../responses) for Codex, Gemini's generateContent and
// streamGenerateContent for the Gemini CLI (scripted_gemini.go) and OpenAI-compatible
// Chat Completions (scripted_chat.go). It has no state of its own: the gateway passes
// the cell's call number, from which every id is derived, so a cell's transcript is the
// same on every run.
type scriptedModel struct {
	script *suite.Script
	model  string
	prompt []*regexp.Regexp // each rule's promptMatches, nil where unset
}

// scriptedNoMatch is the reply when no rule holds.
const scriptedNoMatch = "scripted model: no rule matched"

func newScriptedModel(s *suite.Script) (*scriptedModel, error) {
	if s == nil {
		return nil, errors.New("scripted provider without a script")
	}
	if len(s.Rules) == 0 {
		return nil, errors.New("script has no rules")
	}
	prompt := make([]*regexp.Regexp, len(s.Rules))
	for i, r := range s.Rules {
		if len(r.Reply) == 0 {
			return nil, fmt.Errorf("script rule %d: empty reply", i)
		}
		if r.When != nil && r.When.PromptMatches != nil {
			re, err := regexp.Compile(*r.When.PromptMatches)
			if err != nil {
				return nil, fmt.Errorf("script rule %d: promptMatches: %w", i, err)
			}
			prompt[i] = re
		}
		for j, b := range r.Reply {
			if (b.Text == nil) == (b.Tool == "") {
				return nil, fmt.Errorf("script rule %d, reply block %d: want text or a tool call, exactly one", i, j)
			}
		}
	}
	m := s.Model
	if m == "" {
		m = "scripted"
	}
	return &scriptedModel{script: s, model: m, prompt: prompt}, nil
}

// scriptRequest is what rules look at in a request.
type scriptRequest struct {
	text           string // system, messages or input items, tool calls and tool results
	prompt         string // the user's own text before the first model turn or tool result
	lastToolResult string // the text of the last tool result
	toolResults    int
	skills         map[string]bool
	stream         bool
}

// pick returns the first rule whose conditions all hold, or nil.
func (s *scriptedModel) pick(req *scriptRequest) *suite.ScriptRule {
	for i := range s.script.Rules {
		r := &s.script.Rules[i]
		if w := r.When; w != nil {
			if w.Contains != nil && !strings.Contains(req.text, *w.Contains) {
				continue
			}
			if w.NotContains != nil && strings.Contains(req.text, *w.NotContains) {
				continue
			}
			if w.SkillListed != nil && !req.skills[*w.SkillListed] {
				continue
			}
			if w.ToolResults != nil && req.toolResults != *w.ToolResults {
				continue
			}
			if re := s.prompt[i]; re != nil && !re.MatchString(req.prompt) {
				continue
			}
		}
		return r
	}
	return nil
}

// lastToolResultVar in a text block is replaced by the last tool result's text.
const lastToolResultVar = "{{lastToolResult}}"

// reply is the rule's reply, or the no-match text.
func (s *scriptedModel) reply(req *scriptRequest) ([]suite.ScriptBlock, suite.ScriptUsage) {
	if r := s.pick(req); r != nil {
		blocks := slices.Clone(r.Reply) // the rule is shared: replace in a copy
		for i, b := range blocks {
			if b.Text != nil && strings.Contains(*b.Text, lastToolResultVar) {
				t := strings.ReplaceAll(*b.Text, lastToolResultVar, req.lastToolResult)
				blocks[i].Text = &t
			}
		}
		return blocks, r.Usage
	}
	t := scriptedNoMatch
	return []suite.ScriptBlock{{Text: &t}}, suite.ScriptUsage{Input: 100, Output: 20} // the schema's defaults
}

// serve answers one request; call numbers the cell's model calls from 1.
func (s *scriptedModel) serve(w http.ResponseWriter, r *http.Request, body []byte, call int) {
	p := r.URL.Path
	switch {
	case r.Method != http.MethodPost:
		w.WriteHeader(http.StatusOK)
	case isGeminiPath(p):
		s.geminiModelCall(w, p, body, call)
	case strings.HasSuffix(p, "/chat/completions"):
		s.chatModelCall(w, body, call)
	case strings.HasSuffix(p, "/messages/count_tokens"):
		req, err := parseAnthropicRequest(body)
		if err != nil {
			gatewayError(w, "anthropic", http.StatusBadRequest, "invalid_request_error", "scripted model: "+err.Error())
			return
		}
		writeJSON(w, map[string]int{"input_tokens": len(req.text) / 4})
	case strings.HasSuffix(p, "/messages"):
		req, err := parseAnthropicRequest(body)
		if err != nil {
			gatewayError(w, "anthropic", http.StatusBadRequest, "invalid_request_error", "scripted model: "+err.Error())
			return
		}
		blocks, usage := s.reply(req)
		s.anthropic(w, req.stream, blocks, usage, call)
	case strings.HasSuffix(p, "/responses"):
		req, err := parseResponsesRequest(body)
		if err != nil {
			gatewayError(w, "openai", http.StatusBadRequest, "invalid_request_error", "scripted model: "+err.Error())
			return
		}
		blocks, usage := s.reply(req)
		s.responses(w, req.stream, blocks, usage, call)
	default:
		gatewayError(w, "anthropic", http.StatusNotFound, "not_found_error", "scripted model: no endpoint "+p)
	}
}

// --- reading requests ---

// textCollector gathers a request's text and its prompt, and counts its tool results.
type textCollector struct {
	parts          []string
	toolResults    int
	lastToolResult string
	prompt         []string
	promptDone     bool // a model turn or a tool result came: the prompt is complete
}

func (c *textCollector) add(s string) {
	if s != "" {
		c.parts = append(c.parts, s)
	}
}

// contentBlock is a content block or an input item of either API.
type contentBlock struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Text      *string         `json:"text"`
	Content   json.RawMessage `json:"content"`   // Anthropic tool_result; Responses message
	Input     json.RawMessage `json:"input"`     // Anthropic tool_use; Responses custom tool call
	Name      string          `json:"name"`      // tool calls
	Arguments *string         `json:"arguments"` // Responses function_call
	Output    json.RawMessage `json:"output"`    // Responses *_call_output
}

// content takes a string or a list of blocks or items.
func (c *textCollector) content(raw json.RawMessage) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			c.add(s)
		}
		return
	}
	var blocks []contentBlock
	if raw[0] == '[' && json.Unmarshal(raw, &blocks) == nil {
		for i := range blocks {
			c.block(&blocks[i])
		}
		return
	}
	var b contentBlock
	if raw[0] == '{' && json.Unmarshal(raw, &b) == nil {
		c.block(&b)
	}
}

func (c *textCollector) block(b *contentBlock) {
	switch {
	case isToolResult(b):
		var r textCollector
		r.content(b.Content)
		r.content(b.Output)
		c.toolResults += 1 + r.toolResults
		c.lastToolResult = toolOutput(strings.Join(r.parts, "\n"))
		c.parts = append(c.parts, r.parts...)
		return
	case b.Type == "tool_use" || b.Type == "server_tool_use" || strings.HasSuffix(b.Type, "_call"):
		c.add(b.Name)
		if b.Arguments != nil {
			c.add(*b.Arguments)
		}
		if len(b.Input) > 0 && string(b.Input) != "null" {
			if b.Input[0] == '"' {
				c.content(b.Input)
			} else {
				c.add(string(b.Input))
			}
		}
		return
	case b.Type == "reasoning" || b.Type == "thinking" || b.Type == "redacted_thinking" || b.Type == "image":
		return
	}
	if b.Text != nil {
		c.add(*b.Text)
	}
	c.content(b.Content)
}

var (
	// systemReminder is a note Claude Code adds to a tool result for the model, such as
	// the tokens left; it is not the tool's output.
	systemReminder = regexp.MustCompile(`(?s)<system-reminder>.*?</system-reminder>`)
	// codexExecHeader heads the result of Codex's exec_command: a chunk id and a wall
	// time that change from run to run, the exit code, then the output.
	codexExecHeader = regexp.MustCompile(`^Chunk ID: [^\n]*\nWall time: [^\n]*\n(?:[A-Z][^\n]*\n)*?Output:\n`)
)

// toolOutput is a tool result's text as a scripted answer quotes it: without Claude
// Code's system reminders or the header of Codex's exec_command, trimmed.
func toolOutput(s string) string {
	s = systemReminder.ReplaceAllString(s, "")
	if loc := codexExecHeader.FindStringIndex(s); loc != nil {
		s = s[loc[1]:]
	}
	return strings.TrimSpace(s)
}

func isToolResult(b *contentBlock) bool {
	return b.Type == "tool_result" || strings.HasSuffix(b.Type, "_call_output")
}

// message reads one message or input item. The user's text counts as the prompt until
// the first model turn, tool call or tool result, except what the agent adds in a tag
// (<system-reminder>, <environment_context>, <skill>, ...) or as AGENTS.md instructions.
func (c *textCollector) message(role string, raw json.RawMessage) {
	if role != "user" {
		if role != "" && role != "system" && role != "developer" {
			c.promptDone = true
		}
		return
	}
	raw = bytes.TrimSpace(raw)
	var blocks []contentBlock
	switch {
	case len(raw) > 0 && raw[0] == '"':
		var s string
		json.Unmarshal(raw, &s)
		blocks = []contentBlock{{Type: "text", Text: &s}}
	case len(raw) > 0 && raw[0] == '[':
		json.Unmarshal(raw, &blocks)
	}
	for i := range blocks {
		b := &blocks[i]
		if c.promptDone {
			return
		}
		if isToolResult(b) {
			c.promptDone = true
			return
		}
		if b.Text == nil || (b.Type != "text" && b.Type != "input_text") {
			continue
		}
		t := strings.TrimSpace(*b.Text)
		if t != "" && !strings.HasPrefix(t, "<") && !strings.HasPrefix(t, "# AGENTS.md instructions") {
			c.prompt = append(c.prompt, t)
		}
	}
}

func (c *textCollector) request(stream bool) *scriptRequest {
	req := &scriptRequest{
		text:           strings.Join(c.parts, "\n"),
		prompt:         strings.Join(c.prompt, "\n"),
		lastToolResult: c.lastToolResult,
		toolResults:    c.toolResults,
		skills:         map[string]bool{},
		stream:         stream,
	}
	for _, p := range c.parts {
		for _, name := range listedSkills(p) {
			req.skills[name] = true
		}
	}
	return req
}

// parseAnthropicRequest reads a Messages request body.
func parseAnthropicRequest(body []byte) (*scriptRequest, error) {
	var m struct {
		Stream   bool            `json:"stream"`
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("read messages request: %w", err)
	}
	var c textCollector
	c.content(m.System)
	for _, msg := range m.Messages {
		c.message(msg.Role, msg.Content)
		c.content(msg.Content)
	}
	return c.request(m.Stream), nil
}

// parseResponsesRequest reads a Responses request body.
func parseResponsesRequest(body []byte) (*scriptRequest, error) {
	var m struct {
		Stream       bool            `json:"stream"`
		Instructions json.RawMessage `json:"instructions"`
		Input        json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("read responses request: %w", err)
	}
	var c textCollector
	c.content(m.Instructions)
	in := bytes.TrimSpace(m.Input)
	var items []contentBlock
	switch {
	case len(in) > 0 && in[0] == '"':
		c.message("user", in) // the whole input is the prompt
		c.content(in)
	case len(in) > 0 && in[0] == '[' && json.Unmarshal(in, &items) == nil:
		for i := range items {
			it := &items[i]
			switch {
			case it.Type == "message" || (it.Type == "" && it.Role != ""):
				c.message(it.Role, it.Content)
			case isToolResult(it) || strings.HasSuffix(it.Type, "_call"):
				c.promptDone = true // a tool call or its result
			}
			// Any other item (reasoning, the additional_tools Codex sends
			// before the user's turn) is not a turn: the prompt goes on.
			c.block(it)
		}
	default:
		c.content(in)
	}
	return c.request(m.Stream), nil
}

var (
	// "- NAME: description" in a skills listing.
	skillItem = regexp.MustCompile(`(?m)^- ([^\s:` + "`" + `]+):`)
	// Codex's "(file: r3/NAME/SKILL.md)".
	skillPath = regexp.MustCompile(`\br[0-9]+/([^/\s]+)/SKILL\.md\b`)
	// "<name>NAME</name>" in an <available_skills> listing.
	skillName = regexp.MustCompile(`<name>\s*([^<\s]+)\s*</name>`)
)

// listedSkills returns the skills a text lists to the model. Claude Code lists them after
// "The following skills are available for use with the Skill tool:" as "- NAME: ..." lines
// up to a blank line; Codex between <skills_instructions> tags, as "- NAME: ... (file:
// rN/NAME/SKILL.md)"; OpenCode between <available_skills> tags, each as <name>NAME</name>.
func listedSkills(text string) []string {
	var names []string
	rest := text
	for {
		i := strings.Index(rest, "skills are available")
		if i < 0 {
			break
		}
		rest = rest[i:]
		nl := strings.IndexByte(rest, '\n')
		if nl < 0 {
			break
		}
		rest = rest[nl+1:]
		list := strings.TrimLeft(rest, "\n")
		if end := strings.Index(list, "\n\n"); end >= 0 {
			list = list[:end]
		}
		for _, m := range skillItem.FindAllStringSubmatch(list, -1) {
			names = append(names, m[1])
		}
	}
	rest = text
	for {
		i := strings.Index(rest, "<skills_instructions>")
		if i < 0 {
			break
		}
		rest = rest[i+len("<skills_instructions>"):]
		sec := rest
		if end := strings.Index(sec, "</skills_instructions>"); end >= 0 {
			sec = sec[:end]
		}
		if j := strings.Index(sec, "### Available skills"); j >= 0 {
			for _, m := range skillItem.FindAllStringSubmatch(sec[j:], -1) {
				names = append(names, m[1])
			}
		}
		for _, m := range skillPath.FindAllStringSubmatch(sec, -1) {
			names = append(names, m[1])
		}
	}
	rest = text
	for {
		i := strings.Index(rest, "<available_skills>")
		if i < 0 {
			break
		}
		rest = rest[i+len("<available_skills>"):]
		sec := rest
		if end := strings.Index(sec, "</available_skills>"); end >= 0 {
			sec = sec[:end]
		}
		for _, m := range skillName.FindAllStringSubmatch(sec, -1) {
			names = append(names, m[1])
		}
	}
	return names
}

// --- writing replies ---
