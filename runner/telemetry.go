package runner

import (
	"bufio"
	"bytes"
	"maps"
	"slices"
	"strings"
)

// Evidence levels of a routing event, strongest first.
const (
	EvidenceObserved     = "observed"     // a skill tool call
	EvidenceInferred     = "inferred"     // a read of SKILL.md or a reference
	EvidenceReported     = "reported"     // the agent said so
	EvidenceUnobservable = "unobservable" // the adapter cannot tell
)

// RoutingEvent is one skill or reference the agent loaded, with how we know.
type RoutingEvent struct {
	// Name is a skill's installed name, or NAME/PATH for a reference.
	Name     string `json:"name"`
	Evidence string `json:"evidence"`
}

// Tokens are what the provider reported; absent when it reported nothing,
// never zero by default.
type Tokens struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cacheRead"`
	CacheWrite int64 `json:"cacheWrite"`
}

// Telemetry is what an agent's transcript tells about its session,
// normalized across agents. Pointers are nil when the agent did not say.
type Telemetry struct {
	Skills     []RoutingEvent `json:"skills"`
	References []RoutingEvent `json:"references"`
	ToolCalls  *int           `json:"toolCalls,omitempty"`
	Turns      *int           `json:"turns,omitempty"`
	Tokens     *Tokens        `json:"tokens,omitempty"`
	Model      string         `json:"model,omitempty"`
}

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
	return string(stdout), Telemetry{Skills: []RoutingEvent{}, References: []RoutingEvent{}}
}

// parseCommand: a command agent's stdout is its answer; its stderr lines
// "skillgate: opened skill NAME" and "skillgate: read NAME/PATH" report
// routing.
func parseCommand(stdout, stderr []byte) (string, Telemetry) {
	t := Telemetry{Skills: []RoutingEvent{}, References: []RoutingEvent{}}
	skills, refs := map[string]bool{}, map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(stderr))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if name, ok := strings.CutPrefix(line, "skillgate: opened skill "); ok && name != "" {
			skills[strings.TrimSpace(name)] = true
		} else if ref, ok := strings.CutPrefix(line, "skillgate: read "); ok && ref != "" {
			ref = strings.TrimSpace(ref)
			refs[ref] = true
			if name, _, ok := strings.Cut(ref, "/"); ok {
				skills[name] = true
			}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(skills)) {
		t.Skills = append(t.Skills, RoutingEvent{Name: n, Evidence: EvidenceReported})
	}
	for _, n := range slices.Sorted(maps.Keys(refs)) {
		t.References = append(t.References, RoutingEvent{Name: n, Evidence: EvidenceReported})
	}
	return string(stdout), t
}
