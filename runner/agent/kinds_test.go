package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/grade"
)

// Sessions of the real OpenCode 1.18.33 and Pi 0.73.1 CLIs against a stand-in model
// that loaded the skill s (OpenCode's skill tool; Pi's read of .pi/skills/s/SKILL.md),
// then ran `cat README.md`, then answered DONE-ANSWER: three model steps of 11 input
// and 5 output tokens each.
func TestOpenCodeAndPiTranscripts(t *testing.T) {
	for _, tc := range []struct {
		kind, file, evidence, skillTool string
	}{
		{OpenCode, "opencode-skill-bash.jsonl", grade.EvidenceObserved, "skill"},
		{Pi, "pi-read-bash.jsonl", grade.EvidenceInferred, "read"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			out, err := os.ReadFile(filepath.Join("testdata", "transcripts", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			s := ParseSession(tc.kind, out, nil)
			tel := s.Telemetry
			if s.Answer != "DONE-ANSWER" || len(s.Messages) != 1 {
				t.Errorf("answer %q, messages %q", s.Answer, s.Messages)
			}
			if len(tel.Skills) != 1 || tel.Skills[0] != (grade.RoutingEvent{Name: "s", Evidence: tc.evidence}) || len(tel.References) != 0 {
				t.Errorf("skills %v, references %v", tel.Skills, tel.References)
			}
			if tel.Turns == nil || *tel.Turns != 3 || tel.ToolCalls == nil || *tel.ToolCalls != 2 {
				t.Errorf("turns %v, tool calls %v", tel.Turns, tel.ToolCalls)
			}
			if tel.Tokens == nil || *tel.Tokens != (grade.Tokens{Input: 33, Output: 15}) {
				t.Errorf("tokens %+v", tel.Tokens)
			}
			calls := Calls(tc.kind, out, nil, nil)
			if calls.Evidence != grade.EvidenceObserved || len(calls.Calls) != 2 {
				t.Fatalf("calls %+v", calls)
			}
			if c := calls.Calls[0]; c.Tool != tc.skillTool || c.Command != "" {
				t.Errorf("first call %+v", c)
			}
			if c := calls.Calls[1]; c.Tool != "bash" || c.Command != "cat README.md" || c.ExitCode == nil || *c.ExitCode != 0 {
				t.Errorf("second call %+v", c)
			}
			turns := Turns(tc.kind, out, nil)
			if len(turns) != 3 || len(turns[0].Loads) != 1 || turns[0].Loads[0].Name != "s" ||
				!strings.Contains(turns[0].Result, "The answer is 42.") || turns[1].Result != "readme\n" || turns[2].Text != "DONE-ANSWER" {
				b, _ := json.MarshalIndent(turns, "", " ")
				t.Errorf("turns %s", b)
			}
			// Cut short by a crash: what came before still reads.
			cut := ParseSession(tc.kind, out[:len(out)/2], nil)
			if len(cut.Telemetry.Skills) != 1 || cut.Answer != "" {
				t.Errorf("cut: skills %v, answer %q", cut.Telemetry.Skills, cut.Answer)
			}
			if empty := ParseSession(tc.kind, []byte("not json\n"), nil); empty.Telemetry.Turns != nil || empty.Telemetry.Tokens != nil {
				t.Errorf("no events: %+v", empty.Telemetry)
			}
		})
	}
}

// A read or a command naming a skill's file in any folder the agent scans is that
// skill (or its reference); a path outside them is nothing.
func TestOpenCodeAndPiSkillRoots(t *testing.T) {
	r := newRouting()
	openCodeToolRouting(r, "read", json.RawMessage(`{"filePath":"/workspace/.claude/skills/a/SKILL.md"}`))
	openCodeToolRouting(r, "read", json.RawMessage(`{"filePath":"/home/agent/.config/opencode/skill/b/SKILL.md"}`))
	openCodeToolRouting(r, "bash", json.RawMessage(`{"command":"cat .opencode/skills/c/ref/x.md"}`))
	openCodeToolRouting(r, "read", json.RawMessage(`{"filePath":"/workspace/docs/SKILL.md"}`))
	piToolRouting(r, "read", json.RawMessage(`{"path":"/home/agent/.pi/agent/skills/d/SKILL.md"}`))
	piToolRouting(r, "bash", json.RawMessage(`{"command":"sed -n 1,5p .agents/skills/e/SKILL.md"}`))
	tel := r.telemetry()
	var got []string
	for _, ev := range append(tel.Skills, tel.References...) {
		got = append(got, ev.Name+"="+ev.Evidence)
	}
	want := "a=inferred b=inferred d=inferred e=inferred c/ref/x.md=inferred"
	if strings.Join(got, " ") != want {
		t.Errorf("got %s\nwant %s", strings.Join(got, " "), want)
	}
}

// OpenCode's configuration points Anthropic's provider at the gateway and declares the
// model; Pi's declares a provider of its own there and makes it the default.
func TestOpenCodeAndPiFiles(t *testing.T) {
	var oc struct {
		Model    string `json:"model"`
		Small    string `json:"small_model"`
		Provider struct {
			Anthropic struct {
				Options map[string]string         `json:"options"`
				Models  map[string]map[string]any `json:"models"`
			} `json:"anthropic"`
		} `json:"provider"`
	}
	files := openCodeFiles("m-1")
	if err := json.Unmarshal(files[Home+"/.config/opencode/opencode.json"], &oc); err != nil {
		t.Fatal(err)
	}
	a := oc.Provider.Anthropic
	if oc.Model != "anthropic/m-1" || oc.Small != oc.Model || a.Options["baseURL"] != ModelURL+"/v1" || a.Models["m-1"] == nil {
		t.Errorf("opencode.json %+v", oc)
	}
	var models struct {
		Providers map[string]struct {
			BaseURL string           `json:"baseUrl"`
			API     string           `json:"api"`
			Models  []map[string]any `json:"models"`
		} `json:"providers"`
	}
	var settings map[string]string
	files = piFiles("m-1")
	if err := json.Unmarshal(files[Home+"/.pi/agent/models.json"], &models); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(files[Home+"/.pi/agent/settings.json"], &settings); err != nil {
		t.Fatal(err)
	}
	p := models.Providers[piProvider]
	if p.BaseURL != ModelURL || p.API != "anthropic-messages" || len(p.Models) != 1 || p.Models[0]["id"] != "m-1" ||
		settings["defaultProvider"] != piProvider || settings["defaultModel"] != "m-1" {
		t.Errorf("models.json %+v, settings.json %v", models, settings)
	}
}

// A session of the real Gemini CLI 0.61.0 on the scripted model (TestGeminiEndToEnd's
// forced cell, its answer split in two deltas as a model streams it): the skill s
// activated with activate_skill, `cat README.md` run, then the answer.
func TestGeminiTranscript(t *testing.T) {
	out, err := os.ReadFile(filepath.Join("testdata", "transcripts", "gemini-activate-shell.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	s := ParseSession(Gemini, out, nil)
	tel := s.Telemetry
	if s.Answer != "ANSWER-42, as the skill says: A fixture." || len(s.Messages) != 1 || tel.Model != "gemini-2.5-pro" {
		t.Errorf("answer %q, messages %q, model %q", s.Answer, s.Messages, tel.Model)
	}
	if len(tel.Skills) != 1 || tel.Skills[0] != (grade.RoutingEvent{Name: "s", Evidence: grade.EvidenceObserved}) || len(tel.References) != 0 {
		t.Errorf("skills %v, references %v", tel.Skills, tel.References)
	}
	if tel.Turns == nil || *tel.Turns != 3 || tel.ToolCalls == nil || *tel.ToolCalls != 2 {
		t.Errorf("turns %v, tool calls %v", tel.Turns, tel.ToolCalls)
	}
	if tel.Tokens == nil || *tel.Tokens != (grade.Tokens{Input: 27800, Output: 130}) {
		t.Errorf("tokens %+v", tel.Tokens)
	}
	calls := Calls(Gemini, out, nil, nil)
	if calls.Evidence != grade.EvidenceObserved || len(calls.Calls) != 2 || calls.Calls[0].Tool != "activate_skill" || calls.Calls[0].Command != "" {
		t.Fatalf("calls %+v", calls)
	}
	if c := calls.Calls[1]; c.Tool != "run_shell_command" || c.Command != "cat README.md" || c.ExitCode == nil || *c.ExitCode != 0 {
		t.Errorf("second call %+v", c)
	}
	turns := Turns(Gemini, out, nil)
	if len(turns) != 3 || len(turns[0].Loads) != 1 || turns[0].Loads[0].Name != "s" ||
		!strings.Contains(turns[0].Result, "Skill **s** activated") || turns[1].Result != "A fixture." || turns[2].Text != s.Answer {
		b, _ := json.MarshalIndent(turns, "", " ")
		t.Errorf("turns %s", b)
	}
	// A read of SKILL.md, or a command naming a file of a skill folder, is inferred.
	r := newRouting()
	geminiToolRouting(r, "read_file", json.RawMessage(`{"file_path":"/workspace/.agents/skills/a/SKILL.md"}`))
	geminiToolRouting(r, "run_shell_command", json.RawMessage(`{"command":"cat /home/agent/.gemini/skills/b/ref/x.md"}`))
	got := r.telemetry()
	if len(got.Skills) != 1 || got.Skills[0] != (grade.RoutingEvent{Name: "a", Evidence: grade.EvidenceInferred}) ||
		len(got.References) != 1 || got.References[0].Name != "b/ref/x.md" {
		t.Errorf("skills %v, references %v", got.Skills, got.References)
	}
	if empty := ParseSession(Gemini, []byte("not json\n"), nil); empty.Telemetry.Turns != nil || empty.Telemetry.Tokens != nil {
		t.Errorf("no events: %+v", empty.Telemetry)
	}
}
