package grade

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The Markdown reading of the bullets and task-graph checks follows
// chrisbanes/skills' text validator (evals/validators/text_case.py)
// exactly, character for character: masks keep every line break and blank
// every other character of what is not shown (code, comments, tags, link
// titles) with one space, so that lines and offsets stay those of the
// text.

// pyLines splits s at the line boundaries of Python's str.splitlines,
// keeping each line's break when keep is true.
func pyLines(s string, keep bool) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		end := i + n
		switch r {
		case '\r':
			if end < len(s) && s[end] == '\n' {
				end++
			}
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
		default:
			i = end
			continue
		}
		if keep {
			out = append(out, s[start:end])
		} else {
			out = append(out, s[start:i])
		}
		start, i = end, end
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// pySpace is Python's str.isspace for one character: \s of its re module.
func pySpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// pyStrip is Python's str.strip().
func pyStrip(s string) string {
	return strings.TrimFunc(s, pySpace)
}

// blank replaces every character of s but \r and \n with a space.
func blank(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '\r' || r == '\n' {
			b.WriteRune(r)
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// maskEach blanks, scanning s from the left as re.sub does, every match
// that match (the end of a match starting at byte i, or -1) finds.
func maskEach(s string, match func(s string, i int) int) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		if end := match(s, i); end >= 0 {
			b.WriteString(s[last:i])
			b.WriteString(blank(s[i:end]))
			last, i = end, end
			continue
		}
		_, n := utf8.DecodeRuneInString(s[i:])
		i += n
	}
	if last < len(s) {
		b.WriteString(s[last:])
	}
	return b.String()
}

var fenceOpen = regexp.MustCompile(`\A {0,3}(` + "`{3,}|~{3,})")

// pyS is Python's \s as an RE2 class.
const pyS = `[\t\n\v\f\r\x1c-\x1f \x85\p{Z}]`

// maskFencedCode blanks fenced code blocks, fences included.
func maskFencedCode(s string) string {
	var b strings.Builder
	fence, size := byte(0), 0
	for _, line := range pyLines(s, true) {
		if fence == 0 {
			if m := fenceOpen.FindStringSubmatch(line); m != nil {
				fence, size = m[1][0], len(m[1])
				b.WriteString(blank(line))
				continue
			}
			b.WriteString(line)
			continue
		}
		b.WriteString(blank(line))
		if closesFence(line, fence, size) {
			fence, size = 0, 0
		}
	}
	return b.String()
}

// closesFence: up to three spaces, at least size fence characters, spaces
// or tabs, and nothing else but a final \n or \r\n.
func closesFence(line string, fence byte, size int) bool {
	rest := strings.TrimPrefix(line, " ")
	rest = strings.TrimPrefix(rest, " ")
	rest = strings.TrimPrefix(rest, " ")
	if len(line)-len(rest) > 3 {
		return false
	}
	n := 0
	for n < len(rest) && rest[n] == fence {
		n++
	}
	if n < size {
		return false
	}
	rest = strings.TrimLeft(rest[n:], " \t")
	return rest == "" || rest == "\n" || rest == "\r\n"
}

// maskHTMLComments blanks <!-- ... --> and an unclosed comment to the end.
func maskHTMLComments(s string) string {
	return maskEach(s, func(s string, i int) int {
		if !strings.HasPrefix(s[i:], "<!--") {
			return -1
		}
		if j := strings.Index(s[i+4:], "-->"); j >= 0 {
			return i + 4 + j + 3
		}
		if strings.HasSuffix(s, "\n") {
			return len(s) - 1
		}
		return len(s)
	})
}

var codeCloses = map[string]*regexp.Regexp{
	"code": regexp.MustCompile(`(?i)</code` + pyS + `*>`),
	"pre":  regexp.MustCompile(`(?i)</pre` + pyS + `*>`),
}

// maskHTMLCode blanks <code ...>...</code> and <pre ...>...</pre> blocks,
// names in any case.
func maskHTMLCode(s string) string {
	return maskEach(s, func(s string, i int) int {
		if s[i] != '<' {
			return -1
		}
		name := ""
		for _, n := range []string{"code", "pre"} {
			if len(s) >= i+1+len(n) && strings.EqualFold(s[i+1:i+1+len(n)], n) {
				name = n
				break
			}
		}
		p := i + 1 + len(name)
		if name == "" || wordAt(s, p) {
			return -1
		}
		k := strings.IndexByte(s[p:], '>')
		if k < 0 {
			return -1
		}
		p += k + 1
		if c := codeCloses[name].FindStringIndex(s[p:]); c != nil {
			return p + c[1]
		}
		return -1
	})
}

// maskInlineTags blanks inline HTML tags but <details> and </details>.
func maskInlineTags(s string) string {
	return maskEach(s, func(s string, i int) int {
		if s[i] != '<' {
			return -1
		}
		j := i + 1
		if strings.HasPrefix(s[j:], "details") && !wordAt(s, j+len("details")) ||
			strings.HasPrefix(s[j:], "/details") && !wordAt(s, j+len("/details")) {
			return -1
		}
		if j < len(s) && s[j] == '/' {
			j++
		}
		if j >= len(s) || !isASCIILetter(s[j]) {
			return -1
		}
		for j < len(s) && (isASCIILetter(s[j]) || s[j] >= '0' && s[j] <= '9' || s[j] == ':' || s[j] == '-') {
			j++
		}
		rest := s[j:]
		switch {
		case strings.HasPrefix(rest, ">"):
			return j + 1
		case strings.HasPrefix(rest, "/>"):
			return j + 2
		}
		r, n := utf8.DecodeRuneInString(rest)
		if rest == "" || !pySpace(r) {
			return -1
		}
		k := strings.IndexAny(rest[n:], "<>")
		if k < 0 || rest[n+k] != '>' {
			return -1
		}
		return j + n + k + 1
	})
}

// maskInlineCode blanks code spans: a run of backticks not after a
// backslash or backtick, up to the next run of the same length not
// followed by a backtick.
func maskInlineCode(s string) string {
	return maskEach(s, func(s string, i int) int {
		if s[i] != '`' || i > 0 && (s[i-1] == '\\' || s[i-1] == '`') {
			return -1
		}
		n := 0
		for i+n < len(s) && s[i+n] == '`' {
			n++
		}
		run := s[i : i+n]
		for k := i + n; k+n <= len(s); k++ {
			if s[k:k+n] == run && (k+n == len(s) || s[k+n] != '`') {
				return k + n
			}
		}
		return -1
	})
}

// maskLinkTitles blanks the quoted title of each [text](url "title").
func maskLinkTitles(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		span, end := linkTitle(s, i)
		if end < 0 {
			i++
			continue
		}
		b.WriteString(s[last:span[0]])
		b.WriteString(blank(s[span[0]:span[1]]))
		last, i = span[1], end
	}
	b.WriteString(s[last:])
	return b.String()
}

// linkTitle matches \[[^\]\n]*\]\([^\s)\n]+[ \t]+(["'])(.*?)\1\) at i: the
// title's span and the match's end, or end -1.
func linkTitle(s string, i int) ([2]int, int) {
	none := [2]int{}
	if s[i] != '[' {
		return none, -1
	}
	j := i + 1
	for j < len(s) && s[j] != ']' && s[j] != '\n' {
		j++
	}
	if j+1 >= len(s) || s[j] != ']' || s[j+1] != '(' {
		return none, -1
	}
	j += 2
	url := j
	for j < len(s) {
		r, n := utf8.DecodeRuneInString(s[j:])
		if r == ')' || pySpace(r) {
			break
		}
		j += n
	}
	if j == url {
		return none, -1
	}
	sp := j
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	if j == sp || j >= len(s) || s[j] != '"' && s[j] != '\'' {
		return none, -1
	}
	q := s[j]
	start := j + 1
	for k := start; k+1 < len(s); k++ {
		if s[k] == q && s[k+1] == ')' {
			return [2]int{start, k}, k + 2
		}
	}
	return none, -1
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// wordAt reports whether a word character (Python's \w) starts at i.
func wordAt(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.In(r, unicode.Nl, unicode.No, unicode.Mn, unicode.Mc)
}
