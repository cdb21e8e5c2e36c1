package grade

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/skillgate/skillgate/pipeline/suite"
)

// The separate-slices reading of a task graph follows chrisbanes/skills'
// text validator from the revision that adds separate_slice_requirements
// (evals/validators/text_case.py): a slice owns a file when its "Files and
// symbols" field names it in a clause that edits it (or that names no
// action, when the slice's Test and Implementation fields both edit); each
// independent behaviour must be owned by exactly one slice, no slice may
// hold two, implement another's files or symbols, or depend on another's
// slice. Python's \b and \s are read as Python reads them on str.

var (
	editVerbs     = []string{"edit", "create", "add", "update", "change", "modify", "replace", "write"}
	actionVerb    = regexp.MustCompile(`(?i)edit|create|add|update|change|modify|replace|write|inspect|read|verify|check|review`)
	editVerb      = regexp.MustCompile(`(?i)edit|create|add|update|change|modify|replace|write`)
	leadInspect   = regexp.MustCompile(`\A` + pyS + `*(?:[-*]` + pyS + `*)?(?i:inspect|read|verify|check|review)`)
	negations     = []string{"no", "not", "never", "without", "don't", "do not"}
	inspectOnlyRE = []*regexp.Regexp{
		regexp.MustCompile(`\A(?i:inspect only)`), regexp.MustCompile(`\A(?i:no edits)`),
		regexp.MustCompile(`\A(?i:no edit)`), regexp.MustCompile(`\A(?i:read.only)`),
		regexp.MustCompile(`\A(?i:do not edit)`), regexp.MustCompile(`\A(?i:do not change)`),
	}
)

// separateSliceFailures checks tg's separate slices against the slices'
// tasks (id to dependencies) and bodies, taken in order.
func separateSliceFailures(tg suite.TaskGraphCheck, order []string, tasks map[string]map[string]bool, bodies map[string]string) []string {
	var failures []string
	fail := func(format string, args ...any) { failures = append(failures, fmt.Sprintf(format, args...)) }
	matched := map[string]string{}
	var matchedOrder []string
	for _, r := range tg.SeparateSlices {
		var owners []string
		for _, id := range order {
			owns := true
			for _, p := range r.Files {
				owns = owns && ownsPath(bodies[id], p)
			}
			if owns {
				owners = append(owners, id)
			}
		}
		if len(owners) != 1 {
			fail("independent behavior %s must be contained in exactly one slice; found %d", pyRepr(r.ID), len(owners))
			continue
		}
		if prev, ok := matched[owners[0]]; ok {
			fail("independent behaviors %s and %s share slice %s", pyRepr(prev), pyRepr(r.ID), pyRepr(owners[0]))
			continue
		}
		matched[owners[0]] = r.ID
		matchedOrder = append(matchedOrder, owners[0])
	}
	for _, id := range matchedOrder {
		impl := mdField(bodies[id], "Implementation")
		for _, o := range tg.SeparateSlices {
			if o.ID == matched[id] {
				continue
			}
			for _, t := range append(append([]string(nil), o.Files...), o.Symbols...) {
				if editsPath(impl, t) {
					fail("independent behavior %s slice %s also implements %s", pyRepr(matched[id]), pyRepr(id), pyRepr(o.ID))
					break
				}
			}
		}
	}
	for i, a := range matchedOrder {
		for _, b := range matchedOrder[i+1:] {
			if dependsOn(tasks, a, b) || dependsOn(tasks, b, a) {
				fail("independent behaviors %s and %s must not depend on each other", pyRepr(matched[a]), pyRepr(matched[b]))
			}
		}
	}
	return failures
}

// dependsOn reports whether task a depends on task b, directly or not.
func dependsOn(tasks map[string]map[string]bool, a, b string) bool {
	seen := map[string]bool{}
	pending := sortedSet(tasks[a])
	for len(pending) > 0 {
		d := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		if d == b {
			return true
		}
		if !seen[d] {
			seen[d] = true
			pending = append(pending, sortedSet(tasks[d])...)
		}
	}
	return false
}

// ownsPath reports whether the slice body owns the file path.
func ownsPath(body, path string) bool {
	for _, clause := range planClauses(mdField(body, "Files and symbols")) {
		if findPath(clause, path) < 0 || inspectOnly(clause) {
			continue
		}
		switch pathAction(clause, path) {
		case "edit":
			return true
		case "inspect":
			continue
		}
		if m := leadInspect.FindStringIndex(clause); m != nil && pyBoundary(clause, m[1]) {
			continue
		}
		if hasEditAction(mdField(body, "Test")) && hasEditAction(mdField(body, "Implementation")) {
			return true
		}
	}
	return false
}

// editsPath reports whether some clause of text edits path.
func editsPath(text, path string) bool {
	for _, clause := range planClauses(text) {
		if pathAction(clause, path) == "edit" {
			return true
		}
	}
	return false
}

// pathAction is "edit" or "inspect" by the last action verb before the
// first mention of path in clause, "" when there is none.
func pathAction(clause, path string) string {
	at := findPath(clause, path)
	if at < 0 {
		return ""
	}
	verbs := pyWords(clause[:at], actionVerb)
	if len(verbs) == 0 {
		return ""
	}
	last := verbs[len(verbs)-1]
	for _, v := range editVerbs {
		if strings.ToLower(clause[last[0]:last[1]]) == v && !negated(clause, last[0]) {
			return "edit"
		}
	}
	return "inspect"
}

// hasEditAction reports whether text holds an edit verb not negated.
func hasEditAction(text string) bool {
	for _, m := range pyWords(text, editVerb) {
		if !negated(text, m[0]) {
			return true
		}
	}
	return false
}

// negated reports whether the 20 characters of text before at end with
// a negation and white space.
func negated(text string, at int) bool {
	window := []rune(text[:at])
	window = window[max(0, len(window)-20):]
	trimmed := strings.TrimRightFunc(string(window), pySpace)
	if len(trimmed) == len(string(window)) {
		return false
	}
	for _, n := range negations {
		if len(trimmed) >= len(n) && strings.EqualFold(trimmed[len(trimmed)-len(n):], n) && pyBoundary(trimmed, len(trimmed)-len(n)) {
			return true
		}
	}
	return false
}

// inspectOnly reports whether clause says a path is only inspected.
func inspectOnly(clause string) bool {
	for p := 0; p < len(clause); p++ {
		if !utf8.RuneStart(clause[p]) || !pyBoundary(clause, p) {
			continue
		}
		for _, re := range inspectOnlyRE {
			if m := re.FindStringIndex(clause[p:]); m != nil && pyBoundary(clause, p+m[1]) {
				return true
			}
		}
	}
	return false
}

// pyWords finds re's matches in s bounded by Python's \b at both ends,
// each tried at every start as Python's finditer does.
func pyWords(s string, re *regexp.Regexp) [][2]int {
	var out [][2]int
	for p := 0; p <= len(s); {
		m := re.FindStringIndex(s[p:])
		if m == nil {
			break
		}
		start, end := p+m[0], p+m[1]
		if pyBoundary(s, start) && pyBoundary(s, end) {
			out = append(out, [2]int{start, end})
			p = end
			continue
		}
		_, n := utf8.DecodeRuneInString(s[start:])
		p = start + max(n, 1)
	}
	return out
}

// pyBoundary is Python's \b at byte offset i of s: a word character
// (a letter, a number or _) on one side only.
func pyBoundary(s string, i int) bool {
	before, after := false, false
	if i > 0 {
		r, _ := utf8.DecodeLastRuneInString(s[:i])
		before = pyWordRune(r)
	}
	if i < len(s) {
		r, _ := utf8.DecodeRuneInString(s[i:])
		after = pyWordRune(r)
	}
	return before != after
}

func pyWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
}

// pathChar is a character that continues a path.
func pathChar(c byte) bool {
	return c == '_' || c == '.' || c == '/' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// findPath is the offset of the first mention of path in s (optionally
// written ./path) not inside a longer path, or -1.
func findPath(s, path string) int {
	for p := 0; p <= len(s); p++ {
		if p > 0 && pathChar(s[p-1]) {
			continue
		}
		for _, w := range []string{"./" + path, path} {
			if strings.HasPrefix(s[p:], w) && (p+len(w) == len(s) || !pathChar(s[p+len(w)])) {
				return p
			}
		}
	}
	return -1
}

// planClauses splits text at semicolons and at the white space between a
// full stop and a capital letter.
func planClauses(text string) []string {
	var out []string
	start := 0
	for i := 0; i < len(text); {
		if text[i] == ';' {
			out = append(out, text[start:i])
			i++
			start = i
			continue
		}
		if i > 0 && text[i-1] == '.' {
			j := i
			for j < len(text) {
				r, n := utf8.DecodeRuneInString(text[j:])
				if !pySpace(r) {
					break
				}
				j += n
			}
			if j > i && j < len(text) && text[j] >= 'A' && text[j] <= 'Z' {
				out = append(out, text[start:i])
				i, start = j, j
				continue
			}
		}
		_, n := utf8.DecodeRuneInString(text[i:])
		i += n
	}
	return append(out, text[start:])
}

// mdField is the text of the slice field "**name:**" (from the first line
// starting with it to the next line starting with a "**...:**" field), or
// "".
func mdField(body, name string) string {
	head := "**" + name + ":**"
	at := -1
	for p := 0; p+len(head) <= len(body); p++ {
		if (p == 0 || body[p-1] == '\n') && strings.HasPrefix(body[p:], head) {
			at = p + len(head)
			break
		}
	}
	if at < 0 {
		return ""
	}
	for at < len(body) && (body[at] == ' ' || body[at] == '\t') {
		at++
	}
	for q := at; q < len(body); q++ {
		if body[q-1] != '\n' || !strings.HasPrefix(body[q:], "**") {
			continue
		}
		line := body[q+2:]
		if nl := strings.IndexByte(line, '\n'); nl >= 0 {
			line = line[:nl]
		}
		if len(line) > 1 && strings.Contains(line[1:], ":**") {
			return body[at:q]
		}
	}
	return body[at:]
}
