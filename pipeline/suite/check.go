package suite

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"
)

// suiteError is one problem that CUE cannot see, reported like CUE's own:
// a path into the suite, a message, and the positions that caused it.
type suiteError struct {
	path []string
	pos  []token.Pos
	msg  string
}

func (e *suiteError) Position() token.Pos {
	if len(e.pos) == 0 {
		return token.NoPos
	}
	return e.pos[0]
}
func (e *suiteError) InputPositions() []token.Pos {
	if len(e.pos) < 2 {
		return nil
	}
	return e.pos[1:]
}
func (e *suiteError) Error() string                { return e.msg }
func (e *suiteError) Path() []string               { return e.path }
func (e *suiteError) Msg() (string, []interface{}) { return "%s", []interface{}{e.msg} }

// checker collects suite problems with positions taken from the suite value.
type checker struct {
	v        cue.Value
	errs     cueerrors.Error
	fixtures map[string]error
	// regexps holds each assertion's expression compiled once: many
	// cases share one.
	regexps map[string]error
}

// compile compiles an assertion's regular expression, once a vet.
func (c *checker) compile(re string) error {
	err, seen := c.regexps[re]
	if !seen {
		_, err = regexp.Compile(re)
		c.regexps[re] = err
	}
	return err
}

func (c *checker) add(sel []cue.Selector, format string, args ...interface{}) {
	v := c.v.LookupPath(cue.MakePath(sel...))
	var labels []string
	for _, s := range sel {
		labels = append(labels, s.String())
	}
	var pos []token.Pos
	if p := userPos(v); p.IsValid() {
		pos = append(pos, p)
	}
	c.errs = cueerrors.Append(c.errs, &suiteError{path: labels, pos: pos, msg: fmt.Sprintf(format, args...)})
}

func str(s string) cue.Selector { return cue.Str(s) }

// checkSuite checks what CUE cannot: folders on disk, references between
// skills, arms and routing expectations, regular expressions and the shape
// of assertions.
func checkSuite(s *Suite, v cue.Value) cueerrors.Error {
	c := &checker{v: v, fixtures: map[string]error{}, regexps: map[string]error{}}
	if !v.LookupPath(pathArms).Exists() || !v.LookupPath(pathCases).Exists() {
		return nil // CUE reports what is missing
	}
	// Counted in CUE: an arm or case that did not decode is CUE's to report.
	// One that decoded is one there: the count in CUE lists every field.
	if len(s.Arms) == 0 && len(fieldOrder(v.LookupPath(pathArms))) == 0 {
		c.add([]cue.Selector{str("arms")}, "a suite needs at least one arm")
	}
	if len(s.Cases) == 0 && len(fieldOrder(v.LookupPath(pathCases))) == 0 {
		c.add([]cue.Selector{str("cases")}, "a suite needs at least one case")
	}
	// A skill that did not decode still exists: what names it is not wrong,
	// and the names skills install as are then not all known.
	undecoded := map[string]bool{}
	for _, key := range fieldOrder(v.LookupPath(pathSkills)) {
		if _, ok := s.Skills[key]; !ok {
			undecoded[key] = true
		}
	}
	names := map[string]bool{}
	for _, key := range sortedKeys(s.Skills) {
		sk := s.Skills[key]
		names[sk.Name] = true
		sel := []cue.Selector{str("skills"), str(key), str("path")}
		dir, err := s.Resolve(sk.Path)
		if err != nil {
			c.add(sel, "%v", err)
			continue
		}
		if err := checkSkillFolder(dir, s.Root, sk.Name); err != nil {
			c.add(sel, "%v", err)
		}
	}
	for _, name := range sortedKeys(s.Arms) {
		arm := s.Arms[name]
		seen := map[string]string{}
		for i, key := range arm.Skills {
			sel := []cue.Selector{str("arms"), str(name), str("skills"), cue.Index(i)}
			sk, ok := s.Skills[key]
			if !ok && undecoded[key] {
				continue
			}
			if !ok {
				c.add(sel, "arm %s names skill %q, which the suite does not define", name, key)
				continue
			}
			if other, dup := seen[sk.Name]; dup {
				c.add(sel, "arm %s installs two skills as %q (%s and %s)", name, sk.Name, other, key)
			}
			seen[sk.Name] = key
		}
	}
	if len(undecoded) > 0 {
		names = nil // every name passes: the set is not known
	}
	if s.Router != "" {
		if _, ok := s.Skills[s.Router]; !ok && !undecoded[s.Router] {
			c.add([]cue.Selector{str("router")}, "router names skill %q, which the suite does not define", s.Router)
		}
	}
	for _, id := range sortedKeys(s.Cases) {
		checkCase(c, s, id, names, undecoded)
	}
	checkArmTargets(c, s, undecoded)
	checkReplicates(c, s)
	checkAgentTurns(c, s)
	if s.Judge != nil {
		for i, id := range s.Judge.Adjudication.Cases {
			if _, ok := s.Cases[id]; !ok {
				c.add([]cue.Selector{str("judge"), str("adjudication"), str("cases"), cue.Index(i)}, "judge.adjudication.cases names case %q, which the suite does not define", id)
			}
		}
	}
	checkEnvironments(c, s)
	checkLimits(c, s)
	checkSequential(c, s)
	checkReuse(c, s)
	checkScript(c, s.Agent.Script, str("agent"))
	checkScriptReach(c, s)
	if s.Judge != nil {
		checkScript(c, s.Judge.Script, str("judge"))
		if a := s.Judge.Adjudication.Judge; a != nil {
			checkScript(c, a.Script, str("judge"), str("adjudication"), str("judge"))
		}
	}
	return c.errs
}

// checkScript compiles a scripted model's promptMatches expressions as the
// scripted model will, so a bad one fails vet rather than the run.
func checkScript(c *checker, sc *Script, owner ...cue.Selector) {
	if sc == nil {
		return
	}
	for i, r := range sc.Rules {
		if r.When == nil || r.When.PromptMatches == nil {
			continue
		}
		if err := compileRE2(*r.When.PromptMatches); err != nil {
			sel := append(append([]cue.Selector{}, owner...), str("script"), str("rules"), cue.Index(i), str("when"), str("promptMatches"))
			c.add(sel, "%v", err)
		}
	}
}

// checkArmTargets checks every arm that installs its cases' targets: each
// case must name them, and no two skills of a cell may install under one
// name.
func checkArmTargets(c *checker, s *Suite, undecoded map[string]bool) {
	for _, name := range sortedKeys(s.Arms) {
		arm := s.Arms[name]
		if !arm.Targets {
			continue
		}
		for _, id := range sortedKeys(s.Cases) {
			cs := s.Cases[id]
			if len(cs.Targets) == 0 {
				c.add([]cue.Selector{str("cases"), str(id)}, "case %s names no targets, and arm %s installs each case's targets (targets: true)", id, name)
				continue
			}
			seen := map[string]string{}
			for _, key := range append(slices.Clone(arm.Skills), cs.Targets...) {
				sk, ok := s.Skills[key]
				if !ok || undecoded[key] {
					continue // reported where it is named
				}
				if other, dup := seen[sk.Name]; dup && other != key {
					c.add([]cue.Selector{str("cases"), str(id), str("targets")}, "arm %s would install two skills as %q in case %s (%s and %s)", name, sk.Name, id, other, key)
				}
				seen[sk.Name] = key
			}
		}
	}
}

// SessionArg stands for a session's ID in agent.resume and agent.sessionArgs.
const SessionArg = "{{session}}"

// checkAgentTurns refuses what the agent cannot do: replies without a
// resume command, or with one naming a session ID the first turn was not
// given, a report without the flags that ask for it.
func checkAgentTurns(c *checker, s *Suite) {
	if len(s.Agent.Resume) == 0 {
		for _, id := range sortedKeys(s.Cases) {
			if len(s.Cases[id].Replies) > 0 {
				c.add([]cue.Selector{str("cases"), str(id), str("replies")}, "case %s has replies, but the agent has no resume command to send them in the same session (agent.resume)", id)
			}
		}
	}
	if slices.ContainsFunc(s.Agent.Resume, func(a string) bool { return strings.Contains(a, SessionArg) }) &&
		!slices.ContainsFunc(s.Agent.SessionArgs, func(a string) bool { return strings.Contains(a, SessionArg) }) {
		for _, id := range sortedKeys(s.Cases) {
			if len(s.Cases[id].Replies) > 0 {
				c.add([]cue.Selector{str("agent"), str("resume")}, "agent.resume names the session by %s, but agent.sessionArgs do not give the first turn that ID", SessionArg)
				break
			}
		}
	}
	if r := s.Agent.Report; r != nil {
		if len(s.Agent.ReportArgs) == 0 {
			c.add([]cue.Selector{str("agent"), str("report")}, "agent.report asks for a structured answer, but the agent has no reportArgs to ask its CLI with")
		}
		if props, ok := r.Schema["properties"].(map[string]any); ok {
			for _, f := range []string{r.Answer, r.Skills} {
				if _, ok := props[f]; !ok {
					c.add([]cue.Selector{str("agent"), str("report"), str("schema")}, "agent.report.schema has no property %q, which the report reads", f)
				}
			}
		}
	}
}

// checkOverlay refuses an overlay path that is a folder in one tree and
// something else in the other: copying one over the other cannot make it.
func checkOverlay(fixture, overlay string) error {
	return filepath.WalkDir(overlay, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == overlay {
			return err
		}
		rel, err := filepath.Rel(overlay, p)
		if err != nil {
			return err
		}
		fi, err := os.Lstat(filepath.Join(fixture, rel))
		if err != nil {
			return nil // a new path
		}
		if d.IsDir() != fi.IsDir() {
			what := map[bool]string{true: "a folder", false: "a file"}
			return fmt.Errorf("overlay path %s is %s, and %s in the fixture", filepath.ToSlash(rel), what[d.IsDir()], what[fi.IsDir()])
		}
		return nil
	})
}

func checkCase(c *checker, s *Suite, id string, skillNames map[string]bool, undecoded map[string]bool) {
	cs := s.Cases[id]
	base := []cue.Selector{str("cases"), str(id)}
	at := func(more ...cue.Selector) []cue.Selector {
		return append(append([]cue.Selector{}, base...), more...)
	}
	checkPromptSize(c, s, cs, at(str("prompt")))
	if cs.Fixture != "" {
		// Many cases share a fixture: check each folder once.
		err, seen := c.fixtures[cs.Fixture]
		if !seen {
			var dir string
			if dir, err = s.Resolve(cs.Fixture); err == nil {
				err = checkCaseTree(dir, s.Root)
			}
			c.fixtures[cs.Fixture] = err
		}
		if err != nil {
			c.add(at(str("fixture")), "%v", err)
		}
	}
	if cs.Overlay != "" {
		if cs.Fixture == "" {
			c.add(at(str("overlay")), "an overlay is copied over the fixture: set the case's fixture too")
		} else if dir, err := s.Resolve(cs.Overlay); err != nil {
			c.add(at(str("overlay")), "%v", err)
		} else if err := checkCaseTree(dir, s.Root); err != nil {
			c.add(at(str("overlay")), "%v", err)
		} else if fx, ferr := s.Resolve(cs.Fixture); ferr == nil {
			if err := checkOverlay(fx, dir); err != nil {
				c.add(at(str("overlay")), "%v", err)
			}
		}
	}
	if cs.Reference != "" {
		// A folder, or a patch file: a regular file in a folder of the repository.
		if _, err := s.Resolve(cs.Reference); err != nil {
			dir, derr := s.Resolve(path.Dir(cs.Reference))
			if fi, ferr := os.Lstat(filepath.Join(dir, path.Base(cs.Reference))); derr != nil || ferr != nil || !fi.Mode().IsRegular() {
				c.add(at(str("reference")), "%v", err)
			}
		}
	}
	for i, key := range cs.Targets {
		if _, ok := s.Skills[key]; !ok && !undecoded[key] {
			c.add(at(str("targets"), cue.Index(i)), "case %s targets skill %q, which the suite does not define", id, key)
		}
	}
	if len(cs.Rubric) > 0 && s.Judge == nil {
		// Without a judge the rubric would be dropped and the case pass
		// on its checks alone, without a word.
		c.add(at(str("rubric")), "case %s has a rubric and the suite has no judge to grade it: add a judge (for example judge: {provider: agent.provider, model: agent.model}), or drop the rubric", id)
	}
	if len(cs.Rubric) == 0 && cs.RubricPass != 1 {
		c.add(at(str("rubricPass")), "rubricPass applies to a rubric, and case %s has none", id)
	}
	if r, ok := s.Skills[s.Router]; ok && s.Router != "" {
		for field, list := range map[string][]string{"required": cs.Routing.Skills.Required, "forbidden": cs.Routing.Skills.Forbidden} {
			for i, n := range list {
				if n == r.Name {
					c.add(at(str("routing"), str("skills"), str(field), cue.Index(i)), "routing names the router %q, whose events never count in routing", n)
				}
			}
		}
	}
	for field, list := range map[string][]string{"required": cs.Routing.Skills.Required, "forbidden": cs.Routing.Skills.Forbidden} {
		for i, n := range list {
			if skillNames != nil && !skillNames[n] {
				c.add(at(str("routing"), str("skills"), str(field), cue.Index(i)), "routing names skill %q, which no skill of the suite installs", n)
			}
		}
	}
	for field, list := range map[string][]string{"required": cs.Routing.References.Required, "forbidden": cs.Routing.References.Forbidden} {
		for i, ref := range list {
			if err := s.checkReference(ref); err != nil {
				c.add(at(str("routing"), str("references"), str(field), cue.Index(i)), "%v", err)
			}
		}
	}
	for i, a := range cs.Assert {
		sel := at(str("assert"), cue.Index(i))
		if err := checkAssertion(c, a); err != nil {
			c.add(sel, "%v", err)
		}
	}
	if cs.Writes != nil {
		for i, w := range *cs.Writes {
			if err := checkGlob(w); err != nil {
				c.add(at(str("writes"), cue.Index(i)), "%v", err)
			}
		}
	}
}

// checkPromptSize refuses a prompt (with its seed) over limits.prompt, and one too large
// for the command line of a command agent that takes it as {{prompt}}.
func checkPromptSize(c *checker, s *Suite, cs Case, sel []cue.Selector) {
	size := len(cs.Prompt)
	if len(cs.Seed) > 0 {
		size += len(s.Agent.SeedPrompt)
		for _, t := range cs.Seed {
			size += len(t.Content) + len("Assistant: \n\n")
		}
	}
	max, err := ParseBytes(s.Limits.Prompt)
	if err == nil && int64(size) > max {
		c.add(sel, "the prompt and its seed are %d bytes, over limits.prompt (%s)", size, s.Limits.Prompt)
		return
	}
	arg, argErr := ParseBytes(s.Limits.PromptArg)
	for i, r := range cs.Replies {
		at := append(sel[:len(sel)-1:len(sel)-1], str("replies"), cue.Index(i))
		switch {
		case err == nil && int64(len(r)) > max:
			c.add(at, "the reply is %d bytes, over limits.prompt (%s)", len(r), s.Limits.Prompt)
		case argErr == nil && int64(len(r)) > arg && s.Agent.Kind == "command" && slices.Contains(s.Agent.Resume, "{{prompt}}"):
			c.add(at, "the reply is %d bytes, over limits.promptArg (%s) for the command line of agent.resume, and a command agent has no standard input to take it from", len(r), s.Limits.PromptArg)
		}
	}
	for _, a := range s.Arms {
		if a.Activation == "forced" && (len(a.Skills) > 0 || a.Targets) {
			size += len(s.Agent.ForcedPrompt)
			break
		}
	}
	if argErr != nil || s.Agent.Kind != "command" || int64(size) <= arg {
		return
	}
	for _, a := range s.Agent.Command {
		if strings.Contains(a, "{{prompt}}") {
			c.add(sel, "the prompt is %d bytes, over limits.promptArg (%s) for the command line: the agent's command should read $SKILLGATE_PROMPT_FILE instead of {{prompt}}", size, s.Limits.PromptArg)
			return
		}
	}
}

// checkAssertion checks that exactly one subject is set, that file-only
// fields come with a file, and that regular expressions compile.
func checkAssertion(c *checker, a Assertion) error {
	subjects := 0
	for _, set := range []bool{a.File != nil, a.Glob != nil, a.Answer != nil, a.Code != nil, a.Run != nil, a.Commands != nil, a.Tool != nil, a.Sequence != nil} {
		if set {
			subjects++
		}
	}
	if subjects != 1 {
		return fmt.Errorf("an assertion needs exactly one of file, glob, answer, code, run, commands, tool or sequence (has %d)", subjects)
	}
	if err := checkTrajectory(c, a); err != nil {
		return err
	}
	content := a.Contains != nil || a.NotContains != nil || a.Matches != nil || a.NotMatches != nil || a.Bullets != nil || a.TaskGraph != nil
	fileOnly := a.Exists != nil || a.Unchanged != nil || content
	if fileOnly && a.File == nil && (a.Glob == nil || a.Exists != nil || a.Unchanged != nil) {
		return fmt.Errorf("exists, unchanged, contains, notContains, matches, notMatches, bullets and taskGraph need a file (all but exists and unchanged: or a glob); use answer: {...} or code: {...} for the final answer")
	}
	if err := checkGlobAssertion(c, a, content); err != nil {
		return err
	}
	if a.Timeout != "" && a.Run == nil {
		return fmt.Errorf("timeout applies to run assertions only")
	}
	if a.Messages != "" && a.Answer == nil && a.Code == nil {
		return fmt.Errorf("messages applies to answer and code assertions only")
	}
	if a.File != nil && !fileOnly {
		return fmt.Errorf("file assertion %q checks nothing: add exists, unchanged, contains, notContains, matches or notMatches", *a.File)
	}
	for _, tc := range []*TextCheck{&a.TextCheck, a.Answer, a.Code} {
		if tc == nil {
			continue
		}
		for _, re := range []*string{tc.Matches, tc.NotMatches} {
			if re == nil {
				continue
			}
			if err := c.compile(*re); err != nil {
				return fmt.Errorf("invalid regular expression %q: %v", *re, err)
			}
		}
	}
	return nil
}
