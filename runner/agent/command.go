package agent

import (
	"bytes"
	"maps"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
)

// command runs any program in any image, named by the suite; it reaches
// its model, if it calls one, at $SKILLGATE_MODEL_URL with the cell's
// dummy key in $SKILLGATE_MODEL_KEY. It takes its prompt from
// $SKILLGATE_PROMPT_FILE when the prompt is too large for its command line.
var command = Kind{Env: commandEnv, Parse: parseCommand}

// commandEnv names the gateway and the cell's dummy key.
func commandEnv(_, token string) []string {
	return []string{"SKILLGATE_MODEL_URL=" + ModelURL, "SKILLGATE_MODEL_KEY=" + token}
}

// parseCommand: a command agent's stdout is its answer (each turn's stdout
// a message, the last turn's the answer); its stderr lines
// "skillgate: opened skill NAME" and "skillgate: read NAME/PATH" report
// routing. A read of NAME/SKILL.md is the skill itself, as opening it is,
// not a reference: each file read counts once.
func parseCommand(stdout, stderr []byte) Session {
	t := Telemetry{Skills: []grade.RoutingEvent{}, References: []grade.RoutingEvent{}}
	skills, refs := map[string]bool{}, map[string]bool{}
	// Every line counts, however long the ones around it: the transcript is already in
	// memory, so it is split in place rather than scanned with a bounded buffer.
	for _, raw := range bytes.Split(stderr, []byte("\n")) {
		line := strings.TrimSpace(string(raw))
		if name, ok := strings.CutPrefix(line, "skillgate: opened skill "); ok && name != "" {
			skills[strings.TrimSpace(name)] = true
		} else if ref, ok := strings.CutPrefix(line, "skillgate: read "); ok && ref != "" {
			ref = strings.TrimSpace(ref)
			name, rest, ok := strings.Cut(ref, "/")
			if !ok || name == "" {
				continue
			}
			skills[name] = true
			if rest != "SKILL.md" {
				refs[ref] = true
			}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(skills)) {
		t.Skills = append(t.Skills, grade.RoutingEvent{Name: n, Evidence: grade.EvidenceReported})
	}
	for _, n := range slices.Sorted(maps.Keys(refs)) {
		t.References = append(t.References, grade.RoutingEvent{Name: n, Evidence: grade.EvidenceReported})
	}
	msgs := plainTurns(stdout)
	return Session{Answer: msgs[len(msgs)-1], Telemetry: t, Messages: msgs}
}
