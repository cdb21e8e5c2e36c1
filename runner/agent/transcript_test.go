package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/suite/suitetest"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// The transcripts in testdata/transcripts are real Claude Code 2.1.332 and Codex 0.171.0
// output (copied from ../shared/samples/agent-transcripts).

func readTranscript(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "transcripts", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func intp(n int) *int { return &n }

type transcriptWant struct {
	answer     string
	turns      *int
	toolCalls  *int
	tokens     *grade.Tokens
	model      string
	skills     []grade.RoutingEvent
	references []grade.RoutingEvent
}

func checkTelemetry(t *testing.T, answer string, tel Telemetry, w transcriptWant) {
	t.Helper()
	if answer != w.answer {
		t.Errorf("answer = %q, want %q", answer, w.answer)
	}
	if !reflect.DeepEqual(tel.Turns, w.turns) {
		t.Errorf("turns = %v, want %v", deref(tel.Turns), deref(w.turns))
	}
	if !reflect.DeepEqual(tel.ToolCalls, w.toolCalls) {
		t.Errorf("tool calls = %v, want %v", deref(tel.ToolCalls), deref(w.toolCalls))
	}
	if !reflect.DeepEqual(tel.Tokens, w.tokens) {
		t.Errorf("tokens = %+v, want %+v", tel.Tokens, w.tokens)
	}
	if tel.Model != w.model {
		t.Errorf("model = %q, want %q", tel.Model, w.model)
	}
	if w.skills == nil {
		w.skills = []grade.RoutingEvent{}
	}
	if w.references == nil {
		w.references = []grade.RoutingEvent{}
	}
	if !reflect.DeepEqual(tel.Skills, w.skills) {
		t.Errorf("skills = %+v, want %+v", tel.Skills, w.skills)
	}
	if !reflect.DeepEqual(tel.References, w.references) {
		t.Errorf("references = %+v, want %+v", tel.References, w.references)
	}
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestTranscriptSamples(t *testing.T) {
	tests := []struct {
		kind, file string
		want       transcriptWant
	}{
		{"claude-code", "claude-code-read-write.jsonl", transcriptWant{
			answer: "MOCK-FINAL: read input.txt and wrote output.txt.",
			turns:  intp(3), toolCalls: intp(2), model: "claude-opus-5-5",
			tokens: &grade.Tokens{Input: 37410, Output: 75},
		}},
		{"claude-code", "claude-code-skill-activation.jsonl", transcriptWant{
			answer: "MOCK-FINAL: skill demo was invoked.",
			turns:  intp(3), toolCalls: intp(1), model: "claude-opus-5-5",
			tokens: &grade.Tokens{Input: 24888, Output: 50},
			skills: []grade.RoutingEvent{{Name: "demo", Evidence: grade.EvidenceObserved}},
		}},
		{"codex", "codex-exec-read-write.jsonl", transcriptWant{
			answer: "MOCK-FINAL: read input.txt and wrote output.txt.",
			turns:  intp(1), toolCalls: intp(2),
			tokens: &grade.Tokens{Input: 31210, Output: 60},
		}},
		{"codex", "codex-exec-skill-read.jsonl", transcriptWant{
			answer: "MOCK-FINAL: read the demo skill.",
			turns:  intp(1), toolCalls: intp(1),
			tokens: &grade.Tokens{Input: 20717, Output: 40},
			skills: []grade.RoutingEvent{{Name: "demo", Evidence: grade.EvidenceInferred}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			answer, tel := ParseTranscript(tc.kind, readTranscript(t, tc.file), nil)
			checkTelemetry(t, answer, tel, tc.want)
		})
	}
}

// A crash cuts the transcript anywhere: no offset may panic, and a transcript cut inside
// its last line (the result event, the turn's usage) has no tokens.
func TestTranscriptTruncated(t *testing.T) {
	for _, tc := range []struct{ kind, file, answer string }{
		{"claude-code", "claude-code-read-write.jsonl", "MOCK-FINAL: read input.txt and wrote output.txt."},
		{"claude-code", "claude-code-skill-activation.jsonl", "MOCK-FINAL: skill demo was invoked."},
		{"codex", "codex-exec-read-write.jsonl", "MOCK-FINAL: read input.txt and wrote output.txt."},
		{"codex", "codex-exec-skill-read.jsonl", "MOCK-FINAL: read the demo skill."},
	} {
		t.Run(tc.file, func(t *testing.T) {
			full := readTranscript(t, tc.file)
			for n := 0; n <= len(full); n += 3 {
				ParseTranscript(tc.kind, full[:n], nil)
			}
			body := bytes.TrimRight(full, "\n")
			last := bytes.LastIndexByte(body, '\n')
			cut := body[:last+1+(len(body)-last)/2]
			answer, tel := ParseTranscript(tc.kind, cut, nil)
			if tel.Tokens != nil {
				t.Errorf("tokens = %+v, want nil", tel.Tokens)
			}
			// The last assistant text survives the cut (Claude Code repeats the answer
			// in the result event; Codex's message comes before the turn's usage).
			if answer != tc.answer {
				t.Errorf("answer = %q, want %q", answer, tc.answer)
			}
			if tc.kind == "claude-code" && tel.Turns != nil {
				t.Errorf("turns = %d without a result event, want nil", *tel.Turns)
			}
			if tel.ToolCalls == nil {
				t.Error("tool calls not counted")
			}
		})
	}
	for _, kind := range []string{"claude-code", "codex"} {
		answer, tel := ParseTranscript(kind, []byte("{\"type\":\"ass"), nil)
		if answer != "" || tel.Tokens != nil || tel.Turns != nil || tel.ToolCalls != nil || tel.Skills == nil || tel.References == nil {
			t.Errorf("%s: a cut first line gave %q %+v", kind, answer, tel)
		}
	}
}

func TestClaudeRouting(t *testing.T) {
	lines := []string{
		`{"type":"system","subtype":"init","model":"m1","skills":["demo","verify","debug"]}`,
		`{"type":"assistant","message":{"id":"a","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/workspace/.claude/skills/alpha/SKILL.md"}}]}}`,
		`{"type":"assistant","message":{"id":"a","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/workspace/.claude/skills/alpha/SKILL.md"}}]}}`,
		`{"type":"assistant","message":{"id":"b","content":[{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"/workspace/.claude/skills/alpha/refs/api.md"}}]}}`,
		`{"type":"assistant","message":{"id":"c","content":[{"type":"tool_use","id":"t3","name":"Skill","input":{"skill":"beta"}}]}}`,
		`{"type":"assistant","message":{"id":"d","content":[{"type":"tool_use","id":"t4","name":"Read","input":{"file_path":"/home/agent/.claude/skills/beta/SKILL.md"}}]}}`,
		`{"type":"assistant","message":{"id":"e","content":[{"type":"tool_use","id":"t5","name":"Bash","input":{"command":"cat .claude/skills/gamma/SKILL.md | head -5"}}]}}`,
		`{"type":"assistant","message":{"id":"f","content":[{"type":"tool_use","id":"t6","name":"Read","input":{"file_path":"/workspace/notclaude/skills/x/SKILL.md"}},{"type":"tool_use","id":"t7","name":"Skill","input":{"skill":"verify"}}]}}`,
		`{"type":"assistant","message":{"id":"g","content":[{"type":"text","text":"part one"},{"type":"text","text":"part two"}]}}`,
	}
	answer, tel := ParseTranscript(ClaudeCode, []byte(strings.Join(lines, "\n")), nil)
	checkTelemetry(t, answer, tel, transcriptWant{
		answer: "part one\npart two", toolCalls: intp(7), model: "m1",
		skills: []grade.RoutingEvent{
			{Name: "alpha", Evidence: grade.EvidenceInferred},
			{Name: "beta", Evidence: grade.EvidenceObserved},
			{Name: "gamma", Evidence: grade.EvidenceInferred},
			{Name: "verify", Evidence: grade.EvidenceObserved},
		},
		references: []grade.RoutingEvent{{Name: "alpha/refs/api.md", Evidence: grade.EvidenceInferred}},
	})
}

func TestClaudePermissionDenials(t *testing.T) {
	if got := ClaudePermissionDenials(readTranscript(t, "claude-code-read-write.jsonl")); len(got) != 0 || got == nil {
		t.Errorf("denials = %#v, want empty", got)
	}
	out := `{"type":"result","subtype":"success","result":"done","num_turns":2,"permission_denials":[` +
		`{"tool_name":"Write","tool_use_id":"t1","tool_input":{"file_path":"/workspace/out.txt","content":"x"}},` +
		`{"tool_name":"Bash","tool_use_id":"t2","tool_input":{"command":"rm -rf /tmp/x"}},` +
		`{"tool_name":"WebFetch","tool_use_id":"t3","tool_input":{"url": "http://x"}}]}`
	want := []string{"Write /workspace/out.txt", "Bash rm -rf /tmp/x", `WebFetch {"url":"http://x"}`}
	if got := ClaudePermissionDenials([]byte(out)); !reflect.DeepEqual(got, want) {
		t.Errorf("denials = %q, want %q", got, want)
	}
	// The model comes from modelUsage when there is no init event.
	if _, tel := ParseTranscript(ClaudeCode, []byte(`{"type":"result","result":"x","modelUsage":{"m2":{}}}`), nil); tel.Model != "m2" {
		t.Errorf("model = %q, want m2", tel.Model)
	}
}

func TestCodexRouting(t *testing.T) {
	cmd := func(c string) string {
		return `{"type":"item.completed","item":{"id":"i","type":"command_execution","command":` + jsonString(c) + `,"exit_code":0,"status":"completed"}}`
	}
	lines := []string{
		`{"type":"thread.started","thread_id":"x"}`,
		`{"type":"turn.started","model":"gpt-x"}`,
		cmd(`/bin/bash -lc 'cat /home/agent/.codex/skills/.system/skill-creator/SKILL.md'`),
		cmd(`/bin/bash -lc "sed -n '1,80p' .agents/skills/alpha/SKILL.md"`),
		cmd(`/bin/bash -lc 'cat $CODEX_HOME/skills/beta/SKILL.md && cat /workspace/.agents/skills/alpha/scripts/run.sh'`),
		cmd(`/bin/bash -lc 'ls .agents/skills/gamma/ && cat docs/skills/delta/SKILL.md'`),
		`{"type":"item.completed","item":{"id":"j","type":"file_change","changes":[]}}`,
		`{"type":"item.completed","item":{"id":"k","type":"agent_message","text":"first"}}`,
		`{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":4,"cache_write_input_tokens":1,"output_tokens":2}}`,
		`{"type":"item.completed","item":{"id":"l","type":"agent_message","text":"second"}}`,
		`{"type":"turn.completed","usage":{"input_tokens":20,"cached_input_tokens":8,"output_tokens":3}}`,
	}
	answer, tel := ParseTranscript(Codex, []byte(strings.Join(lines, "\n")), nil)
	checkTelemetry(t, answer, tel, transcriptWant{
		answer: "second", turns: intp(2), toolCalls: intp(5), model: "gpt-x",
		// Input without the cached tokens, which the Responses API counts in it.
		tokens: &grade.Tokens{Input: 18, Output: 5, CacheRead: 12, CacheWrite: 1},
		skills: []grade.RoutingEvent{
			{Name: "alpha", Evidence: grade.EvidenceInferred},
			{Name: "beta", Evidence: grade.EvidenceInferred},
		},
		references: []grade.RoutingEvent{{Name: "alpha/scripts/run.sh", Evidence: grade.EvidenceInferred}},
	})
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

// TestSkillFileCountedOnce: an agent that opens its skill and reads its
// SKILL.md and one reference loaded two files, and SKILL.md is no
// reference: through each agent's parser, the grade's routing and the
// report's files_loaded, every file read counts once.
func TestSkillFileCountedOnce(t *testing.T) {
	root := suitetest.WriteSuite(t, map[string]string{
		"s/suite.cue": `package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
)

schema.#Suite & {
	name: "filesloaded"
	skills: demo: path: "demo"
	agent: agents.command & {command: ["true"]}
	trials: 1
	arms: forced: {skills: ["demo"], activation: "forced"}
	cases: a: {prompt: "Go.", routing: {skills: required: ["demo"], references: required: ["demo/references/format.md"]}}
	policy: uplift: {}
}
`,
		"s/demo/SKILL.md":             "---\nname: demo\ndescription: Demo.\n---\n# Demo\n",
		"s/demo/references/format.md": "# Format\n",
	})
	p, err := plan.CompileDir(filepath.Join(root, "s"))
	if err != nil {
		t.Fatal(suite.PrintError(err, root))
	}
	tests := []struct {
		kind           string
		stdout, stderr []byte
		files          map[string]int
		refs           []grade.RoutingEvent
	}{
		{"command", []byte("done"), []byte("skillgate: opened skill demo\nskillgate: read demo/SKILL.md\nskillgate: read demo/references/format.md\nskillgate: read demo/SKILL.md\n"),
			map[string]int{"demo/SKILL.md": 1, "demo/references/format.md": 1},
			[]grade.RoutingEvent{{Name: "demo/references/format.md", Evidence: grade.EvidenceReported}}},
		// The real CLIs' samples: Claude Code through its Skill tool, Codex
		// by reading SKILL.md with a shell command.
		{"claude-code", readTranscript(t, "claude-code-skill-activation.jsonl"), nil, map[string]int{"demo/SKILL.md": 1}, nil},
		{"codex", readTranscript(t, "codex-exec-skill-read.jsonl"), nil, map[string]int{"demo/SKILL.md": 1}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			answer, tel := ParseTranscript(tc.kind, tc.stdout, tc.stderr)
			if len(tel.Skills) != 1 || tel.Skills[0].Name != "demo" {
				t.Errorf("skills %+v, want demo once", tel.Skills)
			}
			if want := tc.refs; !reflect.DeepEqual(tel.References, append([]grade.RoutingEvent{}, want...)) {
				t.Errorf("references %+v, want %+v", tel.References, want)
			}
			r, err := grade.GradeCell(p, p.Cases[0], p.Cells[0], grade.GradeInput{Status: grade.StatusCompleted, Answer: answer, Telemetry: tel})
			if err != nil {
				t.Fatal(err)
			}
			if r.Routing.Skills.TP != 1 || r.Routing.Skills.FP != 0 || r.Routing.References.FP != 0 {
				t.Errorf("routing %+v: SKILL.md counted as a reference", r.Routing)
			}
			rep := verdict.BuildReport(p, []grade.CellResult{r})
			if got := rep.Arms[0].FilesLoaded; !reflect.DeepEqual(got, tc.files) {
				t.Errorf("files loaded %v, want %v", got, tc.files)
			}
		})
	}
}

// A command agent's routing lines count after a stderr line longer than any buffer.
func TestCommandRoutingAfterLongLine(t *testing.T) {
	stderr := strings.Repeat("x", 3<<20) + "\nskillgate: opened skill s\nskillgate: read s/references/a.md\n"
	_, tel := ParseTranscript(Command, nil, []byte(stderr))
	if len(tel.Skills) != 1 || tel.Skills[0].Name != "s" || len(tel.References) != 1 || tel.References[0].Name != "s/references/a.md" {
		t.Errorf("skills %v, references %v", tel.Skills, tel.References)
	}
}

// TestTurnsSamples reads the real CLIs' sample sessions as the report shows them: each
// message and tool call in order, a tool's result beside its call, and the skill a call
// loaded marked with its evidence.
func TestTurnsSamples(t *testing.T) {
	type step struct{ role, tool, input, result string }
	tests := []struct {
		kind, file string
		want       []step
		loads      map[int]grade.RoutingEvent
	}{
		{"claude-code", "claude-code-skill-activation.jsonl", []step{
			{"assistant", "", "", ""},
			{"tool", "Skill", "demo", "Launching skill: demo"},
			{"assistant", "", "", ""},
		}, map[int]grade.RoutingEvent{1: {Name: "demo", Evidence: grade.EvidenceObserved}}},
		{"codex", "codex-exec-read-write.jsonl", []step{
			{"tool", "error", "", "Model metadata"},
			{"tool", "shell", "/bin/bash -lc 'cat input.txt'", "hello from input.txt (codex)"},
			{"tool", "shell", "/bin/bash -lc \"printf", ""},
			{"assistant", "", "", ""},
		}, nil},
		{"codex", "codex-exec-skill-read.jsonl", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			turns := Turns(tc.kind, readTranscript(t, tc.file), nil)
			if len(turns) == 0 {
				t.Fatal("no turns")
			}
			if tc.want != nil && len(turns) != len(tc.want) {
				t.Fatalf("%d turns, want %d: %+v", len(turns), len(tc.want), turns)
			}
			for i, w := range tc.want {
				g := turns[i]
				if g.Role != w.role || g.Tool != w.tool || !strings.HasPrefix(g.Input, w.input) || !strings.Contains(g.Result, w.result) {
					t.Errorf("turn %d = %+v, want %+v", i, g, w)
				}
				if l, ok := tc.loads[i]; ok && (len(g.Loads) != 1 || g.Loads[0] != l) {
					t.Errorf("turn %d loads %+v, want %+v", i, g.Loads, l)
				}
			}
			last := turns[len(turns)-1]
			if last.Role != "assistant" || !strings.HasPrefix(last.Text, "MOCK-FINAL") {
				t.Errorf("last turn %+v, want the final answer", last)
			}
			if tc.file == "codex-exec-skill-read.jsonl" {
				found := false
				for _, tr := range turns {
					for _, l := range tr.Loads {
						found = found || (l.Name == "demo" && l.Evidence == grade.EvidenceInferred)
					}
				}
				if !found {
					t.Errorf("no turn loads the demo skill: %+v", turns)
				}
			}
		})
	}
	cmd := Turns("command", []byte("answer"), []byte("working\nskillgate: opened skill cl\nskillgate: read cl/references/format.md\n"))
	if len(cmd) != 2 || cmd[0].Loads[0].Name != "cl" || cmd[1].Loads[len(cmd[1].Loads)-1].Name != "cl/references/format.md" {
		t.Errorf("command turns %+v", cmd)
	}
}

// TestSessionOfTwoTurns reads the output of real two-turn sessions (the cell's driver ran
// the CLI, then its resume command with the user's reply; the scripted model answered,
// asked for the report): the answer is the last turn's report answer, the messages are
// every turn's, the declared skill is reported evidence (plugin-qualified in the report),
// and tokens are the session's as the gateway counted them: Claude Code reports each
// invocation's own, Codex a resumed thread's total so far.
func TestSessionOfTwoTurns(t *testing.T) {
	for _, tc := range []struct {
		kind, file string
		messages   []string
		tokens     grade.Tokens
		turns      int
	}{
		// Claude Code asked the model again for its structured output after the
		// question came as text: the question is two messages.
		{ClaudeCode, "claude-code-two-turns-report.jsonl", []string{"Which colour do you want?", "Which colour do you want?", "Painted it blue."}, grade.Tokens{Input: 300, Output: 60}, 4},
		{Codex, "codex-exec-two-turns-report.jsonl", []string{"Which colour do you want?", "Painted it blue."}, grade.Tokens{Input: 200, Output: 40}, 2},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			s := ApplyReport(ParseSession(tc.kind, readTranscript(t, tc.file), nil), "summary", "skills_used")
			if s.Answer != "Painted it blue." || s.Telemetry.ReportError != "" {
				t.Errorf("answer %q, report error %q", s.Answer, s.Telemetry.ReportError)
			}
			if strings.Join(s.Messages, "|") != strings.Join(tc.messages, "|") {
				t.Errorf("messages %q\nwant %q", s.Messages, tc.messages)
			}
			if want := []grade.RoutingEvent{{Name: "s", Evidence: grade.EvidenceReported}}; !reflect.DeepEqual(s.Telemetry.Skills, want) {
				t.Errorf("skills %v, want %v", s.Telemetry.Skills, want)
			}
			if s.Telemetry.Tokens == nil || *s.Telemetry.Tokens != tc.tokens || s.Telemetry.Turns == nil || *s.Telemetry.Turns != tc.turns {
				t.Errorf("tokens %v turns %v, want %v and %d", s.Telemetry.Tokens, s.Telemetry.Turns, tc.tokens, tc.turns)
			}
		})
	}
}

// TestPlainTurnsAndReports: a plain transcript splits at the cell's turn marker, the last
// turn's stdout the answer; a final answer that is not the report asked for says why and
// stays as it was; reported names are canonicalized.
func TestPlainTurnsAndReports(t *testing.T) {
	s := ParseSession(Command, []byte("Which colour?\n\n"+TurnMarker+"\nGreen it is.\n"), nil)
	if s.Answer != "Green it is.\n" || len(s.Messages) != 2 || s.Messages[0] != "Which colour?\n" {
		t.Errorf("answer %q, messages %q", s.Answer, s.Messages)
	}
	for answer, why := range map[string]string{
		"Done.":               "the final answer is not a JSON object",
		`{"skills_used": []}`: `the final answer has no text field "summary"`,
		`{"summary": "Done.", "skills_used": "a"}`: `the final answer has no list of skill names "skills_used"`,
	} {
		got := ApplyReport(Session{Answer: answer}, "summary", "skills_used")
		if got.Answer != answer || got.Telemetry.ReportError != why {
			t.Errorf("%s: answer %q, error %q, want %q", answer, got.Answer, got.Telemetry.ReportError, why)
		}
	}
	for id, want := range map[string]string{"chrisbanes-skills:compose": "compose", " compose ": "compose", "$compose": "compose", "/compose": "compose", "a:b:compose": "compose"} {
		if got := CanonicalSkill(id); got != want {
			t.Errorf("CanonicalSkill(%q) = %q, want %q", id, got, want)
		}
	}
	// A skill the transcript shows with stronger evidence keeps it.
	s = Session{Answer: `{"summary": "x", "skills_used": ["p:a", "b"]}`, Telemetry: Telemetry{Skills: []grade.RoutingEvent{{Name: "a", Evidence: grade.EvidenceObserved}}}}
	got := ApplyReport(s, "summary", "skills_used").Telemetry.Skills
	if want := []grade.RoutingEvent{{Name: "a", Evidence: grade.EvidenceObserved}, {Name: "b", Evidence: grade.EvidenceReported}}; !reflect.DeepEqual(got, want) {
		t.Errorf("skills %v, want %v", got, want)
	}
}

// TestSessionTurnsShowReplies: the report's view of a two-turn session holds the user's
// reply between the turns' steps, for Claude Code and Codex alike.
func TestSessionTurnsShowReplies(t *testing.T) {
	for _, tc := range []struct{ kind, file string }{
		{ClaudeCode, "claude-code-two-turns-report.jsonl"},
		{Codex, "codex-exec-two-turns-report.jsonl"},
	} {
		turns := SessionTurns(tc.kind, readTranscript(t, tc.file), nil, []string{"Blue."})
		at := slices.IndexFunc(turns, func(tr Turn) bool { return tr.Role == "user" })
		if at <= 0 || at == len(turns)-1 || turns[at].Text != "Blue." || slices.ContainsFunc(turns[at+1:], func(tr Turn) bool { return tr.Role == "user" }) {
			t.Errorf("%s: turns %+v, want one user turn, the reply, between the two turns' steps", tc.kind, turns)
		}
	}
}
