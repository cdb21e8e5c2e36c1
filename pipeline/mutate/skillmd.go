package mutate

import (
	"regexp"
	"strings"
)

// skillMD is a SKILL.md cut into the parts the operators change: its
// front matter (the lines between the two "---" lines, without them), the
// description's lines within it, and the body's lines.
type skillMD struct {
	// front is the front matter's lines; nil when the file has none.
	front []string
	// desc is the description's lines in front: [from, to), from == to
	// when it has none.
	descFrom, descTo int
	body             []string
}

// parseSkillMD reads a SKILL.md. A file without front matter is all body.
func parseSkillMD(text string) skillMD {
	lines := strings.SplitAfter(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var md skillMD
	if len(lines) == 0 || strings.TrimRight(lines[0], "\r\n") != "---" {
		md.body = lines
		return md
	}
	end := -1
	for i := 1; i < len(lines); i++ {
		if strings.TrimRight(lines[i], "\r\n") == "---" {
			end = i
			break
		}
	}
	if end < 0 {
		md.body = lines
		return md
	}
	md.front = lines[1:end]
	md.body = lines[end+1:]
	md.descFrom, md.descTo = descriptionLines(md.front)
	return md
}

// descriptionKey is the description's line in YAML front matter.
var descriptionKey = regexp.MustCompile(`^description:`)

// descriptionLines finds the description in front matter: its key's line
// and the indented lines that continue it (a block or folded scalar, or a
// plain scalar wrapped over several lines).
func descriptionLines(front []string) (from, to int) {
	for i, l := range front {
		if !descriptionKey.MatchString(l) {
			continue
		}
		j := i + 1
		for j < len(front) && (strings.HasPrefix(front[j], " ") || strings.HasPrefix(front[j], "\t")) {
			j++
		}
		return i, j
	}
	return 0, 0
}

// description is the description's text, its YAML folded to one line.
func (md skillMD) description() string {
	if md.descFrom == md.descTo {
		return ""
	}
	first := strings.TrimSpace(strings.TrimPrefix(md.front[md.descFrom], "description:"))
	var parts []string
	if first != "" && first != ">" && first != "|" && first != ">-" && first != "|-" {
		parts = append(parts, unquote(first))
	}
	for _, l := range md.front[md.descFrom+1 : md.descTo] {
		parts = append(parts, strings.TrimSpace(l))
	}
	return strings.Join(parts, " ")
}

// unquote drops a YAML scalar's quotes, undoing their escapes.
func unquote(s string) string {
	switch {
	case len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"':
		return strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(s[1 : len(s)-1])
	case len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'':
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'")
	}
	return s
}

// withDescription is the file with its description replaced by text, as
// one double-quoted YAML line (or added, when it had none).
func (md skillMD) withDescription(text string) string {
	line := "description: " + quote(text) + "\n"
	var front []string
	if md.descFrom == md.descTo {
		front = append(append(front, md.front...), line)
	} else {
		front = append(front, md.front[:md.descFrom]...)
		front = append(front, line)
		front = append(front, md.front[md.descTo:]...)
	}
	return md.render(front, md.body)
}

// quote writes text as a double-quoted YAML scalar.
func quote(text string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", " ")
	return `"` + r.Replace(text) + `"`
}

// render joins front matter and body into a SKILL.md; a file that had no
// front matter gets none.
func (md skillMD) render(front, body []string) string {
	var b strings.Builder
	if md.front != nil {
		b.WriteString("---\n")
		for _, l := range front {
			b.WriteString(l)
		}
		b.WriteString("---\n")
	}
	for _, l := range body {
		b.WriteString(l)
	}
	return b.String()
}

// heading is a Markdown ATX heading of the body: its line and level.
type heading struct {
	line, level int
	title       string
}

// headingLine is an ATX heading: one to six '#', a space, a title.
var headingLine = regexp.MustCompile(`^(#{1,6})[ \t]+(.*?)[ \t#]*$`)

// outsideFences lists the indexes of the body's lines that are not in
// fenced code (``` or ~~~, fences included).
func outsideFences(body []string) []int {
	var out []int
	fence := ""
	for i, raw := range body {
		t := strings.TrimSpace(raw)
		switch {
		case fence != "":
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
		case strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~"):
			fence = t[:3]
		default:
			out = append(out, i)
		}
	}
	return out
}

// headings lists the body's headings, skipping fenced code.
func headings(body []string) []heading {
	var out []heading
	for _, i := range outsideFences(body) {
		if m := headingLine.FindStringSubmatch(strings.TrimRight(body[i], "\r\n")); m != nil {
			out = append(out, heading{line: i, level: len(m[1]), title: m[2]})
		}
	}
	return out
}

// section is a top-level section of the body: [from, to) its lines, from
// its heading to the next heading of its level or above.
type section struct {
	title    string
	from, to int
}

// sections are the body's top-level sections: those of the shallowest
// heading level that the body has at least twice (a single title heading
// above them is not one), else of its shallowest level.
func sections(body []string) []section {
	hs := headings(body)
	count := map[int]int{}
	for _, h := range hs {
		count[h.level]++
	}
	level := 0
	for l := 1; l <= 6; l++ {
		if count[l] >= 2 {
			level = l
			break
		}
	}
	if level == 0 {
		for l := 1; l <= 6 && level == 0; l++ {
			if count[l] > 0 {
				level = l
			}
		}
	}
	var out []section
	for i, h := range hs {
		if h.level != level {
			continue
		}
		to := len(body)
		for _, n := range hs[i+1:] {
			if n.level <= level {
				to = n.line
				break
			}
		}
		out = append(out, section{title: h.title, from: h.line, to: to})
	}
	return out
}
