package suite

import (
	"fmt"
	"strings"
)

// Markers the calibration's none check asks the agent to answer with.
const (
	CalibrationYes = "SKILLGATE-YES"
	CalibrationNo  = "SKILLGATE-NO"
)

// calibrationPreamble opens every calibration prompt.
const calibrationPreamble = "This is a calibration check of your setup, not a task: change no file.\n\n"

// CalibrationShellPrompt is the shell check's prompt: run cmd and reply
// with its output. The prompts live here, beside the suite a scripted
// model answers them from, so vet can tell which of its rules they reach.
func CalibrationShellPrompt(cmd string) string {
	return calibrationPreamble +
		"Run this shell command with your shell tool: `" + cmd + "`\n" +
		"Then reply with the output it printed, exactly."
}

// CalibrationNonePrompt is the none check's prompt: is a skill of these
// names (quoted, joined by "or") available?
func CalibrationNonePrompt(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	list := strings.Join(quoted, " or ")
	return calibrationPreamble +
		"Is a skill named " + list + " available to you in this session? Look only at the skills you have been given; do not install, create or search for skills.\n" +
		"Reply with exactly one word: " + CalibrationYes + " if such a skill is available, " + CalibrationNo + " if none is."
}

// CalibrationSkillPrompt is the skill check's prompt: quote the line of
// skill name's SKILL.md that starts with prefix.
func CalibrationSkillPrompt(name, prefix string) string {
	return calibrationPreamble +
		fmt.Sprintf("Open the SKILL.md file of your skill named %q and find the line that starts with %q.\n", name, prefix) +
		"Reply with that whole line, exactly as it is written in the file. If you cannot read the file, say so; do not guess."
}
