package chrisbanes

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

func TestTranslate(t *testing.T) {
	for _, tc := range []struct {
		python, re2 string
		// match is a text both dialects match with the pattern (checked
		// here with the RE2 form); "" skips it.
		match string
	}{
		{`done\Z`, `done\z`, "all done"},
		{`\\Z`, `\\Z`, `\Z`},
		{`(?P<id>[a-z]+)-\d`, `(?P<id>[a-z]+)-\d`, "ab-1"},
		{`(?<id>x)`, `(?P<id>x)`, "x"},
		{`\u00e9t\U0001F600`, `\x{00e9}t\x{0001F600}`, "ét😀"},
		{`a{,2}b`, `a{0,2}b`, "aab"},
		{`a{x`, `a\{x`, "a{x"},
		{`(?#note)ab`, `ab`, "ab"},
		{`(?ai)ab`, `(?i)ab`, "AB"},
		{`(?a)ab`, `ab`, "ab"},
		{`(?i:x)y`, `(?i:x)y`, "Xy"},
		{`[[x]`, `[\[x]`, "["},
		{`[]a]`, `[\]a]`, "]"},
		{`[\b]`, `[\x08]`, "\b"},
		{`a+?b`, `a+?b`, "aab"},
		// A lookahead that ends the pattern is its text, for a search.
		{`(?:^|\s)(?:[^\s]+/)?gradlew(?=$|\s)`, `(?:^|\s)(?:[^\s]+/)?gradlew(?:$|\s)`, "./gradlew test"},
		{`x(?=[)]y)`, `x(?:[)]y)`, "x)y"},
	} {
		got, err := Translate(tc.python)
		if err != nil || got != tc.re2 {
			t.Errorf("Translate(%q) = %q, %v; want %q", tc.python, got, err, tc.re2)
			continue
		}
		if tc.match != "" && !regexp.MustCompile(got).MatchString(tc.match) {
			t.Errorf("%q (from %q) does not match %q", got, tc.python, tc.match)
		}
	}
}

func TestTranslateRefuses(t *testing.T) {
	for _, tc := range []struct {
		python string
		offset int
		says   string
	}{
		{`x(?=y)z`, 1, "lookahead"},
		{`(x(?=y))`, 2, "lookahead"},
		{`x(?=y)|z`, 1, "lookahead"},
		{`x(?!y)`, 1, "lookahead"},
		{`(?<=a)b`, 0, "lookbehind"},
		{`(?<!a)b`, 0, "lookbehind"},
		{`(a)\1`, 3, "backreference"},
		{`(?P<a>x)(?P=a)`, 8, "backreference"},
		{`(?>ab)`, 0, "atomic"},
		{`(a)?(?(1)b|c)`, 4, "conditional"},
		{`a*+`, 2, "possessive"},
		{`a{2}+`, 4, "possessive"},
		{`(?x) a b`, 2, "verbose"},
		{`(?L)a`, 2, "locale"},
		{`\N{DASH}`, 0, "named Unicode"},
		{`a{1001}`, 0, "does not compile"},
		{`x\`, 1, "lone backslash"},
	} {
		_, err := Translate(tc.python)
		var pe *PatternError
		if !errors.As(err, &pe) || pe.Offset != tc.offset || !strings.Contains(pe.Msg, tc.says) {
			t.Errorf("Translate(%q) = %v; want a refusal at offset %d saying %q", tc.python, err, tc.offset, tc.says)
		}
	}
}
