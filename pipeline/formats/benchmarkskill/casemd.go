package benchmarkskill

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"
)

// Section names of a case.md, as its authors write them after "## ".
const (
	sectionPrompt = "Prompt"
	sectionSeed   = "Seed"
	sectionHard   = "Hard assertions"
	sectionSoft   = "Soft criteria"
)

// text is a piece of a case.md with the offset its first character has in
// the file, so the value built from it points back there.
type text struct {
	s   string
	off int
}

// turn is one message of a case's seed conversation.
type turn struct {
	role    text // "user" or "assistant"
	content text
}

// hardAssertions is the case's shell block: its shell (the fence's
// language), its script, and the predicates it runs as (see predicates).
type hardAssertions struct {
	shell      text
	script     text
	predicates []text
}

// compoundWords start a shell line that belongs to a command spanning lines.
var compoundWords = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "for": true, "while": true, "until": true,
	"do": true, "done": true, "case": true, "esac": true, "{": true, "}": true, "(": true, ")": true, "function": true,
}

// predicates are the checks a hard-assertion script runs as: each line
// (a trailing backslash joins the next) is one predicate whose non-zero
// exit fails it, so a negated one (! grep ...) counts as much as any other,
// which one `set -e` script would not do for a line but its last. A script
// with a command spanning lines (if, for, case, a here-document, a line
// ending in a pipe or an open quote) runs whole under `set -e` instead.
func predicates(script text) []text {
	var out []text
	var cur strings.Builder
	start := -1
	off := script.off
	for _, l := range strings.Split(script.s, "\n") {
		lineOff := off
		off += len(l) + 1
		t := strings.TrimSpace(l)
		if cur.Len() == 0 && (t == "" || strings.HasPrefix(t, "#")) {
			continue
		}
		if start < 0 {
			start = lineOff + len(l) - len(strings.TrimLeft(l, " \t"))
		}
		if strings.HasSuffix(t, "\\") {
			cur.WriteString(strings.TrimSpace(strings.TrimSuffix(t, "\\")))
			cur.WriteString(" ")
			continue
		}
		cur.WriteString(t)
		line := cur.String()
		first, _, _ := strings.Cut(line, " ")
		if compoundWords[first] || strings.Contains(line, "<<") || strings.Count(line, "'")%2 == 1 || strings.Count(line, `"`)%2 == 1 ||
			strings.HasSuffix(line, "|") || strings.HasSuffix(line, "&&") || strings.HasSuffix(line, "(") || strings.HasSuffix(line, "{") {
			return []text{{"set -e\n" + script.s, script.off}}
		}
		out = append(out, text{line, start})
		cur.Reset()
		start = -1
	}
	if cur.Len() > 0 {
		// A backslash on the last line continues nothing.
		return []text{{"set -e\n" + script.s, script.off}}
	}
	return out
}

// caseFile is a parsed case.md.
type caseFile struct {
	description text
	prompt      text
	seed        []turn
	hard        *hardAssertions
	soft        []text
}

// line is one line of a case.md without its line break (nor a '\r').
type line struct {
	s   string
	off int
}

// lines splits src into lines with their offsets.
func lines(src []byte) []line {
	var out []line
	off := 0
	for len(src) > 0 {
		i := bytes.IndexByte(src, '\n')
		var l []byte
		next := len(src)
		if i >= 0 {
			l, next = src[:i], i+1
		} else {
			l = src
		}
		out = append(out, line{strings.TrimSuffix(string(l), "\r"), off})
		off += next
		src = src[next:]
	}
	return out
}

var (
	// seedTag is a role tag opening a seed turn: **User:** or **User**:.
	seedTag = regexp.MustCompile(`^\*\*([^*:]*?)(?::\*\*|\*\*:)[ \t]*(.*)$`)
	// listItem is a soft criterion: "- ", "* ", "+ " or "1. ", "1) ".
	listItem = regexp.MustCompile(`^ {0,3}(?:[-*+]|[0-9]+[.)])[ \t]+(.*)$`)
	// fence opens or closes a fenced code block.
	fence = regexp.MustCompile("^ {0,3}(```+|~~~+)[ \t]*([^ \t`]*)")
)

// closes reports whether a line closes the code block opened by marker:
// at least as many of its characters and nothing else.
func closes(s, marker string) bool {
	t := strings.TrimLeft(s, " ")
	return strings.HasPrefix(t, marker) && strings.Trim(t, marker[:1]+" \t") == ""
}

// caseParser collects the problems of one case.md, each at its position.
type caseParser struct {
	file *token.File
	errs cueerrors.Error
}

func (p *caseParser) errorf(off int, format string, args ...any) {
	p.errs = cueerrors.Append(p.errs, cueerrors.Newf(p.file.Pos(off, token.NoRelPos), format, args...))
}

// parseCase parses a case.md: front-matter with description, then the
// sections ## Prompt, ## Seed, ## Hard assertions and ## Soft criteria.
// Every problem is returned at once, each at its line in the file.
func parseCase(file *token.File, src []byte) (*caseFile, cueerrors.Error) {
	p := &caseParser{file: file}
	c := &caseFile{}
	ls := lines(src)
	body := p.frontMatter(c, ls)
	if body == nil {
		return nil, p.errs
	}

	type section struct {
		name    string
		heading line
		body    []line
	}
	var sections []*section
	seen := map[string]*section{}
	var cur *section
	var open string // the fence marker of an open code block
	var openAt int
	for _, l := range body {
		if m := fence.FindStringSubmatch(l.s); m != nil {
			switch {
			case open == "":
				open, openAt = m[1], l.off
			case closes(l.s, open):
				open = ""
			}
		} else if open == "" && strings.HasPrefix(l.s, "## ") {
			name := strings.TrimSpace(l.s[3:])
			canonical := ""
			for _, known := range []string{sectionPrompt, sectionSeed, sectionHard, sectionSoft} {
				if strings.EqualFold(name, known) {
					canonical = known
				}
			}
			switch {
			case canonical == "":
				p.errorf(l.off, "unknown section ## %s: a case.md has ## %s, ## %s, ## %s and ## %s", name, sectionPrompt, sectionSeed, sectionHard, sectionSoft)
				cur = &section{heading: l} // its lines belong to no section
			case seen[canonical] != nil:
				p.errorf(l.off, "section ## %s appears twice (first at line %d)", canonical, file.Position(file.Pos(seen[canonical].heading.off, token.NoRelPos)).Line)
				cur = &section{heading: l}
			default:
				cur = &section{name: canonical, heading: l}
				seen[canonical] = cur
				sections = append(sections, cur)
			}
			continue
		}
		if cur == nil {
			if strings.TrimSpace(l.s) != "" {
				p.errorf(l.off, "text before the first section: a case.md's body starts with ## %s", sectionPrompt)
				cur = &section{heading: l}
			}
			continue
		}
		cur.body = append(cur.body, l)
	}
	if open != "" {
		p.errorf(openAt, "code block is not closed: no %s line after it", open)
	}

	for _, s := range sections {
		switch s.name {
		case sectionPrompt:
			c.prompt = joined(s.body)
			if c.prompt.s == "" {
				p.errorf(s.heading.off, "## %s is empty: it holds the request every arm is given", sectionPrompt)
			}
		case sectionSeed:
			c.seed = p.seed(s.heading, s.body)
		case sectionHard:
			c.hard = p.hard(s.heading, s.body)
		case sectionSoft:
			c.soft = p.soft(s.heading, s.body)
		}
	}
	// A code block left open holds every section after it: that is the
	// one mistake, not the sections it hides.
	if seen[sectionPrompt] == nil && open == "" {
		p.errorf(0, "no ## %s section: a case.md gives every arm its prompt", sectionPrompt)
	}
	if seen[sectionSoft] == nil && open == "" {
		p.errorf(0, "no ## %s section: a case.md lists at least one criterion for the judge", sectionSoft)
	}
	if p.errs != nil {
		return nil, p.errs
	}
	return c, nil
}

// frontMatter reads the front-matter into c and returns the lines after
// it, or nil when it cannot be read at all.
func (p *caseParser) frontMatter(c *caseFile, ls []line) []line {
	if len(ls) == 0 || strings.TrimPrefix(ls[0].s, "\ufeff") != "---" {
		p.errorf(0, "no front-matter: a case.md starts with a --- line, description: <one line>, and a --- line")
		return nil
	}
	end := -1
	for i := 1; i < len(ls); i++ {
		if ls[i].s == "---" {
			end = i
			break
		}
	}
	if end < 0 {
		p.errorf(ls[0].off, "front-matter is not closed: no --- line after the opening one")
		return nil
	}
	found, unknown := false, false
	for _, l := range ls[1:end] {
		t := strings.TrimSpace(l.s)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		key, value, ok := strings.Cut(l.s, ":")
		key = strings.TrimSpace(key)
		if !ok || key == "" || strings.ContainsAny(key, " \t") || l.s[0] == ' ' || l.s[0] == '\t' {
			p.errorf(l.off, "front-matter line is not \"key: value\"")
			continue
		}
		if key != "description" {
			p.errorf(l.off, "unknown front-matter key %q: a case.md's front-matter holds description", key)
			unknown = true
			continue
		}
		if found {
			p.errorf(l.off, "description is given twice in the front-matter")
			continue
		}
		found = true
		voff := l.off + len(l.s) - len(strings.TrimLeft(value, " \t"))
		v, err := scalar(strings.TrimSpace(value))
		switch {
		case err != nil:
			p.errorf(voff, "description: %v", err)
		case v == "":
			p.errorf(l.off, "description is empty: it says the case's scenario in one line")
		default:
			c.description = text{v, voff}
		}
	}
	// A misspelt description is its one mistake, already reported.
	if !found && !unknown {
		p.errorf(ls[0].off, "front-matter has no description: it says the case's scenario in one line")
	}
	return ls[end+1:]
}

// scalar is a one-line YAML scalar: plain, 'single' or "double" quoted.
func scalar(v string) (string, error) {
	switch {
	case v == "|" || v == ">" || strings.HasPrefix(v, "|") || strings.HasPrefix(v, ">"):
		return "", fmt.Errorf("a block scalar (%s) is not one line", v)
	case strings.HasPrefix(v, `"`):
		s, err := strconv.Unquote(v)
		if err != nil {
			return "", fmt.Errorf("unreadable double-quoted value %s", v)
		}
		return s, nil
	case strings.HasPrefix(v, "'"):
		if len(v) < 2 || !strings.HasSuffix(v, "'") {
			return "", fmt.Errorf("unreadable single-quoted value %s", v)
		}
		return strings.ReplaceAll(v[1:len(v)-1], "''", "'"), nil
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	return v, nil
}

// joined is the section's lines as one text, without the blank lines
// around it.
func joined(ls []line) text {
	for len(ls) > 0 && strings.TrimSpace(ls[0].s) == "" {
		ls = ls[1:]
	}
	for len(ls) > 0 && strings.TrimSpace(ls[len(ls)-1].s) == "" {
		ls = ls[:len(ls)-1]
	}
	if len(ls) == 0 {
		return text{}
	}
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.s
	}
	return text{strings.Join(parts, "\n"), ls[0].off}
}

// seed reads the role-tagged turns of ## Seed.
func (p *caseParser) seed(heading line, body []line) []turn {
	var turns []turn
	var content []line
	var role text
	flush := func() {
		if role.s == "" {
			return
		}
		c := joined(content)
		if c.s == "" {
			p.errorf(role.off, "seed turn of %s is empty", role.s)
		}
		turns = append(turns, turn{role: role, content: c})
	}
	for _, l := range body {
		m := seedTag.FindStringSubmatchIndex(l.s)
		if m == nil {
			if role.s == "" && strings.TrimSpace(l.s) != "" {
				p.errorf(l.off, "seed text before the first role tag: each turn starts with **User:** or **Assistant:**")
				role = text{"?", l.off}
			}
			content = append(content, l)
			continue
		}
		flush()
		name := l.s[m[2]:m[3]]
		switch r := strings.ToLower(strings.TrimSpace(name)); r {
		case "user", "assistant":
			role = text{r, l.off}
		default:
			p.errorf(l.off+m[2], "unknown seed role %q: a seed turn is **User:** or **Assistant:**", name)
			role = text{"?", l.off}
		}
		content = []line{{l.s[m[4]:], l.off + m[4]}}
	}
	flush()
	if len(turns) == 0 && p.errs == nil {
		p.errorf(heading.off, "## %s has no turn: each starts with **User:** or **Assistant:**", sectionSeed)
	}
	return turns
}

// hard reads the one sh or bash block of ## Hard assertions.
func (p *caseParser) hard(heading line, body []line) *hardAssertions {
	var h *hardAssertions
	var script []line
	var open string
	var start line
	for _, l := range body {
		if open == "" {
			if strings.TrimSpace(l.s) == "" {
				continue
			}
			m := fence.FindStringSubmatchIndex(l.s)
			if m == nil {
				p.errorf(l.off, "text outside the shell block: ## %s holds one ```sh block of predicates", sectionHard)
				continue
			}
			if h != nil {
				p.errorf(l.off, "a second code block: ## %s holds one ```sh block of predicates", sectionHard)
			}
			open, start = l.s[m[2]:m[3]], l
			lang := l.s[m[4]:m[5]]
			shell := "sh"
			switch lang {
			case "", "sh", "shell":
			case "bash":
				shell = "bash"
			default:
				p.errorf(l.off+m[4], "hard assertions are a %q block: they run as sh or bash", lang)
			}
			h = &hardAssertions{shell: text{shell, l.off + m[4]}}
			script = nil
			continue
		}
		if closes(l.s, open) {
			open = ""
			h.script = joined(script)
			h.predicates = predicates(h.script)
			if len(h.predicates) == 0 {
				p.errorf(start.off, "the hard assertions block is empty")
			}
			continue
		}
		script = append(script, l)
	}
	if h == nil && p.errs == nil {
		p.errorf(heading.off, "## %s has no ```sh block", sectionHard)
	}
	return h
}

// soft reads the list of ## Soft criteria: at least one entry; an
// indented line continues the entry above it.
func (p *caseParser) soft(heading line, body []line) []text {
	var items []text
	for _, l := range body {
		if strings.TrimSpace(l.s) == "" {
			continue
		}
		if m := listItem.FindStringSubmatchIndex(l.s); m != nil {
			items = append(items, text{strings.TrimSpace(l.s[m[2]:m[3]]), l.off + m[2]})
			continue
		}
		if len(items) > 0 && (l.s[0] == ' ' || l.s[0] == '\t') {
			last := &items[len(items)-1]
			last.s += " " + strings.TrimSpace(l.s)
			continue
		}
		p.errorf(l.off, "soft criteria are a list: each entry starts with \"- \"")
	}
	for _, it := range items {
		if it.s == "" {
			p.errorf(it.off, "soft criterion is empty")
		}
	}
	if len(items) == 0 {
		p.errorf(heading.off, "## %s has no entry: the judge needs at least one criterion", sectionSoft)
	}
	return items
}
