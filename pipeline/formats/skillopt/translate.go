package skillopt

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"cuelang.org/go/cue/ast"
	cueerrors "cuelang.org/go/cue/errors"
)

// translate gives each assertion of a case the text its skillgate check
// needs: the RE2 pattern of an answer check, the shell command of a
// command, "" for a file check. SkillOpt's patterns are JavaScript
// regular expressions: what RE2 can say is translated, the rest (look-
// arounds, back-references) is refused at the pattern's position.
func translate(c *EvalCase, expr ast.Expr, fixtures string) ([]ast.Expr, cueerrors.Error) {
	var errs cueerrors.Error
	fail := func(steps []any, format string, args ...any) {
		errs = cueerrors.Append(errs, cueerrors.Newf(lookup(expr, steps).Pos(), "read case %s: "+format, append([]any{c.ID}, args...)...))
	}
	if c.Fixture != nil && fixtures == "" {
		fail([]any{"fixture"}, "its fixture %q is a folder of SkillOpt's evals/fixtures, which formats.skillopt.fixtures must name", *c.Fixture)
	}
	out := make([]ast.Expr, len(c.Assertions))
	for i, a := range c.Assertions {
		at := []any{"assertions", i}
		pos := lookup(expr, at).Pos()
		text := ""
		switch a.Kind {
		case KindContains, KindNotContains:
			if a.CaseSensitive == nil || !*a.CaseSensitive {
				text = "(?i)" + regexp.QuoteMeta(deref(a.Value))
			}
		case KindRegex:
			flags := defaultRegexFlags
			if a.Flags != nil {
				flags = *a.Flags
			}
			re, err := TranslateRegex(deref(a.Value), flags)
			if err != nil {
				fail(append(at, "value"), "%v", err)
			}
			text = re
		case KindFileChanged:
			fail(append(at, "kind"), "a file-changed assertion has no skillgate check yet: skillgate compares a file with the fixture only as file-unchanged")
		case KindCommand:
			if a.Stdout != nil || a.Stderr != nil {
				fail(append(at, "command"), "a command assertion's stdout and stderr patterns have no skillgate check yet: only the exit code of a run: check counts")
			}
			text = shellCommand(a.Command, a.ExpectedExitCode)
		}
		out[i] = positioned(ast.NewString(text), pos)
	}
	return out, errs
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// shellCommand is a command's argv as one sh command line whose exit
// status is 0 exactly when the command exits with the expected code.
func shellCommand(argv []string, expected *int) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	cmd := strings.Join(q, " ")
	if expected != nil && *expected != 0 {
		return fmt.Sprintf("%s; [ $? -eq %d ]", cmd, *expected)
	}
	return cmd
}

// TranslateRegex turns a JavaScript pattern with its flags into an RE2
// pattern of the same meaning, or says why RE2 cannot express it.
func TranslateRegex(pattern, flags string) (string, error) {
	var prefix string
	for _, f := range flags {
		switch f {
		case 'i', 's', 'm':
			if !strings.ContainsRune(prefix, f) {
				prefix += string(f)
			}
		case 'g', 'y', 'd', 'u':
			// g, y and d change what a match returns, not whether one exists;
			// u is RE2's own reading of the pattern.
		default:
			return "", fmt.Errorf("regular expression flag %q has no RE2 equivalent", f)
		}
	}
	var b strings.Builder
	inClass := false
	for i := 0; i < len(pattern); i++ {
		ch := pattern[i]
		switch {
		case ch == '\\' && i+1 < len(pattern):
			next := pattern[i+1]
			switch {
			case next >= '1' && next <= '9' && !inClass, next == 'k' && !inClass:
				return "", fmt.Errorf("regular expression %q uses a back-reference (\\%c), which RE2 cannot match", pattern, next)
			case next == 'u' && i+2 < len(pattern) && pattern[i+2] == '{':
				end := strings.IndexByte(pattern[i:], '}')
				if end < 0 {
					return "", fmt.Errorf("regular expression %q: unterminated \\u{", pattern)
				}
				b.WriteString(`\x{` + pattern[i+3:i+end] + `}`)
				i += end
				continue
			case next == 'u' && i+5 < len(pattern):
				if _, err := strconv.ParseUint(pattern[i+2:i+6], 16, 32); err == nil {
					b.WriteString(`\x{` + pattern[i+2:i+6] + `}`)
					i += 5
					continue
				}
			case next == '/':
				b.WriteByte('/')
				i++
				continue
			}
			b.WriteByte(ch)
			b.WriteByte(next)
			i++
			continue
		case inClass:
			if ch == ']' {
				inClass = false
			}
		case ch == '[':
			if strings.HasPrefix(pattern[i:], "[^]") {
				b.WriteString(`[\s\S]`)
				i += 2
				continue
			}
			inClass = true
		case ch == '(' && strings.HasPrefix(pattern[i:], "(?"):
			for _, la := range []string{"(?=", "(?!", "(?<=", "(?<!"} {
				if strings.HasPrefix(pattern[i:], la) {
					return "", fmt.Errorf("regular expression %q uses a look-around (%s...), which RE2 cannot match", pattern, la)
				}
			}
		}
		b.WriteByte(ch)
	}
	out := b.String()
	if prefix != "" {
		out = "(?" + prefix + ")" + out
	}
	if _, err := regexp.Compile(out); err != nil {
		return "", fmt.Errorf("regular expression %q is not one RE2 can match: %v", pattern, err)
	}
	return out, nil
}
