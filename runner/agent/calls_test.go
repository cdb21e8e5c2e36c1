package agent

import (
	"testing"

	"github.com/skillgate/skillgate/pipeline/grade"
)

// TestCalls reads the calls of real transcripts for the trajectory checks:
// Claude Code's tool calls by name (a Read and a Write, no command), Codex's
// shell commands with their exit codes, a command agent's reported
// commands; output with no transcript is unobservable.
func TestCalls(t *testing.T) {
	c := Calls(ClaudeCode, readTranscript(t, "claude-code-read-write.jsonl"), nil, nil)
	if c.Evidence != grade.EvidenceObserved || len(c.Calls) != 2 || c.Calls[0].Tool != "Read" || c.Calls[1].Tool != "Write" || c.Calls[0].Command != "" {
		t.Errorf("claude: %+v", c)
	}
	x := Calls(Codex, readTranscript(t, "codex-exec-read-write.jsonl"), nil, nil)
	if x.Evidence != grade.EvidenceObserved || len(x.Calls) != 2 {
		t.Fatalf("codex: %+v", x)
	}
	for _, call := range x.Calls {
		if call.Tool != "shell" || call.Command == "" || call.ExitCode == nil || *call.ExitCode != 0 {
			t.Errorf("codex call %+v, want a shell command that exited 0", call)
		}
	}
	m := Calls(Command, []byte("done"), []byte("skillgate: opened skill s\nskillgate: ran ./gradlew test\nnoise\n"), nil)
	if m.Evidence != grade.EvidenceReported || len(m.Calls) != 1 || m.Calls[0].Command != "./gradlew test" {
		t.Errorf("command: %+v", m)
	}
	if u := Calls(ClaudeCode, []byte("crashed before any event"), nil, nil); u.Evidence != grade.EvidenceUnobservable {
		t.Errorf("no transcript: %+v", u)
	}
}
