package grade

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// secretMarker is what the store holds in place of a secret (runner/redact's
// Redacted): an arm whose agent printed one would be told apart by it, so
// a clause holding it is dropped in every arm.
const secretMarker = "[REDACTED]"

// minQuote is the shortest normalized text (in bytes) taken for a quote
// of a skill's SKILL.md: shorter lines ("# Notes", "---") are ordinary
// prose.
const minQuote = 20

// quoteSkills collects the lines of the SKILL.md of every skill the
// attempts' workspaces install, so a sentence quoting one is dropped from
// every attempt alike.
func (b *blinder) quoteSkills(worlds ...World) error {
	if len(b.names) == 0 {
		return nil
	}
	for _, w := range worlds {
		for _, sk := range w.Skills {
			data, err := os.ReadFile(filepath.Join(sk.Dir, "SKILL.md"))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			for _, line := range strings.Split(string(data), "\n") {
				if q := normalizeQuote(line); len(q) >= minQuote && !strings.Contains(b.taskText, q) {
					b.quotes = append(b.quotes, q)
				}
			}
		}
	}
	return nil
}

// normalizeQuote lower-cases s, drops Markdown's marks and quotes around
// words and the closing punctuation, and collapses white space, so a line
// quoted in other layout matches.
func normalizeQuote(s string) string {
	fields := strings.Fields(asciiLower(s))
	for i, f := range fields {
		fields[i] = strings.Trim(f, "#>*-_`\"'")
	}
	return strings.TrimRight(strings.Join(strings.Fields(strings.Join(fields, " ")), " "), ".,;:!?")
}

// text drops from s, a text the agent produced, every sentence that
// reveals its arm, silently: a dropped sentence leaves no marker, so the
// packets of two arms answering alike are equal whatever one of them said
// of its skill. A line left with nothing is dropped whole.
func (b *blinder) text(s string) string {
	if len(b.names) == 0 || s == "" {
		return s
	}
	var out strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		body, nl := strings.CutSuffix(line, "\n")
		kept, dropped := b.sentences(body, true)
		if dropped && strings.TrimSpace(kept) == "" {
			continue
		}
		out.WriteString(kept)
		if nl {
			out.WriteString("\n")
		}
	}
	return out.String()
}

// sentences drops what reveals an arm from the sentences of one line;
// dropped says whether anything was. quotes: a clause reciting a line of
// SKILL.md goes too (in what the agent says, not in what it writes: a file
// holding the template a skill prescribes is the skill's effect, which the
// judge must see).
func (b *blinder) sentences(line string, quotes bool) (kept string, dropped bool) {
	var out strings.Builder
	for _, s := range splitSentences(line) {
		k, d := b.sentence(s, quotes)
		dropped = dropped || d
		out.WriteString(k)
	}
	if !dropped {
		return line, false
	}
	return strings.TrimRight(out.String(), " \t"), true
}

// sentence drops from one sentence (its white space after it included)
// the forced-prompt lines it holds, then every clause that reveals an arm;
// what is left keeps the sentence's closing mark. A sentence left with
// nothing goes whole.
func (b *blinder) sentence(s string, quotes bool) (string, bool) {
	body := strings.TrimRight(s, " \t")
	space := s[len(body):]
	dropped := false
	for _, ph := range b.phrases {
		if !ph.shared && ph.re.MatchString(body) {
			body, dropped = ph.re.ReplaceAllLiteralString(body, ""), true
		}
	}
	end := ""
	if n := len(body); n > 0 && strings.IndexByte(".!?", body[n-1]) >= 0 {
		end = body[n-1:]
	}
	spans := b.spans(body)
	var keep []string
	at := 0
	for _, c := range splitClauses(body) {
		from, to := at, at+len(c)
		at = to
		if overlaps(spans, from, to) || (quotes && b.quoted(c)) {
			dropped = true
			continue
		}
		keep = append(keep, c)
	}
	if !dropped {
		return s, false
	}
	// A clause of the word skill alone ("skills: cl") goes with its name.
	var out strings.Builder
	for _, c := range keep {
		if w := strings.Fields(strings.Trim(asciiLower(c), " \t,;:")); len(w) == 1 && slices.Contains(skillWords, w[0]) {
			continue
		}
		out.WriteString(c)
	}
	kept := strings.TrimSpace(strings.TrimRight(out.String(), " \t,;:"))
	if kept == "" {
		return "", true
	}
	if end != "" && !strings.HasSuffix(kept, end) {
		kept = strings.TrimRight(kept, ".!?") + end
	}
	return kept + space, true
}

// splitClauses cuts a sentence after each ',', ';' or ':' that white
// space follows.
func splitClauses(s string) []string {
	var out []string
	from := 0
	for i := 0; i+1 < len(s); i++ {
		if strings.IndexByte(",;:", s[i]) >= 0 && (s[i+1] == ' ' || s[i+1] == '\t') {
			out = append(out, s[from:i+1])
			from = i + 1
		}
	}
	return append(out, s[from:])
}

// splitSentences cuts a line after each '.', '!' or '?' that white space
// follows, the white space going with the sentence before it.
func splitSentences(line string) []string {
	var out []string
	from := 0
	for i := 0; i < len(line); i++ {
		if c := line[i]; (c == '.' || c == '!' || c == '?') && i+1 < len(line) && (line[i+1] == ' ' || line[i+1] == '\t') {
			j := i + 1
			for j < len(line) && (line[j] == ' ' || line[j] == '\t') {
				j++
			}
			out = append(out, line[from:j])
			from, i = j, j-1
		}
	}
	if from < len(line) {
		out = append(out, line[from:])
	}
	return out
}

// spans lists where s, a sentence the agent wrote, shows what differs
// between arms: a skill path, SKILL.md, a secret's marker, an installed name (a name the task
// also uses only in skill context, which is read across the sentence).
func (b *blinder) spans(s string) [][2]int {
	out := b.pathSpans(s)
	for at := 0; ; {
		i := strings.Index(s[at:], secretMarker)
		if i < 0 {
			break
		}
		out = append(out, [2]int{at + i, at + i + len(secretMarker)})
		at += i + len(secretMarker)
	}
	lower := asciiLower(s)
	if !b.skillFileShared {
		for _, i := range wordMatches(lower, "skill.md") {
			out = append(out, [2]int{i, i + len("skill.md")})
		}
	}
	for _, n := range b.names {
		for _, i := range wordMatches(lower, n.name) {
			if !n.shared || skillContext(s, i, i+len(n.name)) {
				out = append(out, [2]int{i, i + len(n.name)})
			}
		}
	}
	return out
}

// overlaps reports whether a span meets [from, to).
func overlaps(spans [][2]int, from, to int) bool {
	for _, sp := range spans {
		if sp[0] < to && sp[1] > from {
			return true
		}
	}
	return false
}

// quoted reports whether s, a clause the agent wrote, recites a skill's
// SKILL.md: holds one of its lines whole. A piece of a line is not taken:
// a skill that prescribes an answer's words ("Answer: Hello, as the house
// greets.") changes the work by them, and the judge must see them.
func (b *blinder) quoted(s string) bool {
	q := normalizeQuote(s)
	for _, line := range b.quotes {
		if strings.Contains(q, line) {
			return true
		}
	}
	return false
}
