package mutate

import (
	"regexp"
	"strings"
)

// rule is a line of the body that states one rule on its own, and the
// line with the rule turned around.
type rule struct {
	line     int
	inverted string
}

// listItem is a Markdown list item's first line.
var listItem = regexp.MustCompile(`^\s*([-*+]|[0-9]+[.)])\s+\S`)

// imperative finds the words an inversion turns around; "must not" and
// "do not" before "must" and "do".
var imperative = regexp.MustCompile(`(?i)\b(must not|mustn't|must|never|always|do not|don't)\b`)

// opposite is each imperative's inverse, in lower case.
var opposite = map[string]string{
	"must not": "must", "mustn't": "must", "must": "must not",
	"never": "always", "always": "never",
	"do not": "do", "don't": "do",
}

// rules are the body's single-line rules: list items outside fenced code
// that end on their own line (the next line is blank, another item, a
// heading or the end) and hold exactly one imperative.
func rules(body []string) []rule {
	var out []rule
	for _, i := range outsideFences(body) {
		raw := body[i]
		if !listItem.MatchString(raw) || !endsItem(body, i) {
			continue
		}
		found := imperative.FindAllStringIndex(raw, -1)
		if len(found) != 1 {
			continue
		}
		at := found[0]
		word := raw[at[0]:at[1]]
		out = append(out, rule{line: i, inverted: raw[:at[0]] + matchCase(opposite[strings.ToLower(word)], word) + raw[at[1]:]})
	}
	return out
}

// endsItem says whether line i is the whole of its list item.
func endsItem(body []string, i int) bool {
	if i+1 >= len(body) {
		return true
	}
	next := body[i+1]
	return strings.TrimSpace(next) == "" || listItem.MatchString(next) || headingLine.MatchString(strings.TrimRight(next, "\r\n"))
}

// matchCase writes word's replacement with word's case: "Never" gives
// "Always", "NEVER" gives "ALWAYS".
func matchCase(repl, word string) string {
	switch {
	case word == strings.ToUpper(word):
		return strings.ToUpper(repl)
	case word[:1] == strings.ToUpper(word[:1]):
		return strings.ToUpper(repl[:1]) + repl[1:]
	}
	return repl
}
