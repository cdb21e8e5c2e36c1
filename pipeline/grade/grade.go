package grade

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// GradeInput is what grading a cell needs besides its case.
type GradeInput struct {
	Status string
	Error  string
	Answer string
	// Messages are every assistant message of the session, in order, when
	// the transcript told them apart; nil reads as the answer alone.
	Messages []string
	World    World
	// RunChecks are the results of the case's run: assertions, in order,
	// computed in a container by the runner.
	RunChecks    []CheckResult
	Telemetry    CellTelemetry
	AgentSeconds float64
	TotalSeconds float64
	SkillBytes   int64
	// USD is what the cell's model calls cost, when prices are known.
	USD *float64
	// Collection says why reading the workspace back stopped early, if it did.
	Collection string
	// Trajectory is the session's calls, from the stored transcript, for
	// the trajectory checks.
	Trajectory Trajectory
}

// GradeCell grades one cell deterministically: the case's typed checks,
// its run: checks, its allowed writes, then its routing and cost. The cell
// passes when the agent completed and every check passed; routing never
// fails a cell on its own.
func GradeCell(p *plan.Plan, pc plan.PlanCase, c plan.Cell, in GradeInput) (CellResult, error) {
	r := CellResult{Cell: c.ID, Case: c.Case, Arm: c.Arm, Trial: c.Trial, Rollout: c.Rollout, Grade: c.Grade,
		Status: in.Status, Error: in.Error, Checks: []CheckResult{}, Telemetry: in.Telemetry, Collection: in.Collection}
	if !r.Valid() {
		return r, nil
	}
	run := 0
	for _, a := range pc.Assert {
		switch {
		case a.Run != nil:
			if run >= len(in.RunChecks) {
				return r, fmt.Errorf("grade cell %s: no result for run assertion %d", c.ID, run)
			}
			r.Checks = append(r.Checks, in.RunChecks[run])
			run++
		case a.File != nil:
			checks, err := fileChecks(a, in.World)
			if err != nil {
				return r, fmt.Errorf("grade cell %s: %w", c.ID, err)
			}
			r.Checks = append(r.Checks, checks...)
		case a.Glob != nil:
			checks, err := GlobChecks(a, in.World)
			if err != nil {
				return r, fmt.Errorf("grade cell %s: %w", c.ID, err)
			}
			r.Checks = append(r.Checks, checks...)
		case a.Answer != nil:
			subject, texts := "answer", []string{in.Answer}
			if a.Messages == MessagesAll {
				subject, texts = "assistant messages", in.sessionMessages()
			}
			r.Checks = append(r.Checks, textChecks(CheckAnswer, subject, a.Name, *a.Answer, texts)...)
		case a.Code != nil:
			subject, blocks := "code blocks", CodeBlocks(in.Answer)
			if a.Messages == MessagesAll {
				subject, blocks = "code blocks of the assistant messages", nil
				for _, m := range in.sessionMessages() {
					blocks = append(blocks, CodeBlocks(m)...)
				}
			}
			r.Checks = append(r.Checks, textChecks(CheckCode, subject, a.Name, *a.Code, blocks)...)
		case a.Commands != nil || a.Tool != nil || a.Sequence != nil:
			r.Checks = append(r.Checks, trajectoryChecks(a, in.Trajectory))
		}
	}
	if p.Agent.Report != nil {
		ch := CheckResult{Name: "the final answer is the report asked for", Kind: CheckReport, Passed: in.Telemetry.ReportError == ""}
		ch.Detail = in.Telemetry.ReportError
		r.Checks = append(r.Checks, ch)
	}
	if pc.Writes != nil {
		r.Checks = append(r.Checks, writesCheck(*pc.Writes, in.World.Changes))
	}
	passed := 0
	for _, ch := range r.Checks {
		if ch.Passed {
			passed++
		}
	}
	completed := in.Status == StatusCompleted
	r.Passed = completed && passed == len(r.Checks)
	switch {
	case !completed:
		r.Score = 0
	case len(r.Checks) == 0:
		r.Score = 1
	default:
		r.Score = float64(passed) / float64(len(r.Checks))
	}
	r.Routing = TallyRouting(p, pc, in.Telemetry.Skills, in.Telemetry.References)
	r.Telemetry.OpenedSkill = len(r.Routing.Skills.Observed) > 0 || r.Routing.Skills.Router
	cost, err := changeCost(in.World)
	if err != nil {
		return r, fmt.Errorf("grade cell %s: %w", c.ID, err)
	}
	cost.AgentSeconds, cost.TotalSeconds, cost.SkillBytes, cost.AnswerChars = in.AgentSeconds, in.TotalSeconds, in.SkillBytes, len([]rune(in.Answer))
	cost.USD = in.USD
	r.Cost = cost
	return r, nil
}

// MessagesAll is an assertion's messages value that reads every assistant
// message of the session.
const MessagesAll = "all"

// sessionMessages are the texts a messages: "all" check reads: every
// assistant message, and the final answer when it is not the last of them
// (a structured answer, a transcript that did not tell messages apart).
func (in GradeInput) sessionMessages() []string {
	out := append([]string{}, in.Messages...)
	if len(out) == 0 || out[len(out)-1] != in.Answer {
		out = append(out, in.Answer)
	}
	return out
}

// TallyRouting counts a cell's skill and reference events against case
// pc's expectations. Only the suite's own skills count; the suite's router
// counts neither way (RoutingTally.Router says it was seen).
func TallyRouting(p *plan.Plan, pc plan.PlanCase, skills, refs []RoutingEvent) Routing2 {
	names := installedNames(p)
	router := ""
	if sk, ok := p.Skills[p.Suite.Router]; ok && p.Suite.Router != "" {
		router = sk.Name
	}
	var out Routing2
	var routerSeen bool
	var own []RoutingEvent
	for _, e := range skills {
		if router != "" && e.Name == router {
			routerSeen = true
			continue
		}
		own = append(own, e)
	}
	out.Skills = tally(pc.Routing.Skills, own, func(n string) bool { return names[n] })
	out.Skills.Router = routerSeen
	out.References = tally(pc.Routing.References, refs, func(n string) bool {
		skill, _, _ := strings.Cut(n, "/")
		return names[skill] && skill != router
	})
	return out
}

// installedNames are the names the suite's skills are installed as.
func installedNames(p *plan.Plan) map[string]bool {
	out := map[string]bool{}
	for _, s := range p.Skills {
		out[s.Name] = true
	}
	return out
}

// fileChecks evaluates each condition of a file assertion as its own check.
func fileChecks(a suite.Assertion, w World) ([]CheckResult, error) {
	f := *a.File
	data, exists, err := w.Read(f)
	cut := ""
	if IsCut(err) {
		// The agent left a file past a collection limit: no content to
		// check, and a check that needs content fails saying so.
		cut, data, err = err.Error(), nil, nil
	}
	if err != nil {
		return nil, err
	}
	named := func(cond string) string {
		if a.Name != "" {
			return a.Name + ": " + cond
		}
		return "file " + f + " " + cond
	}
	var out []CheckResult
	if a.Exists != nil {
		ch := CheckResult{Name: named(fmt.Sprintf("exists: %v", *a.Exists)), Kind: CheckFile, Negative: !*a.Exists, Passed: exists == *a.Exists}
		if !ch.Passed {
			ch.Detail = map[bool]string{true: "the file exists", false: "the file does not exist"}[exists]
		}
		out = append(out, ch)
	}
	if a.Unchanged != nil && *a.Unchanged {
		before, existed, err := w.Initial(f)
		if err != nil {
			return nil, err
		}
		ch := CheckResult{Name: named("unchanged"), Kind: CheckFile, Negative: true, Passed: cut == "" && existed == exists && bytes.Equal(before, data)}
		if !ch.Passed {
			ch.Detail = "the file changed"
		}
		out = append(out, ch)
	}
	text := ""
	if exists {
		text = string(data)
	}
	for _, ch := range textChecks(CheckFile, "file "+f, a.Name, a.TextCheck, []string{text}) {
		switch {
		case cut != "":
			ch.Passed, ch.Detail = false, cut
		case !exists && !ch.Negative:
			ch.Passed, ch.Detail = false, "the file does not exist"
		}
		out = append(out, ch)
	}
	for _, cond := range markdownConditions(a) {
		ch := CheckResult{Name: named(cond.name), Kind: CheckFile, Negative: cond.negative}
		switch {
		case cut != "":
			ch.Detail = cut
		case !exists:
			ch.Detail = "the file does not exist"
		default:
			ch.Passed, ch.Detail = cond.holds(text)
			if ch.Passed {
				ch.Detail = ""
			}
		}
		out = append(out, ch)
	}
	return out, nil
}

// textChecks evaluates a TextCheck over texts: positive conditions must
// hold in some text, negative ones in none.
func textChecks(kind, subject, name string, tc suite.TextCheck, texts []string) []CheckResult {
	var out []CheckResult
	add := func(cond, arg string, negative bool, hit func(string) bool) {
		n := fmt.Sprintf("%s %s %q", subject, cond, arg)
		if name != "" {
			n = name + ": " + n
		}
		found := false
		for _, t := range texts {
			if hit(t) {
				found = true
				break
			}
		}
		ch := CheckResult{Name: n, Kind: kind, Negative: strings.HasPrefix(cond, "notContains"), Passed: found != negative}
		if !ch.Passed {
			ch.Detail = map[bool]string{true: "found", false: "not found"}[found]
		}
		out = append(out, ch)
	}
	if tc.Contains != nil {
		add("contains", *tc.Contains, false, func(t string) bool { return strings.Contains(t, *tc.Contains) })
	}
	if tc.NotContains != nil {
		add("notContains", *tc.NotContains, true, func(t string) bool { return strings.Contains(t, *tc.NotContains) })
	}
	if tc.Matches != nil {
		re := regexp.MustCompile(*tc.Matches) // compiled by vet
		add("matches", *tc.Matches, false, re.MatchString)
	}
	if tc.NotMatches != nil {
		re := regexp.MustCompile(*tc.NotMatches)
		add("notMatches", *tc.NotMatches, true, re.MatchString)
	}
	return out
}

// CodeBlocks returns the contents of the fenced code blocks of a Markdown text.
func CodeBlocks(md string) []string {
	var blocks []string
	var cur []string
	fence := ""
	for _, line := range strings.Split(md, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case fence == "" && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")):
			fence = t[:3]
			cur = nil
		case fence != "" && strings.HasPrefix(t, fence):
			blocks = append(blocks, strings.Join(cur, "\n"))
			fence = ""
		case fence != "":
			cur = append(cur, line)
		}
	}
	if fence != "" {
		blocks = append(blocks, strings.Join(cur, "\n"))
	}
	return blocks
}

// writesCheck checks changed paths against the allowed globs; a pattern
// ending in /** allows everything below its folder.
func writesCheck(allowed []string, changes []FileChange) CheckResult {
	var bad []string
	for _, c := range changes {
		if c.Type == TypeDir {
			continue // a folder is not a write; what it held is listed on its own
		}
		ok := false
		for _, g := range allowed {
			if dir, found := strings.CutSuffix(g, "/**"); found && strings.HasPrefix(c.Path, dir+"/") {
				ok = true
			} else if m, _ := path.Match(g, c.Path); m {
				ok = true
			}
		}
		if !ok {
			bad = append(bad, displayPath(c.Path)+" "+c.Kind)
		}
	}
	ch := CheckResult{Name: "writes only [" + strings.Join(allowed, " ") + "]", Kind: CheckWrites, Passed: len(bad) == 0}
	if len(allowed) == 0 {
		ch.Name = "workspace unchanged"
	}
	if !ch.Passed {
		ch.Detail = "not allowed: " + strings.Join(bad, ", ")
	}
	return ch
}

// tally counts observed routing events against expectations; events not
// of the suite (an agent's built-in skills) are ignored but listed.
func tally(exp suite.Expectation, events []RoutingEvent, ofSuite func(string) bool) RoutingTally {
	t := RoutingTally{Observed: []string{}, Ignored: []string{}, ForbiddenSeen: []string{}, Forbidden: len(exp.Forbidden)}
	required := map[string]bool{}
	for _, n := range exp.Required {
		required[n] = true
	}
	seen := map[string]bool{}
	rank := map[string]int{EvidenceObserved: 0, EvidenceInferred: 1, EvidenceReported: 2, EvidenceUnobservable: 3}
	for _, e := range events {
		if seen[e.Name] {
			continue
		}
		seen[e.Name] = true
		if !ofSuite(e.Name) {
			t.Ignored = append(t.Ignored, e.Name)
			continue
		}
		t.Observed = append(t.Observed, e.Name)
		if t.Evidence == "" || rank[e.Evidence] > rank[t.Evidence] {
			t.Evidence = e.Evidence
		}
		switch {
		case required[e.Name]:
			t.TP++
		case slices.Contains(exp.Allowed, e.Name):
			t.Allowed++
		default:
			t.FP++
		}
	}
	for _, n := range exp.Required {
		if !seen[n] {
			t.FN++
		}
	}
	for _, n := range exp.Forbidden {
		if seen[n] {
			t.ForbiddenSeen = append(t.ForbiddenSeen, n)
		}
	}
	return t
}

// changeCost counts changed files and added and deleted lines. Lines are
// compared as multisets per file, so a moved line counts as neither.
func changeCost(w World) (CellCost, error) {
	c := CellCost{}
	for _, ch := range w.Changes {
		if ch.Type == TypeDir {
			continue
		}
		c.ChangedFiles++
		before, err := w.initialState(ch.Path).stream()
		if err != nil {
			return c, err
		}
		after, err := w.finalState(ch.Path).stream()
		if err != nil {
			closeStream(before)
			return c, err
		}
		add, del, err := lineDeltaStream(before, after)
		closeStream(before)
		closeStream(after)
		if err != nil {
			return c, fmt.Errorf("count changed lines of %s: %w", displayPath(ch.Path), err)
		}
		c.LinesAdded += add
		c.LinesDeleted += del
	}
	return c, nil
}

// lineDelta counts lines added and deleted between two texts, as multisets.
func lineDelta(before, after []byte) (added, deleted int) {
	added, deleted, _ = lineDeltaStream(bytes.NewReader(before), bytes.NewReader(after))
	return added, deleted
}

// lineDeltaStream is lineDelta over streams, in memory that grows with the number of
// distinct lines, never with a line's length: lines are kept as hashes. A stream with a
// NUL byte is binary: it has no lines, and both counts are 0.
func lineDeltaStream(before, after io.Reader) (added, deleted int, err error) {
	count := map[uint64]int{}
	binary, err := eachLine(before, func(h uint64) { count[h]++ })
	if err != nil || binary {
		return 0, 0, err
	}
	binary, err = eachLine(after, func(h uint64) {
		if count[h] > 0 {
			count[h]--
		} else {
			added++
		}
	})
	if err != nil || binary {
		return 0, 0, err
	}
	for _, n := range count {
		deleted += n
	}
	return added, deleted, nil
}

// eachLine calls f with the hash of every line of r (a last line without its newline
// counts), and stops saying binary at the first NUL byte.
func eachLine(r io.Reader, f func(uint64)) (binary bool, err error) {
	if r == nil {
		return false, nil
	}
	br := bufio.NewReaderSize(r, 64<<10)
	h := fnv.New64a()
	pending := false
	for {
		chunk, err := br.ReadSlice('\n')
		if bytes.IndexByte(chunk, 0) >= 0 {
			return true, nil
		}
		if len(chunk) > 0 {
			pending = true
			h.Write(bytes.TrimSuffix(chunk, []byte("\n")))
		}
		switch {
		case err == nil:
			f(h.Sum64())
			h.Reset()
			pending = false
		case errors.Is(err, bufio.ErrBufferFull):
			// A long line: hash on.
		case errors.Is(err, io.EOF):
			if pending {
				f(h.Sum64())
			}
			return false, nil
		default:
			return false, err
		}
	}
}

// displayPath is a workspace path as messages show it: quoted when it holds
// anything but printable text, such as a newline or bytes that are not
// UTF-8.
func displayPath(p string) string {
	for _, r := range p {
		if r == utf8RuneError || !unicode.IsPrint(r) {
			return strconv.Quote(p)
		}
	}
	return p
}

const utf8RuneError = '\uFFFD'
