package chrisbanes

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// PatternError is a Python pattern RE2 cannot express, with the byte
// offset in the pattern where the construct starts.
type PatternError struct {
	Offset int
	Msg    string
}

func (e *PatternError) Error() string {
	return fmt.Sprintf("at offset %d: %s", e.Offset, e.Msg)
}

// Translate turns a pattern of Python's re module, as their validators
// compile it, into the RE2 pattern Go's regexp matches the same way, or
// says at which offset a construct has no RE2 form: lookbehinds, a
// lookahead anywhere but at the end (where a search reads it as its text),
// backreferences, atomic groups, possessive quantifiers, conditionals, the
// verbose and locale flags. What maps is rewritten: \Z is \z, \uXXXX and
// \UXXXXXXXX are \x{...}, {,n} is {0,n}, inline comments go, the a and u
// flags (RE2 classes are ASCII already; Python's str patterns' \w, \d, \s
// and \b are Unicode-aware, a difference on non-ASCII text only) go.
func Translate(p string) (string, error) {
	var b strings.Builder
	inClass := false
	depth := 0 // groups open at i
	for i := 0; i < len(p); i++ {
		c := p[i]
		var err error
		switch {
		case c == '\\':
			i, err = translateEscape(&b, p, i, inClass)
		case inClass:
			switch c {
			case ']':
				inClass = false
				b.WriteByte(c)
			case '[':
				// Python reads [ in a set as itself; RE2 would start [:name:].
				b.WriteString(`\[`)
			default:
				b.WriteByte(c)
			}
		case c == '[':
			inClass = true
			i = translateClassStart(&b, p, i)
		case c == '(':
			var opened bool
			i, opened, err = translateGroup(&b, p, i, depth)
			if opened {
				depth++
			}
		case c == '{':
			i, err = translateRepeat(&b, p, i)
		case c == ')':
			b.WriteByte(c)
			depth--
		case c == '*' || c == '+' || c == '?':
			b.WriteByte(c)
			if i+1 < len(p) && p[i+1] == '+' {
				err = refuse(i+1, "a possessive quantifier (%c+), which RE2 does not have", c)
			}
		default:
			b.WriteByte(c)
		}
		if err != nil {
			return "", err
		}
	}
	out := b.String()
	if _, err := regexp.Compile(out); err != nil {
		return "", &PatternError{Offset: 0, Msg: fmt.Sprintf("its RE2 form %q does not compile: %v", out, err)}
	}
	return out, nil
}

func refuse(i int, format string, args ...any) error {
	return &PatternError{Offset: i, Msg: fmt.Sprintf(format, args...)}
}

// translateEscape writes the RE2 form of the escape at p[i] and returns
// the offset of its last byte.
func translateEscape(b *strings.Builder, p string, i int, inClass bool) (int, error) {
	if i+1 >= len(p) {
		return i, refuse(i, "the pattern ends with a lone backslash")
	}
	n := p[i+1]
	switch {
	case n == 'Z' && !inClass:
		b.WriteString(`\z`)
	case n == 'b' && inClass:
		b.WriteString(`\x08`)
	case n >= '1' && n <= '9' && !inClass:
		return i, refuse(i, "a backreference (\\%c), which RE2 does not have", n)
	case n == 'u' || n == 'U':
		size := 4
		if n == 'U' {
			size = 8
		}
		hex := p[i+2 : min(len(p), i+2+size)]
		if _, err := strconv.ParseUint(hex, 16, 32); err != nil || len(hex) != size {
			return i, refuse(i, "a malformed \\%c escape", n)
		}
		b.WriteString(`\x{` + hex + `}`)
		i += size
	case n == 'N':
		return i, refuse(i, "a named Unicode character (\\N{...}), which RE2 does not have")
	default:
		b.WriteByte('\\')
		b.WriteByte(n)
	}
	return i + 1, nil
}

// translateClassStart writes the opening of the set at p[i] (with its ^
// and a leading ], which Python reads as itself) and returns the offset
// of its last byte.
func translateClassStart(b *strings.Builder, p string, i int) int {
	b.WriteByte('[')
	j := i + 1
	if j < len(p) && p[j] == '^' {
		b.WriteByte('^')
		j++
	}
	if j < len(p) && p[j] == ']' {
		b.WriteString(`\]`)
		j++
	}
	return j - 1
}

// translateRepeat writes the counted repetition or literal brace at p[i]
// and returns the offset of its last byte.
func translateRepeat(b *strings.Builder, p string, i int) (int, error) {
	m := repeatRange.FindStringSubmatch(p[i:])
	if m == nil {
		b.WriteString(`\{`)
		return i, nil
	}
	rep := m[0]
	if strings.HasPrefix(rep, "{,") {
		rep = "{0" + rep[1:]
	}
	b.WriteString(rep)
	i += len(m[0]) - 1
	if i+1 < len(p) && p[i+1] == '+' {
		return i, refuse(i+1, "a possessive quantifier (%s+), which RE2 does not have", m[0])
	}
	return i, nil
}

// translateGroup writes the RE2 form of what opens at the parenthesis
// p[i], with depth groups open before it, and returns the offset of its
// last byte and whether it opened a group (a comment and flags alone
// open none).
func translateGroup(b *strings.Builder, p string, i, depth int) (int, bool, error) {
	if i+1 >= len(p) || p[i+1] != '?' {
		b.WriteByte('(')
		return i, true, nil
	}
	rest := p[i+2:]
	switch {
	case strings.HasPrefix(rest, ":"), strings.HasPrefix(rest, "P<"):
		b.WriteString("(?" + rest[:1])
		return i + 2, true, nil
	case strings.HasPrefix(rest, "<=") || strings.HasPrefix(rest, "<!"):
		return i, false, refuse(i, "a lookbehind (?%s...), which RE2 does not have", rest[:2])
	case strings.HasPrefix(rest, "<"):
		b.WriteString("(?P<")
		return i + 2, true, nil
	case strings.HasPrefix(rest, "=") && depth == 0 && groupEnd(p, i) == len(p)-1:
		// A lookahead that ends the pattern: a search matches with it
		// exactly when it matches with its text consumed.
		b.WriteString("(?:")
		return i + 2, true, nil
	case strings.HasPrefix(rest, "=") || strings.HasPrefix(rest, "!"):
		return i, false, refuse(i, "a lookahead (?%s...), which RE2 does not have", rest[:1])
	case strings.HasPrefix(rest, "P="):
		return i, false, refuse(i, "a backreference (?P=...), which RE2 does not have")
	case strings.HasPrefix(rest, ">"):
		return i, false, refuse(i, "an atomic group (?>...), which RE2 does not have")
	case strings.HasPrefix(rest, "("):
		return i, false, refuse(i, "a conditional group (?(...)...), which RE2 does not have")
	case strings.HasPrefix(rest, "#"):
		end := strings.IndexByte(rest, ')')
		if end < 0 {
			return i, false, refuse(i, "an unterminated comment (?#...")
		}
		return i + 2 + end, false, nil
	}
	return translateFlags(b, p, i)
}

// translateFlags writes the inline flags (?flags) or flagged group
// (?flags:...) at p[i], keeping those RE2 has, and returns as
// translateGroup does.
func translateFlags(b *strings.Builder, p string, i int) (int, bool, error) {
	rest := p[i+2:]
	end := strings.IndexAny(rest, ":)")
	if end < 0 {
		return i, false, refuse(i, "an unterminated group")
	}
	var kept strings.Builder
	for k, f := range rest[:end] {
		switch f {
		case 'i', 'm', 's', '-':
			kept.WriteRune(f)
		case 'a', 'u':
		case 'x':
			return i, false, refuse(i+2+k, "the verbose flag (?x), which RE2 does not have")
		case 'L':
			return i, false, refuse(i+2+k, "the locale flag (?L), which RE2 does not have")
		default:
			return i, false, refuse(i+2+k, "an unknown flag %q", f)
		}
	}
	flags := strings.TrimSuffix(kept.String(), "-")
	switch {
	case rest[end] == ':':
		b.WriteString("(?" + flags + ":")
		return i + 2 + end, true, nil
	case flags != "":
		b.WriteString("(?" + flags + ")")
	}
	return i + 2 + end, false, nil
}

// groupEnd is the offset of the parenthesis that closes the group opened
// at p[open], or -1: escapes and character classes are skipped.
func groupEnd(p string, open int) int {
	depth, inClass := 0, false
	for i := open; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\':
			i++
		case inClass:
			inClass = c != ']'
		case c == '[':
			inClass = true
			if i+1 < len(p) && p[i+1] == '^' {
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				i++
			}
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// repeatRange is a counted repetition as Python reads one; anything else
// starting with { is a literal brace.
var repeatRange = regexp.MustCompile(`^\{(?:\d+|\d+,\d*|,\d+)\}`)
