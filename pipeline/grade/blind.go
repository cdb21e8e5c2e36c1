package grade

import (
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/skillgate/skillgate/pipeline/plan"
)

// skillRoots are the skills folders agents load skills from, as an agent
// may write them, besides the suite agent's own skillsDir.
var skillRoots = []string{".claude/skills", ".agents/skills", ".codex/skills", "$CODEX_HOME/skills", "${CODEX_HOME}/skills"}

// skillsDirVariable names the skills folder in a skill arm's environment
// only (see #Agent).
const skillsDirVariable = "SKILLGATE_SKILLS_DIR"

// blinder hides, in the text an agent produced, what differs between arms:
// the installed skills' names, their paths and the forced-prompt
// template's words (see the package comment for the rule). A blinder is
// made for one case: what the case's own task text holds (its prompt,
// seed, rubric and fixture files, which every arm shares) is never taken
// for a sign of an arm. Call share with every such text before text or
// diff.
type blinder struct {
	names   []blindName
	roots   []blindLiteral
	phrases []blindPhrase
	// skillFileShared: the task text names SKILL.md itself.
	skillFileShared bool
	// taskText is the shared task text, normalized (normalizeQuote);
	// quotes are the installed skills' SKILL.md lines long enough to be a
	// quote and not in the task text.
	taskText string
	quotes   []string
}

// blindName is one installed skill name.
type blindName struct {
	name string
	// shared: the name is also a word of the task text, so it is hidden
	// only in skill context.
	shared bool
	// entries are the top-level files and folders of its skill trees, whose
	// paths NAME/ENTRY the agent may write; shared ones are left alone.
	entries []blindLiteral
}

// blindLiteral is a path the agent may write, and whether the task text
// holds it too.
type blindLiteral struct {
	text   string
	shared bool
}

// blindPhrase is one line of the forced-prompt template, its {{skills}}
// matching any names.
type blindPhrase struct {
	re     *regexp.Regexp
	shared bool
}

// newBlinder collects what the plan's arms can reveal: the names the arms
// install skills as, their trees' entries, the skills folders and, when an
// arm forces its skills, the forced-prompt template's lines.
func newBlinder(p *plan.Plan) *blinder {
	b := &blinder{}
	entries := map[string][]string{}
	forced := false
	for _, arm := range p.Arms {
		for _, key := range plan.ArmSkills(p, arm) {
			sk, ok := p.Skills[key]
			if !ok {
				continue
			}
			forced = forced || arm.Activation == "forced"
			for f := range sk.Files {
				top, _, _ := strings.Cut(f, "/")
				if !slices.Contains(entries[sk.Name], top) {
					entries[sk.Name] = append(entries[sk.Name], top)
				}
			}
			if _, ok := entries[sk.Name]; !ok {
				entries[sk.Name] = nil
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		n := blindName{name: name}
		slices.Sort(entries[name])
		for _, e := range entries[name] {
			n.entries = append(n.entries, blindLiteral{text: name + "/" + e})
		}
		b.names = append(b.names, n)
	}
	// Longest first, so a name containing another is hidden whole.
	slices.SortStableFunc(b.names, func(x, y blindName) int { return len(y.name) - len(x.name) })
	if len(b.names) == 0 {
		return b
	}
	roots := append([]string{}, skillRoots...)
	if d := path.Clean(p.Agent.SkillsDir); p.Agent.SkillsDir != "" && d != "." && !slices.Contains(roots, d) {
		roots = append(roots, d)
	}
	roots = append(roots, skillsDirVariable)
	for _, r := range roots {
		b.roots = append(b.roots, blindLiteral{text: r})
	}
	if forced {
		b.phrases = forcedPhrases(p.Agent.ForcedPrompt)
	}
	return b
}

// skillsPattern matches what {{skills}} becomes: names (#Name) joined by
// ", ", as the runner writes them.
const skillsPattern = `(?i:[a-z0-9][a-z0-9._-]*(?:, [a-z0-9][a-z0-9._-]*)*)`

// forcedPhrases are the lines of the forced-prompt template around
// {{prompt}}, each a pattern in which {{skills}} matches any names. A line
// of fewer than two literal words is left out: it would match ordinary
// prose.
func forcedPhrases(template string) []blindPhrase {
	var out []blindPhrase
	for _, part := range strings.Split(template, "{{prompt}}") {
		for _, line := range strings.Split(part, "\n") {
			line = strings.TrimSpace(line)
			literal := strings.TrimSpace(strings.ReplaceAll(line, "{{skills}}", " "))
			if len(strings.Fields(literal)) < 2 {
				continue
			}
			pieces := strings.Split(line, "{{skills}}")
			for i, pc := range pieces {
				pieces[i] = regexp.QuoteMeta(pc)
			}
			out = append(out, blindPhrase{re: regexp.MustCompile(strings.Join(pieces, skillsPattern))})
		}
	}
	return out
}

// shareCase marks what the case's prompt, seed and rubric hold.
func (b *blinder) shareCase(pc plan.PlanCase) {
	b.share(pc.Prompt)
	for _, t := range pc.Seed {
		b.share(t.Content)
	}
	for _, c := range pc.Rubric {
		b.share(c)
	}
}

// share marks the names, paths and phrases that s, a text every arm is
// given, holds.
func (b *blinder) share(s string) {
	if len(b.names) == 0 || s == "" {
		return
	}
	lower := asciiLower(s)
	b.skillFileShared = b.skillFileShared || hasWord(lower, "skill.md")
	b.taskText += " " + normalizeQuote(s) + " "
	for i := range b.names {
		n := &b.names[i]
		if !n.shared && hasWord(lower, n.name) {
			n.shared = true
		}
		for j := range n.entries {
			if !n.entries[j].shared && strings.Contains(s, n.entries[j].text) {
				n.entries[j].shared = true
			}
		}
	}
	for i := range b.roots {
		if !b.roots[i].shared && strings.Contains(s, b.roots[i].text) {
			b.roots[i].shared = true
		}
	}
	for i := range b.phrases {
		if !b.phrases[i].shared && b.phrases[i].re.MatchString(s) {
			b.phrases[i].shared = true
		}
	}
}

// diff hides what the added lines of a unified diff reveal; its headers,
// context and removed lines are the fixture's, which every arm shares. An
// added line left with nothing goes, and its hunk's header counts one line
// fewer, so the diff reads as if the line was never written.
func (b *blinder) diff(d string) string {
	if len(b.names) == 0 || d == "" {
		return d
	}
	lines := strings.SplitAfter(d, "\n")
	hunk, gone := -1, 0
	for i, l := range lines {
		if strings.HasPrefix(l, "@@ ") {
			if hunk >= 0 {
				lines[hunk] = hunkHeader(lines[hunk], gone)
			}
			hunk, gone = i, 0
			continue
		}
		if i < 2 || !strings.HasPrefix(l, "+") {
			continue // "--- a/x" and "+++ b/x" come first
		}
		body, nl := strings.CutSuffix(l[1:], "\n")
		kept, dropped := b.sentences(body, false)
		if dropped && strings.TrimSpace(kept) == "" {
			lines[i] = "" // the whole added line revealed an arm
			gone++
			continue
		}
		lines[i] = "+" + kept
		if nl {
			lines[i] += "\n"
		}
	}
	if hunk >= 0 {
		lines[hunk] = hunkHeader(lines[hunk], gone)
	}
	return strings.Join(lines, "")
}

// hunkHeaderPattern reads a unified diff's hunk header.
var hunkHeaderPattern = regexp.MustCompile(`^@@ -(\d+(?:,\d+)?) \+(\d+)(?:,(\d+))? @@(.*)$`)

// hunkHeader is a hunk's header line with gone added lines fewer.
func hunkHeader(line string, gone int) string {
	if gone == 0 {
		return line
	}
	body, nl := strings.CutSuffix(line, "\n")
	m := hunkHeaderPattern.FindStringSubmatch(body)
	if m == nil {
		return line
	}
	n := 1
	if m[3] != "" {
		n, _ = strconv.Atoi(m[3])
	}
	n -= gone
	count := ""
	if n != 1 {
		count = "," + strconv.Itoa(n)
	}
	out := "@@ -" + m[1] + " +" + m[2] + count + " @@" + m[4]
	if nl {
		out += "\n"
	}
	return out
}

// pathByte is a byte of a path as agents write them.
func pathByte(c byte) bool {
	return wordByte(c) || strings.IndexByte("./~$%{}@+-", c) >= 0
}

// pathSpans lists where s holds a skill's path, as [start, end) pairs of
// the path-like runs of s.
func (b *blinder) pathSpans(s string) [][2]int {
	var out [][2]int
	for i := 0; i < len(s); {
		if !pathByte(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && pathByte(s[j]) {
			j++
		}
		tok := strings.TrimRight(s[i:j], ".")
		if b.skillPath(tok) {
			out = append(out, [2]int{i, i + len(tok)})
		}
		i = j
	}
	return out
}

// skillPath reports whether tok is a path into an installed skill or a
// skills folder: ROOT, ROOT/NAME..., or NAME/ENTRY... at the start of tok
// or after a slash, ROOT a skills folder, NAME an installed name and ENTRY
// a top-level file or folder of its tree.
func (b *blinder) skillPath(tok string) bool {
	atSegment := func(i int) bool { return i == 0 || tok[i-1] == '/' }
	ends := func(i int) bool { return i == len(tok) || tok[i] == '/' }
	for _, r := range b.roots {
		if r.shared {
			continue
		}
		for at := 0; ; {
			i := strings.Index(tok[at:], r.text)
			if i < 0 {
				break
			}
			i += at
			at = i + 1
			end := i + len(r.text)
			if !atSegment(i) && r.text[0] != '$' && r.text != skillsDirVariable {
				continue
			}
			if r.text == skillsDirVariable || end == len(tok) || end == len(tok)-1 && tok[end] == '/' {
				return true
			}
			if tok[end] != '/' {
				continue
			}
			for _, n := range b.names {
				if strings.HasPrefix(tok[end+1:], n.name) && ends(end+1+len(n.name)) {
					return true
				}
			}
		}
	}
	for _, n := range b.names {
		for _, e := range n.entries {
			if e.shared {
				continue
			}
			for at := 0; ; {
				i := strings.Index(tok[at:], e.text)
				if i < 0 {
					break
				}
				i += at
				at = i + 1
				if atSegment(i) && ends(i+len(e.text)) {
					return true
				}
			}
		}
	}
	return false
}

// skillWords are the words that make a neighbouring name a skill's.
var skillWords = []string{"skill", "skills"}

// skillConnector is a byte that may stand between a name and the word
// skill: `the "changelog" skill`, `Skill(changelog)`, `"skill": "changelog"`.
func skillConnector(c byte) bool {
	return strings.IndexByte(" \t\"'`*:(=[-", c) >= 0
}

// skillContext reports whether s[i:end], a name, is a skill's: the word
// skill (or skills) next to it, across at most five connector bytes, and
// on its left also across "named" or "called" (`a skill named changelog`).
func skillContext(s string, i, end int) bool {
	const reach = 5
	wordBefore := func(j int) (string, int) {
		k := j
		for k > 0 && wordByte(s[k-1]) {
			k--
		}
		return asciiLower(s[k:j]), k
	}
	skipBack := func(j int) (int, bool) {
		k := j
		for k > 0 && j-k < reach && skillConnector(s[k-1]) {
			k--
		}
		return k, k < j
	}
	if j, ok := skipBack(i); ok {
		w, k := wordBefore(j)
		if w == "named" || w == "called" {
			if j, ok = skipBack(k); ok {
				w, _ = wordBefore(j)
			}
		}
		if slices.Contains(skillWords, w) {
			return true
		}
	}
	j := end
	for j < len(s) && j-end < reach && skillConnector(s[j]) {
		j++
	}
	if j == end {
		return false
	}
	k := j
	for k < len(s) && wordByte(s[k]) {
		k++
	}
	return slices.Contains(skillWords, asciiLower(s[j:k]))
}

// wordMatches lists where name occurs in lower as a whole word: not
// preceded or followed by a letter, digit or underscore.
func wordMatches(lower, name string) []int {
	var out []int
	for at := 0; ; {
		i := nextWord(lower, name, at)
		if i < 0 {
			return out
		}
		out = append(out, i)
		at = i + len(name)
	}
}

// hasWord reports whether name occurs in lower as a whole word.
func hasWord(lower, name string) bool { return nextWord(lower, name, 0) >= 0 }

// nextWord is where name next occurs in lower as a whole word from at, or -1.
func nextWord(lower, name string, at int) int {
	for {
		i := strings.Index(lower[at:], name)
		if i < 0 {
			return -1
		}
		i += at
		end := i + len(name)
		if (i == 0 || !wordByte(lower[i-1])) && (end == len(lower) || !wordByte(lower[end])) {
			return i
		}
		at = i + 1
	}
}

func wordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// asciiLower lower-cases ASCII letters only, so byte offsets stay those of s.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
