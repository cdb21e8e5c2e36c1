package checks

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/verdict"

	"github.com/opencontainers/go-digest"
)

// CalibrationVersion names the calibration prompts and checks; it enters
// every calibration key, so changing them reruns calibration.
const CalibrationVersion = "calibrate-v1"

// CalCell is one calibration cell: a synthetic case with an empty
// workspace, run in one arm, and how its answer is checked.
type CalCell struct {
	Check string
	Arm   plan.PlanArm
	Case  plan.PlanCase
	Cell  plan.Cell
	// asked describes the question, for the check's detail.
	Asked string
	Grade func(answer string) (passed bool, why string)
}

// Markers the none check asks the agent to answer with.
const (
	calibrationYes = suite.CalibrationYes
	calibrationNo  = suite.CalibrationNo
)

// CalibrationCells are the calibration cells of p's arms (only those
// named, when any are), in authored order: skill or none, then shell
// where it runs.
func CalibrationCells(p *plan.Plan, suiteDir string, only []string) ([]CalCell, error) {
	var arms []plan.PlanArm
	for _, a := range p.Arms {
		if len(only) == 0 || slices.Contains(only, a.Name) {
			arms = append(arms, plan.UnionArm(p, a))
		}
	}
	for _, name := range only {
		if !slices.ContainsFunc(p.Arms, func(a plan.PlanArm) bool { return a.Name == name }) {
			return nil, fmt.Errorf("calibrate: the plan has no arm %q", name)
		}
	}
	if len(arms) == 0 {
		return nil, fmt.Errorf("calibrate: the plan has no arms")
	}
	shellArm := arms[0].Name
	for _, a := range arms {
		if len(a.Skills) == 0 {
			shellArm = a.Name
			break
		}
	}
	var names []string
	for _, sk := range p.Skills {
		if !slices.Contains(names, sk.Name) {
			names = append(names, sk.Name)
		}
	}
	slices.Sort(names)
	var out []CalCell
	for _, arm := range arms {
		switch {
		case len(arm.Skills) > 0:
			c, err := skillCheck(p, suiteDir, arm)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		case len(names) > 0:
			out = append(out, noneCheck(p, arm, names))
		}
		if arm.Name == shellArm {
			out = append(out, shellCheck(p, arm))
		}
	}
	return out, nil
}

// newCalCell makes the calibration cell asking prompt in arm; its key
// digests everything that decides what the agent does, like a plan cell's.
func newCalCell(p *plan.Plan, check string, arm plan.PlanArm, prompt string) CalCell {
	id := "calibrate:" + check
	kb, _ := json.Marshal(struct {
		Calibration string        `json:"calibration"`
		Agent       digest.Digest `json:"agent"`
		Limits      digest.Digest `json:"limits"`
		Arm         digest.Digest `json:"arm"`
		Check       string        `json:"check"`
		Prompt      string        `json:"prompt"`
	}{CalibrationVersion, p.Agent.Digest, p.Limits.Digest, arm.Digest, check, prompt})
	return CalCell{
		Check: check, Arm: arm,
		Case: plan.PlanCase{Case: suite.Case{ID: id, Prompt: prompt, Kind: "calibration", Tags: []string{}, Assert: []suite.Assertion{}, Rubric: []string{}}},
		Cell: plan.Cell{ID: plan.CellID(id, arm.Name, 1), Case: id, Arm: arm.Name, Trial: 1, Rollout: digest.FromBytes(kb)},
	}
}

func shellCheck(p *plan.Plan, arm plan.PlanArm) CalCell {
	nonce := digest.FromString(CalibrationVersion + " " + p.Agent.Digest.String() + " " + arm.Digest.String()).Encoded()[:12]
	want := "skillgate-calibration-" + nonce
	cmd := "echo " + want
	c := newCalCell(p, verdict.CalibrationShell, arm, suite.CalibrationShellPrompt(cmd))
	c.Asked = fmt.Sprintf("asked to run %q", cmd)
	c.Grade = func(answer string) (bool, string) {
		if strings.Contains(answer, want) {
			return true, "the answer holds its output"
		}
		return false, fmt.Sprintf("the answer lacks its output %q: the agent cannot run shell commands, or did not", want)
	}
	return c
}

func noneCheck(p *plan.Plan, arm plan.PlanArm, names []string) CalCell {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	list := strings.Join(quoted, " or ")
	c := newCalCell(p, verdict.CalibrationNone, arm, suite.CalibrationNonePrompt(names))
	c.Asked = "asked whether a skill named " + list + " is available"
	c.Grade = func(answer string) (bool, string) {
		yes, no := strings.Contains(answer, calibrationYes), strings.Contains(answer, calibrationNo)
		switch {
		case no && !yes:
			return true, "the agent answered " + calibrationNo
		case yes && !no:
			return false, "the agent answered " + calibrationYes + ": a skill reaches the no-skill arm (the agent's own configuration or image?)"
		case yes && no:
			return false, "the answer holds both " + calibrationYes + " and " + calibrationNo
		default:
			return false, "the answer holds neither " + calibrationYes + " nor " + calibrationNo
		}
	}
	return c
}

// skillCopy is one arm's installed copy of a skill: its SKILL.md's lines.
type skillCopy struct {
	arm, key, name string
	digest         digest.Digest
	lines          []string
}

func readSkillCopy(p *plan.Plan, suiteDir, arm, key string) (skillCopy, error) {
	sk, ok := p.Skills[key]
	if !ok {
		return skillCopy{}, fmt.Errorf("calibrate: arm %s installs unknown skill %s", arm, key)
	}
	b, err := os.ReadFile(filepath.Join(suiteDir, filepath.FromSlash(sk.Path), "SKILL.md"))
	if err != nil {
		return skillCopy{}, fmt.Errorf("calibrate: skill %s: %w", key, err)
	}
	return skillCopy{arm: arm, key: key, name: sk.Name, digest: sk.Digest, lines: strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n")}, nil
}

// skillCheck asks the arm's agent to quote a line of one of its skills'
// SKILL.md: the first skill whose copy holds a line no differing copy of
// the same name (in any arm) holds, else the arm's first skill.
func skillCheck(p *plan.Plan, suiteDir string, arm plan.PlanArm) (CalCell, error) {
	var others []skillCopy
	for _, a := range p.Arms {
		for _, k := range plan.ArmSkills(p, a) {
			c, err := readSkillCopy(p, suiteDir, a.Name, k)
			if err != nil {
				return CalCell{}, err
			}
			others = append(others, c)
		}
	}
	type pick struct {
		copy         skillCopy
		line, prefix string
		// unique: no differing copy holds the line; differs: there are
		// differing copies of the skill.
		unique, differs bool
	}
	var chosen *pick
	for _, k := range arm.Skills {
		own, err := readSkillCopy(p, suiteDir, arm.Name, k)
		if err != nil {
			return CalCell{}, err
		}
		var differing []skillCopy
		for _, o := range others {
			if o.name == own.name && o.digest != own.digest {
				differing = append(differing, o)
			}
		}
		line, prefix, unique := quotableLine(own.lines, differing)
		if line == "" {
			continue
		}
		if unique {
			chosen = &pick{own, line, prefix, true, true}
			break
		}
		if chosen == nil {
			chosen = &pick{own, line, prefix, false, len(differing) > 0}
		}
	}
	if chosen == nil {
		return CalCell{}, fmt.Errorf("calibrate: arm %s: no SKILL.md of its skills holds a line to quote", arm.Name)
	}
	name, line, prefix := chosen.copy.name, chosen.line, chosen.prefix
	c := newCalCell(p, verdict.CalibrationSkill, arm, suite.CalibrationSkillPrompt(name, prefix))
	c.Asked = fmt.Sprintf("asked to quote the line of skill %s's SKILL.md starting with %q", name, prefix)
	// The lines other copies hold under the same prefix: quoting one of
	// them shows which copy the agent read.
	type wrong struct{ arm, key, line string }
	var wrongs []wrong
	for _, o := range others {
		if o.name != name || o.digest == chosen.copy.digest {
			continue
		}
		for _, l := range o.lines {
			if t := strings.TrimSpace(l); strings.HasPrefix(t, prefix) && t != line {
				wrongs = append(wrongs, wrong{o.arm, o.key, t})
			}
		}
	}
	c.Grade = func(answer string) (bool, string) {
		if containsLine(answer, line) {
			if len(wrongs) == 0 && !chosen.unique && !chosen.differs {
				return true, "the answer holds the line"
			}
			if !chosen.unique {
				return true, fmt.Sprintf("the answer holds the line (%q; no line tells this arm's copy from the others)", line)
			}
			return true, fmt.Sprintf("the answer holds the line only this arm's copy (skill %s) holds", chosen.copy.key)
		}
		for _, w := range wrongs {
			if containsLine(answer, w.line) {
				return false, fmt.Sprintf("the answer quotes %q from skill %s (arm %s's copy), not %q from this arm's copy (skill %s): the agent read another copy of %s",
					w.line, w.key, w.arm, line, chosen.copy.key, name)
			}
		}
		return false, fmt.Sprintf("the answer lacks the line %q of this arm's copy (skill %s): the agent did not read its skill", line, chosen.copy.key)
	}
	return c, nil
}

// quotableLine picks the line of a SKILL.md the skill check asks for and
// the words it starts with (unique among the file's lines). It prefers,
// in order: a body line of four or more words that no differing copy
// holds; any such line; then the same ignoring the other copies; then
// front-matter lines. unique says the line is held by no differing copy.
func quotableLine(lines []string, differing []skillCopy) (line, prefix string, unique bool) {
	held := map[string]bool{}
	for _, o := range differing {
		for _, l := range o.lines {
			held[normalizeLine(l)] = true
		}
	}
	count := map[string]int{}
	for _, l := range lines {
		count[normalizeLine(l)]++
	}
	// Front matter: a leading block between "---" lines.
	bodyFrom := 0
	if len(lines) > 0 && strings.TrimSpace(lines[0]) == "---" {
		for i := 1; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) == "---" {
				bodyFrom = i + 1
				break
			}
		}
	}
	inFence := make([]bool, len(lines))
	fence := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fence = !fence
			inFence[i] = true
			continue
		}
		inFence[i] = fence
	}
	type tier struct {
		body, needUnique bool
		minWords         int
	}
	tiers := []tier{{true, true, 4}, {true, true, 1}, {true, false, 4}, {true, false, 1}, {false, false, 1}}
	if len(differing) == 0 {
		tiers = tiers[2:]
	}
	for _, t := range tiers {
		for i, l := range lines {
			n := normalizeLine(l)
			words := strings.Fields(n)
			if (i >= bodyFrom) != t.body || inFence[i] || n == "" || n == "---" || len(words) < t.minWords || count[n] > 1 || !hasLetter(n) {
				continue
			}
			if t.needUnique && held[n] {
				continue
			}
			if pre := linePrefix(strings.TrimSpace(l), lines); pre != "" {
				return strings.TrimSpace(l), pre, !held[n] && len(differing) > 0
			}
		}
	}
	return "", "", false
}

// linePrefix is the line's list or heading marker and the shortest run of
// its first few words (at least half of them, up to four, never all of
// them when it has more than one, never ending inside a code span) that
// starts no other line of the file;
// "" if there is none.
func linePrefix(line string, lines []string) string {
	marker := lineMarker.FindString(line)
	words := strings.Fields(line[len(marker):])
	whole := strings.Join(strings.Fields(line), " ")
	for k := min(max(len(words)/2, 1), 4); k <= len(words); k++ {
		if k == len(words) && len(words) > 1 {
			return ""
		}
		pre := strings.Join(strings.Fields(marker+strings.Join(words[:k], " ")), " ")
		if strings.Count(pre, "`")%2 == 1 {
			continue // never end inside a code span
		}
		clash := false
		for _, o := range lines {
			if o = strings.Join(strings.Fields(o), " "); o != whole && strings.HasPrefix(o, pre) {
				clash = true
				break
			}
		}
		if !clash {
			return pre
		}
	}
	return ""
}

var (
	lineMarker = regexp.MustCompile(`^(#+|[-*+>]|\d+[.)])\s+`)
	emphasis   = strings.NewReplacer("`", "", "*", "")
)

// normalizeLine is a line as compared: no list or heading marker, no
// emphasis or code marks, single spaces.
func normalizeLine(l string) string {
	l = strings.TrimSpace(l)
	l = lineMarker.ReplaceAllString(l, "")
	return strings.Join(strings.Fields(emphasis.Replace(l)), " ")
}

// containsLine reports whether the answer holds the line, however the
// agent spaced it or marked it up.
func containsLine(answer, line string) bool {
	want := normalizeLine(line)
	return want != "" && strings.Contains(strings.Join(strings.Fields(emphasis.Replace(answer)), " "), want)
}

func hasLetter(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 127 }) >= 0
}
