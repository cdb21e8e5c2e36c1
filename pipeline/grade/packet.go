package grade

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"

	"github.com/opencontainers/go-digest"
)

// This file builds the judge's blinded packets and renders its prompts. It
// is pure: no model, no network; it reads only a cell's World (the fixture
// and the stored changed files). What a packet holds and what it hides is
// the package comment's "Blinding".

// packetCaps are a judge's #PacketCaps in bytes. A packet notes where it cut.
type packetCaps struct {
	file, files, diff, answer, detail int
}

// PacketCaps reads the plan's judge's packet caps.
func PacketCaps(p *plan.Plan) (file, files, diff, answer, detail int, err error) {
	c, err := capsOf(p)
	return c.file, c.files, c.diff, c.answer, c.detail, err
}

func capsOf(p *plan.Plan) (packetCaps, error) {
	if p.Judge == nil {
		return packetCaps{}, fmt.Errorf("read packet caps: the plan has no judge")
	}
	var c packetCaps
	for _, f := range []struct {
		name string
		size string
		to   *int
	}{
		{"fileBytes", p.Judge.Packet.FileBytes, &c.file}, {"filesBytes", p.Judge.Packet.FilesBytes, &c.files},
		{"diffBytes", p.Judge.Packet.DiffBytes, &c.diff}, {"answerBytes", p.Judge.Packet.AnswerBytes, &c.answer},
		{"detailBytes", p.Judge.Packet.DetailBytes, &c.detail},
	} {
		n, err := suite.ParseBytes(f.size)
		if err != nil {
			return packetCaps{}, fmt.Errorf("read judge.packet.%s: %w", f.name, err)
		}
		*f.to = int(n)
	}
	return c, nil
}

// Candidate positions in a pairwise packet.
const (
	PositionA = "A"
	PositionB = "B"
)

// PacketTask is the task as every arm was given it.
type PacketTask struct {
	Prompt string       `json:"prompt"`
	Seed   []suite.Turn `json:"seed,omitempty"`
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
	// Truncated says Diff is cut at the judge's packet.diffBytes.
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
	Cell   plan.Cell
	Answer string
	World  World
	// Checks are the cell's deterministic checks (judge checks are left out).
	Checks []CheckResult
}

// CandidateID is the opaque ID of a cell's attempt in a rubric packet: a
// short digest of its grade key, which names no arm, skill or cell.
func CandidateID(c plan.Cell) string {
	return "cand-" + digest.FromString(string(c.Grade)).Encoded()[:12]
}

// PairwiseOrder is the candidate's position, A or B, in the first order a
// pair is shown in: random, but fixed by the suite's seed, the case, the
// trial and the pair.
func PairwiseOrder(seed int64, caseID string, trial int, pair suite.Pair) string {
	d := plan.DigestJSON(struct {
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
	return plan.DigestJSON(struct {
		Format    int           `json:"format"`
		Candidate digest.Digest `json:"candidate"`
		Baseline  digest.Digest `json:"baseline"`
		Judge     digest.Digest `json:"judge"`
		Position  string        `json:"position"`
	}{plan.PacketFormat, candidate, baseline, judge, candidatePos})
}

// RubricJudged reports whether the plan's judge grades the case's rubric.
func RubricJudged(p *plan.Plan, pc plan.PlanCase) bool {
	return p.Judge != nil && p.Judge.Mode != "pairwise" && len(pc.Rubric) > 0
}

// BuildRubricPacket builds the blinded packet of one cell.
func BuildRubricPacket(p *plan.Plan, pc plan.PlanCase, a JudgeAttempt) (*RubricPacket, error) {
	caps, err := capsOf(p)
	if err != nil {
		return nil, err
	}
	b := newBlinder(p)
	files, err := initialFiles(p, pc, a.World, b, caps)
	if err != nil {
		return nil, err
	}
	if err := b.quoteSkills(a.World); err != nil {
		return nil, err
	}
	att, err := attempt(a, b, caps)
	if err != nil {
		return nil, err
	}
	pk := &RubricPacket{Candidate: CandidateID(a.Cell), Task: task(pc), Criteria: criteria(pc),
		InitialFiles: files, PacketAttempt: att, Evidence: []PacketEvidence{}}
	for _, ch := range a.Checks {
		if ch.Kind == CheckJudge {
			continue
		}
		// The check's name is the suite's own text; its detail is output the
		// agent's work produced.
		d, _ := capText(ch.Detail, caps.detail)
		pk.Evidence = append(pk.Evidence, PacketEvidence{Check: ch.Name, Detail: b.text(d)})
	}
	return pk, nil
}

// BuildPairwisePacket builds the blinded packet of two attempts at one
// case, already in presentation order: first is shown as A.
func BuildPairwisePacket(p *plan.Plan, pc plan.PlanCase, first, second JudgeAttempt) (*PairwisePacket, error) {
	caps, err := capsOf(p)
	if err != nil {
		return nil, err
	}
	b := newBlinder(p)
	files, err := initialFiles(p, pc, first.World, b, caps)
	if err != nil {
		return nil, err
	}
	if err := b.quoteSkills(first.World, second.World); err != nil {
		return nil, err
	}
	pa, err := attempt(first, b, caps)
	if err != nil {
		return nil, err
	}
	pb, err := attempt(second, b, caps)
	if err != nil {
		return nil, err
	}
	return &PairwisePacket{Task: task(pc), Criteria: criteria(pc), InitialFiles: files, A: pa, B: pb}, nil
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

// task is the case's prompt and seed, as every arm was given them: never
// blinded.
func task(pc plan.PlanCase) PacketTask {
	return PacketTask{Prompt: pc.Prompt, Seed: pc.Seed}
}

func criteria(pc plan.PlanCase) []PacketCriterion {
	out := []PacketCriterion{}
	for i, c := range pc.Rubric {
		out = append(out, PacketCriterion{Index: i, Text: c})
	}
	return out
}

// initialFiles reads the fixture's text files in path order, each capped at
// caps.file and all at caps.files. They are the same for every
// arm, so they are never blinded; b learns what they hold (every file
// whole, those past the caps too), with the case's own text, so that the
// task's words are not taken for signs of an arm.
func initialFiles(p *plan.Plan, pc plan.PlanCase, w World, b *blinder, caps packetCaps) (PacketFiles, error) {
	out := PacketFiles{
		Note: fmt.Sprintf("The workspace before the attempt. Each file's content is cut at %d bytes (truncated: true); after %d bytes of content in all, files are listed in omitted. Binary files and symlinks are omitted.",
			caps.file, caps.files),
		Files: []PacketFile{},
	}
	b.shareCase(pc)
	if pc.Fixture == "" {
		return out, nil
	}
	tree, err := p.CaseTree(pc) // the fixture with the overlay copied over it
	if err != nil {
		return out, fmt.Errorf("read initial files: %w", err)
	}
	paths := make([]string, 0, len(tree.Files))
	for f := range tree.Files {
		paths = append(paths, f)
	}
	sort.Strings(paths)
	total := 0
	for _, f := range paths {
		b.share(f)
		e := tree.Files[f]
		if e.Mode == "symlink" {
			out.Omitted = append(out.Omitted, f+" (symlink)")
			continue
		}
		data, ok, err := w.Initial(f)
		if err != nil {
			return out, fmt.Errorf("read initial file %s: %w", f, err)
		}
		if !ok {
			out.Omitted = append(out.Omitted, f+" (missing)")
			continue
		}
		if !isText(data) {
			out.Omitted = append(out.Omitted, f+" (binary)")
			continue
		}
		b.share(string(data))
		if total >= caps.files {
			out.Omitted = append(out.Omitted, f+" (over the packet's cap)")
			continue
		}
		content, cut := capText(string(data), min(caps.file, caps.files-total))
		total += len(content)
		out.Files = append(out.Files, PacketFile{Path: f, Bytes: int64(len(data)), Truncated: cut, Content: content})
	}
	return out, nil
}

// attempt is one attempt's answer and final diff, changed files in path order.
func attempt(a JudgeAttempt, b *blinder, caps packetCaps) (PacketAttempt, error) {
	ans, cut := capText(a.Answer, caps.answer)
	out := PacketAttempt{Answer: b.text(ans), AnswerTruncated: cut, Diff: []PacketChange{}}
	diffs, err := ChangeDiffs(a.World, false, 0)
	if err != nil {
		return out, err
	}
	for _, d := range diffs {
		pc := PacketChange{Path: d.Path, Change: d.Kind, Diff: d.Note}
		if d.Note == "" {
			var diff string
			diff, pc.Truncated = capText(d.Diff, caps.diff)
			pc.Diff = b.diff(diff)
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
