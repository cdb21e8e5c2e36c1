package agent

import "github.com/skillgate/skillgate/pipeline/grade"

// CommandRanPrefix starts a command agent's stderr line that reports a
// shell command it ran ("skillgate: ran COMMAND"), as its routing lines
// report what it opened: trajectory checks read them as reported.
const CommandRanPrefix = "skillgate: ran "

// Calls reads the calls of a finished session from its stored output, for
// the trajectory checks: every tool call in order, each shell command with
// its command line and, where told, its exit status; and how it is known.
// The JSON transcripts of Claude Code, Codex, OpenCode, Pi and Gemini CLI are observed (unobservable
// when the output holds no JSON event at all); a command agent's
// "skillgate: ran" lines are reported.
func Calls(kind string, stdout, stderr []byte, replies []string) grade.Trajectory {
	t := grade.Trajectory{Calls: []grade.ToolCall{}, Evidence: grade.EvidenceUnobservable}
	switch kind {
	case ClaudeCode, Codex, OpenCode, Pi, Gemini:
		if hasJSONLine(stdout) {
			t.Evidence = grade.EvidenceObserved
		}
	case Command:
		t.Evidence = grade.EvidenceReported
	default:
		return t
	}
	for _, turn := range SessionTurns(kind, stdout, stderr, replies) {
		if turn.Role != "tool" || turn.Tool == "skillgate" || turn.Tool == "error" {
			continue
		}
		c := grade.ToolCall{Tool: turn.Tool, Input: turn.Input, ExitCode: turn.ExitCode}
		if isShell(kind, turn.Tool) {
			c.Command = turn.Input
		}
		t.Calls = append(t.Calls, c)
	}
	return t
}

// isShell reports whether a kind's tool runs shell commands.
func isShell(kind, tool string) bool {
	switch kind {
	case ClaudeCode:
		return tool == "Bash"
	case OpenCode, Pi:
		return tool == "bash"
	case Gemini:
		return tool == "run_shell_command"
	}
	return tool == "shell"
}

// hasJSONLine reports whether out holds a JSON object line: a transcript
// to read calls from.
func hasJSONLine(out []byte) bool {
	found := false
	jsonLines(out, func([]byte) { found = true })
	return found
}
