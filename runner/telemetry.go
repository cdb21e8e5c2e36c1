package runner

import (
	"bytes"
	"maps"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
)

// Telemetry is what an agent's transcript tells about its session.
type Telemetry = grade.CellTelemetry

// Transcript parsers by agent kind: they return the final answer and the
// telemetry of a finished session.
var parsers = map[string]func(stdout, stderr []byte) (string, Telemetry){
	"command": parseCommand,
}

// ParseTranscript reads an agent's final answer and telemetry from its
// output, by agent kind.
func ParseTranscript(kind string, stdout, stderr []byte) (string, Telemetry) {
	if p, ok := parsers[kind]; ok {
		return p(stdout, stderr)
	}
	return string(stdout), Telemetry{Skills: []grade.RoutingEvent{}, References: []grade.RoutingEvent{}}
}

// parseCommand: a command agent's stdout is its answer; its stderr lines
// "skillgate: opened skill NAME" and "skillgate: read NAME/PATH" report
// routing. A read of NAME/SKILL.md is the skill itself, as opening it is,
// not a reference: each file read counts once.
func parseCommand(stdout, stderr []byte) (string, Telemetry) {
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
	return string(stdout), t
}
