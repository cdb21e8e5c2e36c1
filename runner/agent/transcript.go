package agent

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
)

// Telemetry is what an agent's transcript tells about its session.
type Telemetry = grade.CellTelemetry

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

// session is what a CLI's JSON events told: with no event read, only the
// routing (none); else the counts, tokens and model the events gave, and the
// last message as the answer.
func (r *routing) session(events, toolCalls, turns int, tokens *grade.Tokens, model string, messages []string) Session {
	t := r.telemetry()
	if events == 0 {
		return Session{Telemetry: t}
	}
	t.ToolCalls, t.Turns, t.Tokens, t.Model = &toolCalls, &turns, tokens, model
	var answer string
	if len(messages) > 0 {
		answer = messages[len(messages)-1]
	}
	return Session{Answer: answer, Telemetry: t, Messages: messages}
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
