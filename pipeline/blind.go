package pipeline

import (
	"sort"
	"strings"
)

// redactedName replaces a skill name in a packet.
const redactedName = "[redacted]"

// blinder scrubs the suite's skill names and keys from packet text.
type blinder struct{ names []string }

func newBlinder(p *Plan) blinder {
	seen := map[string]bool{}
	var names []string
	for key, s := range p.Skills {
		for _, n := range []string{key, s.Name} {
			if n != "" && !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	// Longest first, so a name containing another is replaced whole.
	sort.Slice(names, func(i, j int) bool {
		if len(names[i]) != len(names[j]) {
			return len(names[i]) > len(names[j])
		}
		return names[i] < names[j]
	})
	return blinder{names: names}
}

func wordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// text replaces whole-word occurrences of the names: not preceded or
// followed by a letter, digit or underscore.
func (b blinder) text(s string) string {
	for _, n := range b.names {
		if !strings.Contains(s, n) {
			continue
		}
		var out strings.Builder
		from := 0 // s[:from] is written
		for at := 0; ; {
			i := strings.Index(s[at:], n)
			if i < 0 {
				break
			}
			i += at
			end := i + len(n)
			if (i == 0 || !wordByte(s[i-1])) && (end == len(s) || !wordByte(s[end])) {
				out.WriteString(s[from:i])
				out.WriteString(redactedName)
				from = end
			}
			at = end
		}
		out.WriteString(s[from:])
		s = out.String()
	}
	return s
}

// UnifiedDiff is a unified diff of one file, before → after, with three
