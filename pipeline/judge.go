package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/opencontainers/go-digest"
)

// This file builds the judge's blinded packets, renders its prompts and
// reads its replies. It is pure: no model, no network; it reads only a
// cell's World (the fixture and the stored changed files).
//
// Blinding. A packet holds the task (the case's own prompt and seed, never
// an arm's forced prompt), the case's criteria, the fixture's text files,
// the final diff, the final answer and, for a rubric, the deterministic
// checks' names and details. It never holds the arm, the skills, their
// contents, the routing expectations, whether the cell passed, or its cell
// ID: a rubric packet names its attempt by an opaque candidate ID (a short
// digest of the grade key). Text the agent produced (answer, diff, check
// output) is scrubbed of the suite's skill names and keys as whole words
// (replaced by [redacted]), since a forced arm's agent was told them; an
// agent quoting its skill's contents is not scrubbed.

// Packet caps. A packet notes where it cut.
const (
	// PacketFileBytes caps each initial file's content.
	PacketFileBytes = 16 << 10
	// PacketFilesBytes caps the initial files' content in all; files past
	// it are listed as omitted.
	PacketFilesBytes = 96 << 10
	// PacketDiffBytes caps each changed file's diff.
	PacketDiffBytes = 32 << 10
	// PacketAnswerBytes caps the final answer.
	PacketAnswerBytes = 32 << 10
	// PacketDetailBytes caps a check's detail.
	PacketDetailBytes = 2 << 10
)

// PacketFormat versions the packets' layout and caps; it is part of the
// judge's identity (so of every judged grade key) and of every pairwise
// judgement key.
const PacketFormat = 1

// redactedName replaces a skill name in a packet.
const redactedName = "[redacted]"

// Candidate positions in a pairwise packet.
const (
	PositionA = "A"
	PositionB = "B"
)

// PacketTask is the task as every arm was given it.
type PacketTask struct {
	Prompt string `json:"prompt"`
	Seed   []Turn `json:"seed,omitempty"`
}

// PacketCriterion is one rubric criterion and its index, which a rubric
// reply must echo.
type PacketCriterion struct {
	Index int    `json:"index"`
	Text  string `json:"text"`
}

// PacketFile is one initial file of the fixture.
type PacketFile struct {
	Path string `json:"path"`
	// Bytes is the file's whole size; Truncated says Content is cut.
	Bytes     int64  `json:"bytes"`
	Truncated bool   `json:"truncated,omitempty"`
	Content   string `json:"content"`
}

// PacketFiles are the fixture's text files before the agent ran.
type PacketFiles struct {
	// Note says how the files were capped.
	Note  string       `json:"note"`
	Files []PacketFile `json:"files"`
	// Omitted lists files without content, each with why.
	Omitted []string `json:"omitted,omitempty"`
}

// PacketChange is one changed file of the final workspace as a unified
// diff, before → after.
type PacketChange struct {
	Path   string `json:"path"`
	Change string `json:"change"`
	// Truncated says Diff is cut at PacketDiffBytes.
	Truncated bool   `json:"truncated,omitempty"`
	Diff      string `json:"diff"`
}

// PacketEvidence is one deterministic check: its name and detail, not
// whether the cell passed.
type PacketEvidence struct {
	Check  string `json:"check"`
	Detail string `json:"detail,omitempty"`
}

// PacketAttempt is what one attempt produced: its final answer and diff.
type PacketAttempt struct {
	Answer          string         `json:"answer"`
	AnswerTruncated bool           `json:"answerTruncated,omitempty"`
	Diff            []PacketChange `json:"diff"`
}

// RubricPacket is what a rubric judge sees of one cell.
type RubricPacket struct {
	// Candidate is an opaque ID of the attempt (CandidateID).
	Candidate    string            `json:"candidate"`
	Task         PacketTask        `json:"task"`
	Criteria     []PacketCriterion `json:"criteria"`
	InitialFiles PacketFiles       `json:"initialFiles"`
	PacketAttempt
	Evidence []PacketEvidence `json:"evidence"`
}

// PairwisePacket is what a pairwise judge sees of one (case, trial, pair):
// two attempts as unlabelled A and B.
type PairwisePacket struct {
	Task         PacketTask        `json:"task"`
	Criteria     []PacketCriterion `json:"criteria"`
	InitialFiles PacketFiles       `json:"initialFiles"`
	A            PacketAttempt     `json:"A"`
	B            PacketAttempt     `json:"B"`
}

// JudgeAttempt is a graded cell as the packets need it.
type JudgeAttempt struct {
	Cell   Cell
	Answer string
	World  World
	// Checks are the cell's deterministic checks (judge checks are left out).
	Checks []CheckResult
}

// CandidateID is the opaque ID of a cell's attempt in a rubric packet: a
// short digest of its grade key, which names no arm, skill or cell.
func CandidateID(c Cell) string {
	return "cand-" + digest.FromString(string(c.Grade)).Encoded()[:12]
}

// PairwiseOrder is the candidate's position, A or B, in the first order a
// pair is shown in: random, but fixed by the suite's seed, the case, the
// trial and the pair.
func PairwiseOrder(seed int64, caseID string, trial int, pair Pair) string {
	d := digestJSON(struct {
		Seed      int64  `json:"seed"`
		Case      string `json:"case"`
		Trial     int    `json:"trial"`
		Candidate string `json:"candidate"`
		Baseline  string `json:"baseline"`
	}{seed, caseID, trial, pair.Candidate, pair.Baseline})
	if strings.IndexByte("02468ace", d.Encoded()[0]) >= 0 {
		return PositionA
	}
	return PositionB
}

// OtherPosition is B for A and A for B.
func OtherPosition(pos string) string {
	if pos == PositionA {
		return PositionB
	}
	return PositionA
}

// PairwiseKey is the key of one pairwise judgement in the store: the two
// cells' grade keys, the judge and the candidate's position.
func PairwiseKey(candidate, baseline, judge digest.Digest, candidatePos string) digest.Digest {
	return digestJSON(struct {
		Format    int           `json:"format"`
		Candidate digest.Digest `json:"candidate"`
		Baseline  digest.Digest `json:"baseline"`
		Judge     digest.Digest `json:"judge"`
		Position  string        `json:"position"`
	}{PacketFormat, candidate, baseline, judge, candidatePos})
}

// RubricJudged reports whether the plan's judge grades the case's rubric.
func RubricJudged(p *Plan, pc PlanCase) bool {
	return p.Judge != nil && p.Judge.Mode != "pairwise" && len(pc.Rubric) > 0
}

// BuildRubricPacket builds the blinded packet of one cell.
func BuildRubricPacket(p *Plan, pc PlanCase, a JudgeAttempt) (*RubricPacket, error) {
	b := newBlinder(p)
	files, err := initialFiles(p, pc, a.World, b)
	if err != nil {
		return nil, err
	}
	att, err := attempt(a, b)
	if err != nil {
		return nil, err
	}
	pk := &RubricPacket{Candidate: CandidateID(a.Cell), Task: task(pc, b), Criteria: criteria(pc, b),
		InitialFiles: files, PacketAttempt: att, Evidence: []PacketEvidence{}}
	for _, ch := range a.Checks {
		if ch.Kind == CheckJudge {
			continue
		}
		d, _ := capText(ch.Detail, PacketDetailBytes)
		pk.Evidence = append(pk.Evidence, PacketEvidence{Check: b.text(ch.Name), Detail: b.text(d)})
	}
	return pk, nil
}

// BuildPairwisePacket builds the blinded packet of two attempts at one
// case, already in presentation order: first is shown as A.
func BuildPairwisePacket(p *Plan, pc PlanCase, first, second JudgeAttempt) (*PairwisePacket, error) {
	b := newBlinder(p)
	files, err := initialFiles(p, pc, first.World, b)
	if err != nil {
		return nil, err
	}
	pa, err := attempt(first, b)
	if err != nil {
		return nil, err
	}
	pb, err := attempt(second, b)
	if err != nil {
		return nil, err
	}
	return &PairwisePacket{Task: task(pc, b), Criteria: criteria(pc, b), InitialFiles: files, A: pa, B: pb}, nil
}

// EncodePacket is a packet's JSON as the judge sees it: indented, HTML
// characters unescaped, no trailing newline.
func EncodePacket(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("encode packet: %v", err)) // only packet types reach here
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// PacketPlaceholder is replaced by the packet in a judge template.
const PacketPlaceholder = "{{packet}}"

// RenderJudgePrompt replaces {{packet}} in the template with the packet's
// JSON; a template without the placeholder gets the packet appended.
func RenderJudgePrompt(template string, packet []byte) string {
	if !strings.Contains(template, PacketPlaceholder) {
		return template + "\n\n" + string(packet)
	}
	return strings.ReplaceAll(template, PacketPlaceholder, string(packet))
}

func task(pc PlanCase, b blinder) PacketTask {
	t := PacketTask{Prompt: b.text(pc.Prompt)}
	for _, turn := range pc.Seed {
		t.Seed = append(t.Seed, Turn{Role: turn.Role, Content: b.text(turn.Content)})
	}
	return t
}

func criteria(pc PlanCase, b blinder) []PacketCriterion {
	out := []PacketCriterion{}
	for i, c := range pc.Rubric {
		out = append(out, PacketCriterion{Index: i, Text: b.text(c)})
	}
	return out
}

// initialFiles reads the fixture's text files in path order, each capped at
// PacketFileBytes and all at PacketFilesBytes.
func initialFiles(p *Plan, pc PlanCase, w World, b blinder) (PacketFiles, error) {
	out := PacketFiles{
		Note: fmt.Sprintf("The workspace before the attempt. Each file's content is cut at %d bytes (truncated: true); after %d bytes of content in all, files are listed in omitted. Binary files and symlinks are omitted.",
			PacketFileBytes, PacketFilesBytes),
		Files: []PacketFile{},
	}
	if pc.Fixture == "" {
		return out, nil
	}
	tree := p.Fixtures[cleanKey(pc.Fixture)]
	paths := make([]string, 0, len(tree.Files))
	for f := range tree.Files {
		paths = append(paths, f)
	}
	sort.Strings(paths)
	total := 0
	for _, f := range paths {
		e := tree.Files[f]
		if e.Mode == "symlink" {
			out.Omitted = append(out.Omitted, b.text(f)+" (symlink)")
			continue
		}
		data, ok, err := w.Initial(f)
		if err != nil {
			return out, fmt.Errorf("read initial file %s: %w", f, err)
		}
		if !ok {
			out.Omitted = append(out.Omitted, b.text(f)+" (missing)")
			continue
		}
		if !isText(data) {
			out.Omitted = append(out.Omitted, b.text(f)+" (binary)")
			continue
		}
		if total >= PacketFilesBytes {
			out.Omitted = append(out.Omitted, b.text(f)+" (over the packet's cap)")
			continue
		}
		content, cut := capText(string(data), min(PacketFileBytes, PacketFilesBytes-total))
		total += len(content)
		out.Files = append(out.Files, PacketFile{Path: b.text(f), Bytes: int64(len(data)), Truncated: cut, Content: b.text(content)})
	}
	return out, nil
}

// attempt is one attempt's answer and final diff, changed files in path order.
func attempt(a JudgeAttempt, b blinder) (PacketAttempt, error) {
	ans, cut := capText(a.Answer, PacketAnswerBytes)
	out := PacketAttempt{Answer: b.text(ans), AnswerTruncated: cut, Diff: []PacketChange{}}
	changes := append([]FileChange(nil), a.World.Changes...)
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	for _, ch := range changes {
		before, hadBefore, err := readRegular(a.World.Initial, ch.Path)
		if err != nil {
			return out, err
		}
		var after []byte
		hasAfter := false
		if ch.Kind != "deleted" {
			if after, hasAfter, err = readRegular(a.World.Read, ch.Path); err != nil {
				return out, err
			}
		}
		pc := PacketChange{Path: b.text(ch.Path), Change: ch.Kind}
		switch {
		case ch.Kind != "deleted" && !hasAfter:
			pc.Diff = "(not a regular file; content not shown)"
		case !isText(before) || !isText(after):
			pc.Diff = "(binary file; content not shown)"
		default:
			d := UnifiedDiff(ch.Path, string(before), string(after), hadBefore, hasAfter)
			d, pc.Truncated = capText(d, PacketDiffBytes)
			pc.Diff = b.text(d)
		}
		out.Diff = append(out.Diff, pc)
	}
	return out, nil
}

// readRegular reads a file through read, treating anything but a readable
// regular file (a folder, a symlink not stored) as absent.
func readRegular(read func(string) ([]byte, bool, error), rel string) ([]byte, bool, error) {
	data, ok, err := read(rel)
	if errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.ELOOP) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return data, ok, nil
}

// isText reports whether data is UTF-8 without NUL bytes.
func isText(data []byte) bool {
	return utf8.Valid(data) && bytes.IndexByte(data, 0) < 0
}

// capText cuts s to at most n bytes at a rune boundary.
func capText(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

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
// lines of context; "" when they are equal. A file that did not exist
// before (after) is /dev/null on that side.
func UnifiedDiff(name, before, after string, hadBefore, hasAfter bool) string {
	if before == after && hadBefore == hasAfter {
		return ""
	}
	a, b := diffLines(before), diffLines(after)
	from, to := "a/"+path.Clean(name), "b/"+path.Clean(name)
	if !hadBefore {
		from = "/dev/null"
	}
	if !hasAfter {
		to = "/dev/null"
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", from, to)
	ops := editScript(a, b)
	const context = 3
	// Group the edit script into hunks: changes with up to 2×context equal
	// lines between them share a hunk.
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(0, i-context)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*context {
				end = min(len(ops), end+context)
				break
			}
			end = run
		}
		var aStart, aLen, bStart, bLen int
		aStart, bStart = ops[start].a+1, ops[start].b+1
		for _, op := range ops[start:end] {
			if op.kind != '+' {
				aLen++
			}
			if op.kind != '-' {
				bLen++
			}
		}
		if aLen == 0 {
			aStart--
		}
		if bLen == 0 {
			bStart--
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
		for _, op := range ops[start:end] {
			out.WriteByte(op.kind)
			out.WriteString(op.line)
			out.WriteByte('\n')
			if op.noEOL {
				out.WriteString("\\ No newline at end of file\n")
			}
		}
		i = end
	}
	return out.String()
}

func hunkRange(start, n int) string {
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

type diffLine struct {
	text  string
	noEOL bool
}

func diffLines(s string) []diffLine {
	if s == "" {
		return nil
	}
	parts := strings.SplitAfter(s, "\n")
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	out := make([]diffLine, len(parts))
	for i, p := range parts {
		t, nl := strings.CutSuffix(p, "\n")
		out[i] = diffLine{text: t, noEOL: !nl}
	}
	return out
}

// diffOp is one line of an edit script: ' ' kept, '-' removed, '+' added;
// a and b are its line indexes before and after (of the next line when
// the op does not consume one on that side).
type diffOp struct {
	kind  byte
	line  string
	noEOL bool
	a, b  int
}

// diffCells bounds the LCS table; past it the differing middle is shown
// as removed whole and added whole.
const diffCells = 4 << 20

// editScript is a shortest edit script by longest common subsequence over
// the lines between the common prefix and suffix.
func editScript(a, b []diffLine) []diffOp {
	var ops []diffOp
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		ops = append(ops, diffOp{kind: ' ', line: a[pre].text, noEOL: a[pre].noEOL, a: pre, b: pre})
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	n, m := len(ma), len(mb)
	if n*m <= diffCells && n > 0 && m > 0 {
		// lcs[i][j] is the LCS length of ma[i:] and mb[j:].
		lcs := make([]int32, (n+1)*(m+1))
		at := func(i, j int) int32 { return lcs[i*(m+1)+j] }
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					lcs[i*(m+1)+j] = at(i+1, j+1) + 1
				} else {
					lcs[i*(m+1)+j] = max(at(i+1, j), at(i, j+1))
				}
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && ma[i] == mb[j]:
				ops = append(ops, diffOp{kind: ' ', line: ma[i].text, noEOL: ma[i].noEOL, a: pre + i, b: pre + j})
				i, j = i+1, j+1
			case i < n && (j == m || at(i+1, j) >= at(i, j+1)):
				ops = append(ops, diffOp{kind: '-', line: ma[i].text, noEOL: ma[i].noEOL, a: pre + i, b: pre + j})
				i++
			default:
				ops = append(ops, diffOp{kind: '+', line: mb[j].text, noEOL: mb[j].noEOL, a: pre + i, b: pre + j})
				j++
			}
		}
	} else {
		for i, l := range ma {
			ops = append(ops, diffOp{kind: '-', line: l.text, noEOL: l.noEOL, a: pre + i, b: pre})
		}
		for j, l := range mb {
			ops = append(ops, diffOp{kind: '+', line: l.text, noEOL: l.noEOL, a: pre + n, b: pre + j})
		}
	}
	for k := 0; k < suf; k++ {
		ia, ib := len(a)-suf+k, len(b)-suf+k
		ops = append(ops, diffOp{kind: ' ', line: a[ia].text, noEOL: a[ia].noEOL, a: ia, b: ib})
	}
	return ops
}

// --- replies ---

// ParseRubricReply reads a rubric judge's reply: {"criteria": [{"criterion":
// i, "pass": bool, "evidence": "..."}]} with exactly one result for each of
// the n criteria (0 to n-1). A reply wrapped in a code fence or in prose is
// read from its outermost braces. A missing, duplicate, extra or malformed
// result makes the whole reply invalid: the error says why.
func ParseRubricReply(reply string, n int) ([]CriterionResult, error) {
	var r struct {
		Criteria *[]json.RawMessage `json:"criteria"`
	}
	if err := decodeReply(reply, &r); err != nil {
		return nil, err
	}
	if r.Criteria == nil {
		return nil, errors.New(`the reply has no "criteria" list`)
	}
	out := make([]CriterionResult, n)
	seen := make([]int, n)
	var problems []string
	for k, raw := range *r.Criteria {
		var item struct {
			Criterion json.RawMessage `json:"criterion"`
			Pass      *bool           `json:"pass"`
			Evidence  *string         `json:"evidence"`
		}
		if err := json.Unmarshal(raw, &item); err != nil {
			problems = append(problems, fmt.Sprintf("result %d is malformed: %v", k, err))
			continue
		}
		if item.Criterion == nil {
			problems = append(problems, fmt.Sprintf("result %d names no criterion", k))
			continue
		}
		idx, err := strconv.ParseInt(string(item.Criterion), 10, 64)
		if err != nil {
			problems = append(problems, fmt.Sprintf("result %d: criterion %s is not an index", k, item.Criterion))
			continue
		}
		if idx < 0 || idx >= int64(n) {
			problems = append(problems, fmt.Sprintf("result %d: criterion %d is not a criterion (0 to %d)", k, idx, n-1))
			continue
		}
		if item.Pass == nil {
			problems = append(problems, fmt.Sprintf("result %d: criterion %d has no boolean pass", k, idx))
			continue
		}
		seen[idx]++
		out[idx] = CriterionResult{Criterion: int(idx), Pass: *item.Pass}
		if item.Evidence != nil {
			out[idx].Evidence = *item.Evidence
		}
	}
	for i, c := range seen {
		switch {
		case c == 0:
			problems = append(problems, fmt.Sprintf("criterion %d has no result", i))
		case c > 1:
			problems = append(problems, fmt.Sprintf("criterion %d has %d results", i, c))
		}
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return out, nil
}

// ParsePairwiseReply reads a pairwise judge's reply: {"winner": "A" | "B" |
// "tie", "evidence": "..."}; the winner is A, B or tie.
func ParsePairwiseReply(reply string) (winner, evidence string, err error) {
	var r struct {
		Winner   *string `json:"winner"`
		Evidence string  `json:"evidence"`
	}
	if err := decodeReply(reply, &r); err != nil {
		return "", "", err
	}
	if r.Winner == nil {
		return "", "", errors.New(`the reply has no "winner"`)
	}
	switch w := strings.TrimSpace(*r.Winner); {
	case strings.EqualFold(w, "A"):
		return PositionA, r.Evidence, nil
	case strings.EqualFold(w, "B"):
		return PositionB, r.Evidence, nil
	case strings.EqualFold(w, "tie"):
		return "tie", r.Evidence, nil
	default:
		return "", "", fmt.Errorf("winner %q is not A, B or tie", w)
	}
}

// decodeReply decodes the JSON object of a reply: the reply itself, or the
// text between its first '{' and its last '}'.
func decodeReply(reply string, v any) error {
	s := strings.TrimSpace(reply)
	if !strings.HasPrefix(s, "{") {
		i, j := strings.IndexByte(s, '{'), strings.LastIndexByte(s, '}')
		if i < 0 || j < i {
			return fmt.Errorf("the reply holds no JSON object: %q", clip(reply, 200))
		}
		s = s[i : j+1]
	} else if j := strings.LastIndexByte(s, '}'); j >= 0 {
		s = s[:j+1]
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return fmt.Errorf("the reply is not the JSON asked for: %v", err)
	}
	return nil
}

func clip(s string, n int) string {
	c, cut := capText(s, n)
	if cut {
		return c + "..."
	}
	return c
}

// PairwiseOutcome is the candidate's outcome when the judge named winner
// (A, B or tie) and the candidate was shown at candidatePos.
func PairwiseOutcome(winner, candidatePos string) string {
	switch winner {
	case candidatePos:
		return PairwiseWin
	case OtherPosition(candidatePos):
		return PairwiseLoss
	default:
		return PairwiseTie
	}
}

// CombinePairwise makes the result of one pair from its judgements: asA and
// asB are the candidate's outcomes when shown as A and as B ("" when not
// judged in that order), first the position of the first order, and swap
// whether both orders were judged.
//
// Without swap the outcome is the one judgement's. With swap, Orders are
// [as A, as B]; the outcome is theirs when they agree, and TIE (a non-win)
// when they disagree: a position-biased judge earns the candidate no win
// and no loss. An invalid judgement (unreadable reply) in either order
// makes the outcome INVALID, which the efficacy rule counts as a non-win.
func CombinePairwise(caseID string, trial int, pair Pair, first, asA, asB string, swap bool, errs []string) PairwiseResult {
	r := PairwiseResult{Case: caseID, Trial: trial, Candidate: pair.Candidate, Baseline: pair.Baseline, First: first}
	if len(errs) > 0 {
		r.Error = strings.Join(errs, "; ")
	}
	if !swap {
		r.Outcome = asA
		if first == PositionB {
			r.Outcome = asB
		}
		return r
	}
	r.Orders = []string{asA, asB}
	switch {
	case asA == PairwiseInvalid || asB == PairwiseInvalid:
		r.Outcome = PairwiseInvalid
	case asA == asB:
		r.Outcome = asA
	default:
		r.Outcome = PairwiseTie
	}
	return r
}

// ApplyRubric adds a rubric judgement to a cell's deterministic result.
//
// A valid judgement adds one check of kind "judge" per criterion, so
// reports list them; the cell passes only when it passed deterministically
// and every criterion passes: a judge never passes a failed cell. Score
// stays the deterministic checks' fraction; the criteria's is j.Score.
//
// An invalid judgement (a missing, duplicate, extra or malformed result,
// or an unreadable reply) makes the cell invalid, like an infrastructure
// error: it counts in invalidRun, leaves taskSuccess and the other quality
// metrics, and makes the verdict INCOMPLETE. It never passes.
func ApplyRubric(r CellResult, pc PlanCase, j CellJudgement) CellResult {
	if r.Judge != nil { // judged before: back to the deterministic grade
		checks := []CheckResult{}
		for _, ch := range r.Checks {
			if ch.Kind != CheckJudge {
				checks = append(checks, ch)
			}
		}
		r.Checks, r.Status, r.Passed = checks, r.Judge.Status, r.Judge.DeterministicPassed
		if r.Status != StatusInvalid {
			r.Error = ""
		}
	}
	j.Status, j.DeterministicPassed = r.Status, r.Passed
	if !j.Valid {
		j.Criteria, j.Score = nil, 0
		r.Status, r.Passed = StatusInvalid, false
		r.Error = "judge: " + j.Reason
		r.Judge = &j
		return r
	}
	passed := 0
	all := true
	for i, text := range pc.Rubric {
		var c CriterionResult
		if i < len(j.Criteria) {
			c = j.Criteria[i]
		}
		ch := CheckResult{Name: fmt.Sprintf("rubric %d: %s", i, text), Kind: CheckJudge, Passed: c.Pass, Detail: c.Evidence}
		if c.Pass {
			passed++
		} else {
			all = false
		}
		r.Checks = append(r.Checks, ch)
	}
	if len(pc.Rubric) > 0 {
		j.Score = float64(passed) / float64(len(pc.Rubric))
	}
	r.Passed = r.Passed && all
	r.Judge = &j
	return r
}

// MarkJudgingIncomplete makes a verdict INCOMPLETE when judgements the plan
// asks for are missing (a judge call failed or the run was interrupted).
func MarkJudgingIncomplete(v *Verdict, notJudged int, what string) {
	if notJudged == 0 {
		return
	}
	v.Reasons = append(v.Reasons, fmt.Sprintf("INCOMPLETE %d %s not judged", notJudged, what))
	v.Verdict = VerdictIncomplete
	v.ExitCode = ExitCode(VerdictIncomplete)
}
