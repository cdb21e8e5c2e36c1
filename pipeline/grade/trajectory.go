package grade

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/skillgate/skillgate/pipeline/suite"
)

// CheckTrajectory is the kind of a check over what the agent did: the
// commands it ran and the tools it called.
const CheckTrajectory = "trajectory"

// ToolCall is one call the agent made, as its transcript tells it: the
// tool's name, its input as the report shows it (the command, the path,
// else its JSON), and, for a shell command, the command line and its exit
// status when the transcript tells it.
type ToolCall struct {
	Tool  string `json:"tool"`
	Input string `json:"input"`
	// Command is the command line of a shell command; "" for any other call.
	Command string `json:"command,omitempty"`
	// ExitCode is the command's exit status; nil when not told.
	ExitCode *int `json:"exitCode,omitempty"`
}

// Trajectory is what a cell's session tells of its calls, and how we know.
type Trajectory struct {
	Calls []ToolCall
	// Evidence is observed (a structured transcript), reported (the agent's
	// own lines) or unobservable (no transcript to read).
	Evidence string
}

// trajectoryChecks evaluates one trajectory assertion over the session's
// calls: one check, labelled with the evidence level of the session.
func trajectoryChecks(a suite.Assertion, t Trajectory) CheckResult {
	ch := CheckResult{Name: trajectoryName(a), Kind: CheckTrajectory, Evidence: t.Evidence}
	if t.Evidence == "" || t.Evidence == EvidenceUnobservable {
		ch.Evidence = EvidenceUnobservable
		ch.Detail = "unobservable: the agent's transcript tells no calls"
		return ch
	}
	switch {
	case a.Commands != nil:
		ch.Negative = a.Commands.None || a.Commands.NotMatches != nil
		ch.Passed, ch.Detail = commandsCheck(*a.Commands, t.Calls)
	case a.Tool != nil:
		ch.Negative = !a.Tool.Called
		ch.Passed, ch.Detail = toolCheck(*a.Tool, t.Calls)
	case a.Sequence != nil:
		ch.Passed, ch.Detail = sequenceCheck(a.Sequence, t.Calls)
	}
	return ch
}

// trajectoryName names a trajectory check in reports.
func trajectoryName(a suite.Assertion) string {
	if a.Name != "" {
		return a.Name
	}
	switch {
	case a.Commands != nil:
		cc := a.Commands
		var parts []string
		if cc.None {
			parts = append(parts, "none")
		}
		if cc.Matches != nil {
			parts = append(parts, fmt.Sprintf("matches %q", *cc.Matches))
		}
		if cc.Succeeded {
			parts = append(parts, "succeeded")
		}
		if cc.NotMatches != nil {
			parts = append(parts, fmt.Sprintf("notMatches %q", *cc.NotMatches))
		}
		if cc.Unless != nil {
			parts = append(parts, fmt.Sprintf("unless %q", *cc.Unless))
		}
		return "commands " + strings.Join(parts, " ")
	case a.Tool != nil:
		n := "tool " + a.Tool.Name + argsName(a.Tool.Args)
		if !a.Tool.Called {
			n += " not called"
		}
		return n
	default:
		var steps []string
		for _, st := range a.Sequence {
			if st.Command != "" {
				steps = append(steps, fmt.Sprintf("command %q", st.Command))
			} else {
				steps = append(steps, "tool "+st.Tool+argsName(st.Args))
			}
		}
		return "sequence " + strings.Join(steps, ", then ")
	}
}

func argsName(a *suite.ArgsCheck) string {
	if a == nil {
		return ""
	}
	var parts []string
	if a.Matches != nil {
		parts = append(parts, fmt.Sprintf("matches %q", *a.Matches))
	}
	if a.NotMatches != nil {
		parts = append(parts, fmt.Sprintf("notMatches %q", *a.NotMatches))
	}
	return " args " + strings.Join(parts, " ")
}

// commandMatches reports whether re finds the command line, or the line
// with its quotes removed (so `python3 'x.py' run` matches "x\.py run").
func commandMatches(re *regexp.Regexp, line string) bool {
	return re.MatchString(line) || re.MatchString(strings.NewReplacer(`'`, "", `"`, "").Replace(line))
}

// commandParts cuts a command line at the shell's separators (;, &, | and
// newlines), without parsing quotes: the parts an unless exemption reads.
func commandParts(line string) []string {
	return strings.FieldsFunc(line, func(r rune) bool { return strings.ContainsRune(";&|\n", r) })
}

func commandsCheck(cc suite.CommandCheck, calls []ToolCall) (bool, string) {
	var cmds []ToolCall
	for _, c := range calls {
		if c.Command != "" {
			cmds = append(cmds, c)
		}
	}
	if cc.None {
		if len(cmds) > 0 {
			return false, fmt.Sprintf("%d commands ran, the first: %s", len(cmds), clip(strings.TrimSpace(cmds[0].Command), 200))
		}
		return true, ""
	}
	if cc.NotMatches != nil {
		re := regexp.MustCompile(*cc.NotMatches) // compiled by vet
		var unless *regexp.Regexp
		if cc.Unless != nil {
			unless = regexp.MustCompile(*cc.Unless)
		}
		for _, c := range cmds {
			if !commandMatches(re, c.Command) {
				continue
			}
			if unless == nil {
				return false, "ran: " + clip(strings.TrimSpace(c.Command), 200)
			}
			for _, part := range commandParts(c.Command) {
				if commandMatches(re, part) && !commandMatches(unless, part) {
					return false, "ran: " + clip(strings.TrimSpace(c.Command), 200)
				}
			}
		}
	}
	if cc.Matches != nil {
		re := regexp.MustCompile(*cc.Matches)
		ran := 0
		for _, c := range cmds {
			if cc.Succeeded && (c.ExitCode == nil || *c.ExitCode != 0) {
				continue
			}
			ran++
			if commandMatches(re, c.Command) {
				return true, ""
			}
		}
		what := "command"
		if cc.Succeeded {
			what = "successful command"
		}
		return false, fmt.Sprintf("no %s matches (%d ran)", what, ran)
	}
	return true, ""
}

// fits reports whether a call is of a tool whose whole name matches name
// and whose input fits args.
func fits(c ToolCall, name string, args *suite.ArgsCheck) bool {
	if !regexp.MustCompile(suite.ToolNamePattern(name)).MatchString(c.Tool) {
		return false
	}
	if args == nil {
		return true
	}
	if args.Matches != nil && !regexp.MustCompile(*args.Matches).MatchString(c.Input) {
		return false
	}
	if args.NotMatches != nil && regexp.MustCompile(*args.NotMatches).MatchString(c.Input) {
		return false
	}
	return true
}

func toolCheck(tc suite.ToolCheck, calls []ToolCall) (bool, string) {
	for _, c := range calls {
		if fits(c, tc.Name, tc.Args) {
			if tc.Called {
				return true, ""
			}
			return false, "called: " + c.Tool + " " + clip(strings.TrimSpace(c.Input), 200)
		}
	}
	if tc.Called {
		return false, fmt.Sprintf("no such call (%d calls)", len(calls))
	}
	return true, ""
}

func sequenceCheck(steps []suite.Step, calls []ToolCall) (bool, string) {
	i := 0
	for _, c := range calls {
		if i == len(steps) {
			break
		}
		st := steps[i]
		ok := false
		if st.Command != "" {
			ok = c.Command != "" && commandMatches(regexp.MustCompile(st.Command), c.Command)
		} else {
			ok = fits(c, st.Tool, st.Args)
		}
		if ok {
			i++
		}
	}
	if i == len(steps) {
		return true, ""
	}
	return false, fmt.Sprintf("step %d of %d not seen in order", i+1, len(steps))
}
