package grade

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/suite/suitetest"
)

// judgeSuite has names that cannot occur by accident: a leak of an arm,
// a skill key, a skill name or a skill's contents into a packet is found by
// searching for them.
var judgeSuite = map[string]string{
	"skills/omega/SKILL.md":             "---\nname: skillomega\ndescription: Omega procedure zq7 for greetings.\n---\n# Omega handbook\nAlways write ZQ7-OMEGA-MARKER first.\n",
	"skills/omega/references/deep.md":   "# Omega deep reference qv9\n",
	"skills/delta/SKILL.md":             "---\nname: skilldelta\ndescription: Delta routine kx4 for files.\n---\n# Delta handbook kx4\n",
	"suite/fixtures/repo/hello.txt":     "hello wrld\nline two\nline three\nline four\nline five\nline six\nline seven\nline eight\n",
	"suite/fixtures/repo/notes/todo.md": "# TODO\n- fix greeting\n",
	"suite/fixtures/repo/logo.bin":      "PNG\x00\x01\x02",
	"suite/suite.cue": `package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/policies"
)

schema.#Suite & {
	name: "judgepk"
	skills: {
		skillomega: path: "../skills/omega"
		keysigma: {path: "../skills/delta", name: "skilldelta"}
	}
	agent: agents.command & {command: ["sh", "-c", "echo hi"]}
	judge: {provider: "command", command: ["true"], pairs: [{candidate: "armzeta", baseline: "armeta"}]}
	seed: 7
	trials: 2
	arms: {
		armeta: {}
		armzeta: {skills: ["skillomega", "keysigma"], activation: "forced"}
	}
	cases: fixit: {
		prompt:  "Fix the greeting in hello.txt."
		seed: [{role: "user", content: "The greeting has a typo."}, {role: "assistant", content: "Which file?"}]
		fixture: "fixtures/repo"
		assert: [
			{file: "hello.txt", contains: "hello world"},
			{run: "test -f \"$WORLD/hello.txt\""},
		]
		rubric: ["The greeting is spelled correctly.", "Nothing else changes."]
	}
	policy: policies.efficacy
}
`,
}

// judgePlan compiles judgeSuite.
func judgePlan(t *testing.T) (*plan.Plan, string) {
	t.Helper()
	root := suitetest.WriteSuite(t, judgeSuite)
	p, err := plan.CompileDir(filepath.Join(root, "suite"))
	if err != nil {
		t.Fatal(suite.PrintError(err, root))
	}
	return p, root
}

// judgeAttemptIn lays out a cell's final workspace over the suite's
// fixture folder fx, with its deterministic checks, as the runner would
// from a stored rollout.
func judgeAttemptIn(t *testing.T, p *plan.Plan, root, fx string, c plan.Cell, answer string, files map[string]string, changes []FileChange) JudgeAttempt {
	t.Helper()
	changed := t.TempDir()
	for rel, body := range files {
		full := filepath.Join(changed, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w := World{Fixture: filepath.Join(root, "suite", fx), Changed: changed, Changes: changes}
	r, err := GradeCell(p, p.Cases[0], c, GradeInput{Status: StatusCompleted, Answer: answer, World: w})
	if err != nil {
		t.Fatal(err)
	}
	return JudgeAttempt{Cell: c, Answer: answer, World: w, Checks: r.Checks}
}

// judgeAttempt lays out a cell's final workspace and grades it, as the
// runner would from a stored rollout.
func judgeAttempt(t *testing.T, p *plan.Plan, root string, c plan.Cell, answer string, files map[string]string, changes []FileChange, runPassed bool) JudgeAttempt {
	t.Helper()
	changed := t.TempDir()
	for rel, body := range files {
		full := filepath.Join(changed, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w := World{Fixture: filepath.Join(root, "suite", "fixtures", "repo"), Changed: changed, Changes: changes}
	run := CheckResult{Name: "run: test -f \"$WORLD/hello.txt\"", Kind: CheckRun, Passed: runPassed}
	if !runPassed {
		run.Detail = "exit 1: no hello.txt in skillomega's view" // check output the agent could influence
	}
	r, err := GradeCell(p, p.Cases[0], c, GradeInput{Status: StatusCompleted, Answer: answer, World: w, RunChecks: []CheckResult{run}})
	if err != nil {
		t.Fatal(err)
	}
	return JudgeAttempt{Cell: c, Answer: answer, World: w, Checks: r.Checks}
}

func cellOf(t *testing.T, p *plan.Plan, id string) plan.Cell {
	t.Helper()
	for _, c := range p.Cells {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no cell %s", id)
	return plan.Cell{}
}

// judgeAttempts are a skill arm's and a no-skill arm's attempts at fixit.
func judgeAttempts(t *testing.T, p *plan.Plan, root string) (skill, none JudgeAttempt) {
	skill = judgeAttempt(t, p, root, cellOf(t, p, "fixit/armzeta/1"),
		"Fixed the typo in hello.txt, as skillomega and skilldelta say.\n",
		map[string]string{"hello.txt": "hello world\nline two\nline three\nline four\nline five\nline six\nline seven\nline eight\n", "CHANGES.md": "- greeting fixed\n"},
		[]FileChange{{Path: "hello.txt", Kind: "modified"}, {Path: "notes/todo.md", Kind: "deleted"}, {Path: "CHANGES.md", Kind: "added"}}, true)
	none = judgeAttempt(t, p, root, cellOf(t, p, "fixit/armeta/1"),
		"I could not find the typo.",
		map[string]string{"hello.txt": "hello wrld\nline two\nline three\nline four\nline five\nline six\nline seven\nline eight"},
		[]FileChange{{Path: "hello.txt", Kind: "modified"}}, false)
	return skill, none
}

// goldenPacket compares a packet with testdata/judge/NAME, or rewrites it
// when UPDATE_GOLDEN is set. The candidate ID (a digest of the grade key,
// which moves with every plan input) is normalized.
func goldenPacket(t *testing.T, name string, got []byte) {
	t.Helper()
	var probe struct {
		Candidate string `json:"candidate"`
	}
	if json.Unmarshal(got, &probe) == nil && probe.Candidate != "" {
		got = bytes.ReplaceAll(got, []byte(probe.Candidate), []byte("CANDIDATE"))
	}
	got = append(append([]byte{}, got...), '\n')
	file := filepath.Join("..", "..", "testdata", "judge", name)
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read golden file (UPDATE_GOLDEN=1 writes it): %v", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from its golden file %s (UPDATE_GOLDEN=1 rewrites it)\ngot:\n%s", name, file, got)
	}
}

func TestJudgePacketsGolden(t *testing.T) {
	p, root := judgePlan(t)
	skill, none := judgeAttempts(t, p, root)
	rp, err := BuildRubricPacket(p, p.Cases[0], skill)
	if err != nil {
		t.Fatal(err)
	}
	if rp.Candidate != CandidateID(skill.Cell) || !strings.HasPrefix(rp.Candidate, "cand-") {
		t.Errorf("candidate %q", rp.Candidate)
	}
	goldenPacket(t, "rubric_packet.json", EncodePacket(rp))
	pp, err := BuildPairwisePacket(p, p.Cases[0], none, skill)
	if err != nil {
		t.Fatal(err)
	}
	goldenPacket(t, "pairwise_packet.json", EncodePacket(pp))
	goldenPacket(t, "pairwise_prompt.txt", []byte(RenderJudgePrompt(p.Judge.Templates.Pairwise, EncodePacket(pp))))
}

// TestJudgePacketLeak scans every packet and prompt of the suite, in both
// modes and both orders, for every arm name, skill key, skill name, skill
// file line, cell ID and key: none may appear.
func TestJudgePacketLeak(t *testing.T) {
	p, root := judgePlan(t)
	skill, none := judgeAttempts(t, p, root)
	var packets [][]byte
	for _, a := range []JudgeAttempt{skill, none} {
		rp, err := BuildRubricPacket(p, p.Cases[0], a)
		if err != nil {
			t.Fatal(err)
		}
		b := EncodePacket(rp)
		packets = append(packets, b, []byte(RenderJudgePrompt(p.Judge.Templates.Rubric, b)))
	}
	for _, order := range [][2]JudgeAttempt{{skill, none}, {none, skill}} {
		pp, err := BuildPairwisePacket(p, p.Cases[0], order[0], order[1])
		if err != nil {
			t.Fatal(err)
		}
		b := EncodePacket(pp)
		packets = append(packets, b, []byte(RenderJudgePrompt(p.Judge.Templates.Pairwise, b)))
	}
	var secrets []string
	for _, a := range p.Arms {
		secrets = append(secrets, a.Name)
	}
	for key, s := range p.Skills {
		secrets = append(secrets, key, s.Name)
		for rel := range s.Files {
			data, err := os.ReadFile(filepath.Join(root, "skills", filepath.Base(s.Path), filepath.FromSlash(rel)))
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(string(data), "\n") {
				if line = strings.TrimSpace(line); len(line) >= 6 && strings.ContainsAny(line, "abcdefghijklmnopqrstuvwxyz") {
					secrets = append(secrets, line)
				}
			}
		}
	}
	for _, c := range []plan.Cell{skill.Cell, none.Cell} {
		secrets = append(secrets, c.ID, c.Grade.Encoded(), c.Rollout.Encoded())
	}
	if len(secrets) < 12 {
		t.Fatalf("only %d secrets to look for: %q", len(secrets), secrets)
	}
	for i, b := range packets {
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("packet %d holds %q:\n%s", i, s, b)
			}
		}
		// Nor the deterministic verdict: no check says whether it passed
		// (packets are even; odd ones are prompts, whose template asks for
		// "pass").
		if i%2 == 0 && bytes.Contains(b, []byte(`"pass`)) {
			t.Errorf("packet %d holds a pass/fail field:\n%s", i, b)
		}
	}
	// The agent named the skills in its answer: the sentence is dropped,
	// leaving no marker.
	rp, _ := BuildRubricPacket(p, p.Cases[0], skill)
	if strings.Contains(rp.Answer, "redacted") || !strings.HasPrefix(rp.Answer, "Fixed the typo in hello.txt.") {
		t.Errorf("answer not blinded silently: %q", rp.Answer)
	}
}

// TestJudgeBlinderText: what the agent wrote loses the installed names,
// the skill paths and the forced prompt's words; a suite key the agent
// never saw stays; a name the task also uses is hidden only as a skill's.
func TestJudgeBlinderText(t *testing.T) {
	p := &plan.Plan{
		Agent: plan.PlanAgent{Agent: suite.Agent{SkillsDir: ".claude/skills", ForcedPrompt: "Use the {{skills}} skill (through the Skill tool) for this task.\n\n{{prompt}}"}},
		Skills: map[string]plan.PlanSkill{
			"keyomega": {Skill: suite.Skill{Name: "skillomega"}, Tree: plan.Tree{Files: map[string]plan.TreeEntry{"SKILL.md": {}, "references/deep.md": {}}}},
			"cl":       {Skill: suite.Skill{Name: "cl"}, Tree: plan.Tree{Files: map[string]plan.TreeEntry{"SKILL.md": {}, "scripts/x.sh": {}}}},
			"unused":   {Skill: suite.Skill{Name: "unused"}},
		},
		Arms: []plan.PlanArm{{Name: "a", Arm: suite.Arm{Skills: []string{"keyomega", "cl"}, Activation: "forced"}}},
	}
	// Every sentence showing a skill goes whole, leaving no marker; the
	// others stay as they were.
	b := newBlinder(p)
	for in, want := range map[string]string{
		"use skillomega now":                                 "",
		"SkillOmega-v2, cl":                                  "",
		"clean cl_x xcl cl":                                  "",
		"skillomegas":                                        "skillomegas",
		"keyomega and unused are keys":                       "keyomega and unused are keys",
		"read /workspace/.claude/skills/cl/SKILL.md.":        "",
		"see `.agents/skills/skillomega/references/deep.md`": "",
		"cat skillomega/references/deep.md | wc":             "",
		"ls .claude/skills/ and $SKILLGATE_SKILLS_DIR":       "",
		"I read SKILL.md first.":                             "",
		"Done. The key is [REDACTED].":                       "Done.",
		"other/.claude/skillsx stays":                        "other/.claude/skillsx stays",
		"You said: Use the cl, skillomega skill (through the Skill tool) for this task.": "You said",
		"Done. I used skillomega! It helped? Yes.":                                       "Done. It helped? Yes.",
		"I used cl.  Then fixed it.\nAll good.\n":                                        "Then fixed it.\nAll good.\n",
		"Fixed it. As cl said.\n\nNext line.":                                            "Fixed it.\n\nNext line.",
		"cl.\nNext.":                                                                     "Next.",
	} {
		if got := b.text(in); got != want {
			t.Errorf("text(%q) = %q, want %q", in, got, want)
		}
	}
	// cl is a word of the task: only a skill's cl is hidden.
	b = newBlinder(p)
	b.share("Write a cl entry (cl means changelog).")
	for in, want := range map[string]string{
		"Added the cl entry.":                       "Added the cl entry.",
		"I used the cl skill for the cl entry.":     "",
		`Skill(cl) then {"skill": "cl"}`:            "",
		"a skill named cl; skills: cl":              "",
		"the `cl` Skill":                            "",
		"from .claude/skills/cl/scripts/x.sh":       "",
		"cl/SKILL.md":                               "",
		"skillomega wrote it":                       "",
		"The cl entry is in. The cl skill said so.": "The cl entry is in.",
	} {
		if got := b.text(in); got != want {
			t.Errorf("shared cl: text(%q) = %q, want %q", in, got, want)
		}
	}
	// Only a diff's added lines are the agent's; one showing a skill goes.
	d := "--- a/cl.md\n+++ b/cl.md\n@@ -1,2 +1,3 @@\n the skillomega note\n-old skillomega\n+new skillomega\n+kept. By skillomega.\n"
	if got, want := b.diff(d), "--- a/cl.md\n+++ b/cl.md\n@@ -1,2 +1,2 @@\n the skillomega note\n-old skillomega\n+kept.\n"; got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
}

// blindSuite's skill keys are common words, its installed name matches a
// fixture file, and its prompt and rubric use all three.
var blindSuite = map[string]string{
	"skills/v1/SKILL.md":           "---\nname: alpha\ndescription: Reads files before answering.\n---\n# Alpha v1\n",
	"skills/v2/SKILL.md":           "---\nname: alpha\ndescription: Reads files before answering.\n---\n# Alpha v2\n",
	"skills/v2/references/more.md": "# more\n",
	"suite/fx/alpha.txt":           "alpha beta\nbefore after\n",
	"suite/fx/notes/before.md":     "# Notes written before\nSee alpha.txt.\n",
	"suite/suite.cue": `package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
)

schema.#Suite & {
	name: "blindwords"
	skills: {
		before: {path: "../skills/v1", name: "alpha"}
		after: {path: "../skills/v2", name: "alpha"}
	}
	agent: agents.command & {command: ["true"], skillsDir: ".claude/skills"}
	judge: provider: "command"
	judge: command: ["true"]
	trials: 1
	arms: {
		none: {}
		before: {skills: ["before"], activation: "forced"}
		after: {skills: ["after"]}
	}
	cases: read: {
		prompt: "Do it before reading the file, after you answer: open alpha.txt before anything else."
		seed: [{role: "user", content: "Before that, what comes after alpha?"}]
		fixture: "fx"
		assert: [{answer: {contains: "beta"}}]
		rubric: ["The answer quotes alpha.txt before anything else.", "Nothing changes after the answer."]
	}
}
`,
}

// TestJudgeBlindKeepsTask: the packet's task, criteria, initial files and
// diff paths are byte for byte the suite's, whatever words its skill keys
// and names are, while the agent's mention of its skill is still hidden.
func TestJudgeBlindKeepsTask(t *testing.T) {
	root := suitetest.WriteSuite(t, blindSuite)
	p, err := plan.CompileDir(filepath.Join(root, "suite"))
	if err != nil {
		t.Fatal(suite.PrintError(err, root))
	}
	pc := p.Cases[0]
	answer := "I used the alpha skill from .claude/skills/alpha/SKILL.md before answering, as told: Use the alpha skill for this task.\nalpha.txt holds alpha beta, before after.\n"
	a := judgeAttemptIn(t, p, root, "fx", cellOf(t, p, "read/before/1"), answer,
		map[string]string{"alpha.txt": "alpha beta\nbefore after\nread by the alpha skill\n", "after.md": "alpha read after\n"},
		[]FileChange{{Path: "after.md", Kind: "added"}, {Path: "alpha.txt", Kind: "modified"}})
	rp, err := BuildRubricPacket(p, pc, a)
	if err != nil {
		t.Fatal(err)
	}
	if rp.Task.Prompt != pc.Prompt || len(rp.Task.Seed) != 1 || rp.Task.Seed[0] != pc.Seed[0] {
		t.Errorf("task %+v, want %q and %+v", rp.Task, pc.Prompt, pc.Seed)
	}
	for i, c := range rp.Criteria {
		if c.Text != pc.Rubric[i] {
			t.Errorf("criterion %d = %q, want %q", i, c.Text, pc.Rubric[i])
		}
	}
	if len(rp.Criteria) != 2 {
		t.Errorf("criteria %+v", rp.Criteria)
	}
	want := map[string]string{"alpha.txt": blindSuite["suite/fx/alpha.txt"], "notes/before.md": blindSuite["suite/fx/notes/before.md"]}
	if len(rp.InitialFiles.Files) != len(want) {
		t.Errorf("initial files %+v", rp.InitialFiles.Files)
	}
	for _, f := range rp.InitialFiles.Files {
		if want[f.Path] != f.Content {
			t.Errorf("initial file %s = %q, want %q", f.Path, f.Content, want[f.Path])
		}
	}
	if len(rp.Diff) != 2 || rp.Diff[0].Path != "after.md" || rp.Diff[1].Path != "alpha.txt" {
		t.Errorf("diff paths %+v", rp.Diff)
	}
	if got := rp.Diff[1].Diff; !strings.Contains(got, "--- a/alpha.txt\n+++ b/alpha.txt\n") || !strings.HasSuffix(got, " alpha beta\n before after\n") {
		t.Errorf("alpha.txt diff:\n%s", got)
	}
	if got := rp.Diff[0].Diff; !strings.Contains(got, "+alpha read after\n") {
		t.Errorf("after.md diff:\n%s", got)
	}
	wantAnswer := "as told\nalpha.txt holds alpha beta, before after.\n"
	if rp.Answer != wantAnswer {
		t.Errorf("answer:\n%q\nwant:\n%q", rp.Answer, wantAnswer)
	}
	b := EncodePacket(rp)
	for _, leak := range []string{"alpha skill", ".claude/skills", "SKILL.md", "Use the", "forced"} {
		if bytes.Contains(b, []byte(leak)) {
			t.Errorf("packet holds %q:\n%s", leak, b)
		}
	}
	// The task's words are everywhere they were.
	for _, word := range []string{"Do it before reading the file, after you answer", "Before that, what comes after alpha?", "Nothing changes after the answer."} {
		if !bytes.Contains(b, []byte(word)) {
			t.Errorf("packet lacks the task's %q:\n%s", word, b)
		}
	}
}

func TestJudgePacketCaps(t *testing.T) {
	p, root := judgePlan(t)
	c := cellOf(t, p, "fixit/armzeta/2")
	_, _, diffCap, answerCap, _, err := PacketCaps(p)
	if err != nil || answerCap != 32<<10 {
		t.Fatalf("packet caps: answer %d, %v; want the schema's 32k", answerCap, err)
	}
	big := strings.Repeat("é line of text\n", 4000) // 2-byte runes: cuts must not split one
	a := judgeAttempt(t, p, root, c, strings.Repeat("x", answerCap+10), map[string]string{"big.txt": big},
		[]FileChange{{Path: "big.txt", Kind: "added"}}, true)
	rp, err := BuildRubricPacket(p, p.Cases[0], a)
	if err != nil {
		t.Fatal(err)
	}
	if !rp.AnswerTruncated || len(rp.Answer) != answerCap {
		t.Errorf("answer %d bytes, truncated %v", len(rp.Answer), rp.AnswerTruncated)
	}
	if d := rp.Diff[0]; !d.Truncated || len(d.Diff) > diffCap || !strings.HasPrefix(d.Diff, "--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,4000 @@\n+é line") {
		t.Errorf("diff truncated %v, %d bytes, starts %q", d.Truncated, len(d.Diff), d.Diff[:80])
	}
	if !strings.Contains(rp.InitialFiles.Note, "16384 bytes") || len(rp.InitialFiles.Omitted) != 1 || rp.InitialFiles.Omitted[0] != "logo.bin (binary)" {
		t.Errorf("initial files: %+v", rp.InitialFiles)
	}
	if !json.Valid(EncodePacket(rp)) {
		t.Error("packet is not valid JSON")
	}
}

func TestJudgeUnifiedDiff(t *testing.T) {
	got := UnifiedDiff("f", "a\nb\nc\n", "a\nB\nc\nd\n", true, true)
	want := "--- a/f\n+++ b/f\n@@ -1,3 +1,4 @@\n a\n-b\n+B\n c\n+d\n"
	if got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
	// Far-apart changes make two hunks; a missing final newline is marked.
	var before, after []string
	for i := 1; i <= 20; i++ {
		before = append(before, "l"+string(rune('a'+i)))
	}
	after = append(after, before...)
	after[1], after[18] = "X", "Y"
	got = UnifiedDiff("g", strings.Join(before, "\n"), strings.Join(after, "\n"), true, true)
	want = "--- a/g\n+++ b/g\n@@ -1,5 +1,5 @@\n lb\n-lc\n+X\n ld\n le\n lf\n@@ -16,5 +16,5 @@\n lq\n lr\n ls\n-lt\n+Y\n lu\n\\ No newline at end of file\n"
	if got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
	if got := UnifiedDiff("h", "x\n", "", true, false); got != "--- a/h\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n" {
		t.Errorf("deletion diff:\n%s", got)
	}
}

func TestJudgeParseRubricReply(t *testing.T) {
	ok := []struct{ name, reply string }{
		{"plain", `{"criteria": [{"criterion": 1, "pass": false, "evidence": "b"}, {"criterion": 0, "pass": true, "evidence": "a"}]}`},
		{"fenced", "```json\n{\"criteria\": [{\"criterion\": 0, \"pass\": true, \"evidence\": \"a\"}, {\"criterion\": 1, \"pass\": false, \"evidence\": \"b\"}]}\n```"},
		{"prose around", "Here you go:\n{\"criteria\": [{\"criterion\": 0, \"pass\": true, \"evidence\": \"a\"}, {\"criterion\": 1, \"pass\": false, \"evidence\": \"b\"}]}\nDone."},
	}
	for _, tc := range ok {
		got, err := ParseRubricReply(tc.reply, 2)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		want := []CriterionResult{{0, true, "a"}, {1, false, "b"}}
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("%s: %+v", tc.name, got)
		}
	}
	bad := []struct{ name, reply, want string }{
		{"missing", `{"criteria": [{"criterion": 0, "pass": true}]}`, "criterion 1 has no result"},
		{"duplicate", `{"criteria": [{"criterion": 0, "pass": true}, {"criterion": 0, "pass": false}, {"criterion": 1, "pass": true}]}`, "criterion 0 has 2 results"},
		{"extra", `{"criteria": [{"criterion": 0, "pass": true}, {"criterion": 1, "pass": true}, {"criterion": 2, "pass": true}]}`, "criterion 2 is not a criterion"},
		{"negative index", `{"criteria": [{"criterion": -1, "pass": true}, {"criterion": 0, "pass": true}, {"criterion": 1, "pass": true}]}`, "criterion -1 is not a criterion"},
		{"not JSON", `The attempt is fine.`, "holds no JSON object"},
		{"broken JSON", `{"criteria": [{"criterion": 0, "pass": true},]}`, "not the JSON asked for"},
		{"no criteria", `{"results": []}`, `no "criteria" list`},
		{"criteria not a list", `{"criteria": {"0": true}}`, "not the JSON asked for"},
		{"index as string", `{"criteria": [{"criterion": "0", "pass": true}, {"criterion": 1, "pass": true}]}`, "result 0: criterion \"0\" is not an index"},
		{"fractional index", `{"criteria": [{"criterion": 0.5, "pass": true}, {"criterion": 1, "pass": true}]}`, "criterion 0.5 is not an index"},
		{"pass as string", `{"criteria": [{"criterion": 0, "pass": "yes"}, {"criterion": 1, "pass": true}]}`, "result 0 is malformed"},
		{"no pass", `{"criteria": [{"criterion": 0, "evidence": "x"}, {"criterion": 1, "pass": true}]}`, "criterion 0 has no boolean pass"},
		{"no index", `{"criteria": [{"pass": true}, {"criterion": 1, "pass": true}]}`, "result 0 names no criterion"},
	}
	for _, tc := range bad {
		got, err := ParseRubricReply(tc.reply, 2)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %+v, %v; want an error with %q", tc.name, got, err, tc.want)
		}
	}
}

func TestJudgeParsePairwiseReply(t *testing.T) {
	for reply, want := range map[string]string{
		`{"winner": "A", "evidence": "x"}`: PositionA,
		`{"winner": "b"}`:                  PositionB,
		"```\n{\"winner\": \"TIE\"}\n```":  "tie",
	} {
		if got, _, err := ParsePairwiseReply(reply); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", reply, got, err, want)
		}
	}
	for _, reply := range []string{`{"winner": "C"}`, `{"evidence": "A"}`, `A`, `{"winner": 1}`} {
		if got, _, err := ParsePairwiseReply(reply); err == nil {
			t.Errorf("%s: %q, want an error", reply, got)
		}
	}
	for _, tc := range []struct{ winner, pos, want string }{
		{"A", "A", PairwiseWin}, {"B", "A", PairwiseLoss}, {"tie", "A", PairwiseTie},
		{"B", "B", PairwiseWin}, {"A", "B", PairwiseLoss}, {"tie", "B", PairwiseTie},
	} {
		if got := PairwiseOutcome(tc.winner, tc.pos); got != tc.want {
			t.Errorf("winner %s, candidate at %s: %s, want %s", tc.winner, tc.pos, got, tc.want)
		}
	}
}

func TestJudgePairwiseOrderAndCombine(t *testing.T) {
	pair := suite.Pair{Candidate: "forced", Baseline: "none"}
	seen := map[string]int{}
	for trial := 1; trial <= 40; trial++ {
		pos := PairwiseOrder(1, "a", trial, pair)
		if pos != PairwiseOrder(1, "a", trial, pair) {
			t.Fatal("order is not deterministic")
		}
		seen[pos]++
	}
	if seen[PositionA] < 10 || seen[PositionB] < 10 {
		t.Errorf("orders over 40 trials: %v", seen)
	}
	differs := false
	for trial := 1; trial <= 20; trial++ {
		differs = differs || PairwiseOrder(1, "a", trial, pair) != PairwiseOrder(2, "a", trial, pair)
	}
	if !differs {
		t.Error("the seed does not move the orders")
	}
	// Without swap: the judged order's outcome.
	if r := CombinePairwise("a", 1, pair, PositionB, "", PairwiseLoss, false, nil); r.Outcome != PairwiseLoss || r.Orders != nil || r.First != PositionB {
		t.Errorf("no swap: %+v", r)
	}
	// With swap: agreement keeps the outcome, disagreement is a TIE, an
	// invalid reply is INVALID.
	for _, tc := range []struct{ asA, asB, want string }{
		{PairwiseWin, PairwiseWin, PairwiseWin},
		{PairwiseLoss, PairwiseLoss, PairwiseLoss},
		{PairwiseWin, PairwiseLoss, PairwiseTie}, // a judge that always answers A
		{PairwiseTie, PairwiseWin, PairwiseTie},
		{PairwiseInvalid, PairwiseWin, PairwiseInvalid},
	} {
		r := CombinePairwise("a", 1, pair, PositionA, tc.asA, tc.asB, true, nil)
		if r.Outcome != tc.want || len(r.Orders) != 2 || r.Orders[0] != tc.asA || r.Orders[1] != tc.asB {
			t.Errorf("%s/%s: %+v, want %s", tc.asA, tc.asB, r, tc.want)
		}
	}
}

// TestJudgeRubricNeverRescues: criteria join the checks; a failing
// criterion fails the cell; a passing judge never passes a cell that failed
// deterministically; an invalid reply makes the cell invalid, counted in
// invalidRun and making the verdict INCOMPLETE.
func TestJudgeRubricNeverRescues(t *testing.T) {
	p, root := judgePlan(t)
	skill, none := judgeAttempts(t, p, root)
	pc := p.Cases[0]
	grade := func(a JudgeAttempt, status string) CellResult {
		r, err := GradeCell(p, pc, a.Cell, GradeInput{Status: status, Answer: a.Answer, World: a.World, RunChecks: a.Checks[1:2]})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	good := grade(skill, StatusCompleted)
	bad := grade(none, StatusCompleted)
	if !good.Passed || bad.Passed {
		t.Fatalf("deterministic: good %v, bad %v", good.Passed, bad.Passed)
	}
	allPass := CellJudgement{Valid: true, Criteria: []CriterionResult{{0, true, "fixed"}, {1, true, "only that"}}}
	oneFails := CellJudgement{Valid: true, Criteria: []CriterionResult{{0, true, "fixed"}, {1, false, "added CHANGES.md"}}}

	r := ApplyRubric(good, pc, allPass)
	if !r.Passed || r.Status != StatusCompleted || r.Judge.Score != 1 || !r.Judge.DeterministicPassed {
		t.Errorf("all pass: %+v", r)
	}
	n := 0
	for _, ch := range r.Checks {
		if ch.Kind == CheckJudge {
			n++
		}
	}
	if n != 2 || r.Checks[len(r.Checks)-1].Name != "rubric 1: Nothing else changes." {
		t.Errorf("judge checks: %+v", r.Checks)
	}
	if r.Score != good.Score {
		t.Errorf("score moved from %v to %v: it is the deterministic checks'", good.Score, r.Score)
	}
	r = ApplyRubric(good, pc, oneFails)
	if r.Passed || r.Judge.Score != 0.5 || r.Checks[len(r.Checks)-1].Passed || r.Checks[len(r.Checks)-1].Detail != "added CHANGES.md" {
		t.Errorf("a failing criterion: %+v", r)
	}
	r = ApplyRubric(bad, pc, allPass)
	if r.Passed || r.Judge.DeterministicPassed {
		t.Errorf("the judge passed a deterministically failed cell: %+v", r)
	}
	timedOut := ApplyRubric(grade(skill, StatusTimeout), pc, allPass)
	if timedOut.Passed {
		t.Errorf("the judge passed a timed-out cell")
	}
	// Rejudging starts from the deterministic grade, not from the last judgement.
	r = ApplyRubric(ApplyRubric(good, pc, oneFails), pc, allPass)
	if !r.Passed || len(r.Checks) != len(good.Checks)+2 {
		t.Errorf("rejudged: %+v", r)
	}
	invalid := ApplyRubric(good, pc, CellJudgement{Valid: false, Reason: "criterion 1 has no result"})
	if invalid.Passed || invalid.Status != StatusInvalid || invalid.Error != "judge: criterion 1 has no result" || invalid.Judge.Status != StatusCompleted {
		t.Errorf("invalid: %+v", invalid)
	}
}

// TestRubricPass: a rubric passes at its case's fraction of criteria met (the ratio,
// exactly: 4 of 5 meet 0.8, 7 of 10 meet 0.7), every criterion by default; a passing
// rubric never passes a failed cell, and a check failed under a passing rubric below
// every criterion is still a dispute; a met rubric with a failed criterion is none.
func TestRubricPass(t *testing.T) {
	for _, tc := range []struct {
		passed, n int
		need      float64
		want      bool
	}{{4, 5, 0.8, true}, {3, 5, 0.8, false}, {4, 5, 1, false}, {5, 5, 1, true}, {7, 10, 0.7, true}, {6, 10, 0.7, false}, {0, 0, 1, true}} {
		if got := RubricPasses(tc.passed, tc.n, tc.need); got != tc.want {
			t.Errorf("RubricPasses(%d, %d, %g) = %v", tc.passed, tc.n, tc.need, got)
		}
	}
	p, root := judgePlan(t)
	skill, none := judgeAttempts(t, p, root)
	pc := p.Cases[0]
	if RubricNeed(pc) != 1 {
		t.Fatalf("default need %g, want every criterion", RubricNeed(pc))
	}
	pc.RubricPass = 0.5
	grade := func(a JudgeAttempt) CellResult {
		r, err := GradeCell(p, pc, a.Cell, GradeInput{Status: StatusCompleted, Answer: a.Answer, World: a.World, RunChecks: a.Checks[1:2]})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	good, bad := grade(skill), grade(none)
	oneFails := []CriterionResult{{0, true, "fixed"}, {1, false, "added CHANGES.md"}}
	if r := ApplyRubric(good, pc, CellJudgement{Valid: true, Criteria: oneFails}); !r.Passed || r.Judge.Score != 0.5 || r.Checks[len(r.Checks)-1].Passed {
		t.Errorf("one of two at 0.5: passed %v, judge %+v", r.Passed, r.Judge)
	}
	if r := ApplyRubric(bad, pc, CellJudgement{Valid: true, Criteria: oneFails}); r.Passed {
		t.Errorf("a met rubric passed a failed cell")
	}
	if d := DisputeOf(p, pc, good, oneFails); d != nil {
		t.Errorf("checks passed and the rubric met: dispute %+v", d)
	}
	d := DisputeOf(p, pc, bad, oneFails)
	if d == nil || d.Need != 0.5 || !strings.Contains(d.Disagreed, "the judge passed the rubric (1 of 2 criteria, 0.5 needed)") {
		t.Fatalf("a failed check under a met rubric: dispute %+v", d)
	}
	d.Adjudicated, d.Valid, d.Criteria = true, true, oneFails
	if d.Decision() != DecisionPass {
		t.Errorf("adjudicator met 1 of 2 at 0.5: %s", d.Decision())
	}
}

// TestJudgeAdjudication: a rubric cell is disputed when its checks and
// the judge disagree, or when the suite names its case; the adjudicator's
// criteria then decide the judge outcome, never passing a cell whose
// checks failed, and the report lists every dispute.
func TestJudgeAdjudication(t *testing.T) {
	p, root := judgePlan(t)
	if a := p.Judge.Adjudication; !a.Enabled || a.Cases == nil || len(a.Cases) != 0 || a.Judge != nil {
		t.Errorf("adjudication defaults %+v: want enabled, no case named, the judge itself", a)
	}
	skill, none := judgeAttempts(t, p, root)
	pc := p.Cases[0]
	grade := func(a JudgeAttempt) CellResult {
		r, err := GradeCell(p, pc, a.Cell, GradeInput{Status: StatusCompleted, Answer: a.Answer, World: a.World, RunChecks: a.Checks[1:2]})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	good, bad := grade(skill), grade(none)
	allPass := []CriterionResult{{0, true, "fixed"}, {1, true, "only that"}}
	oneFails := []CriterionResult{{0, true, "fixed"}, {1, false, "added CHANGES.md"}}
	if d := DisputeOf(p, pc, good, allPass); d != nil {
		t.Errorf("agreement disputed: %+v", d)
	}
	if d := DisputeOf(p, pc, bad, oneFails); d != nil {
		t.Errorf("agreement on a failure disputed: %+v", d)
	}
	d := DisputeOf(p, pc, good, oneFails)
	if d == nil || d.Kind != DisputeDisagreement || d.Disagreed != "every deterministic check passed; the judge failed rubric 1: Nothing else changes." {
		t.Errorf("checks passed, judge failed: %+v", d)
	}
	d = DisputeOf(p, pc, bad, allPass)
	if d == nil || d.Kind != DisputeDisagreement || !strings.HasPrefix(d.Disagreed, "the judge passed every criterion; deterministic checks failed: ") || !strings.Contains(d.Disagreed, "run: test -f") {
		t.Errorf("checks failed, judge passed: %+v", d)
	}
	// A judged result is taken back to its deterministic grade first.
	if d := DisputeOf(p, pc, ApplyRubric(good, pc, CellJudgement{Valid: true, Criteria: oneFails}), allPass); d != nil {
		t.Errorf("judged result disputed: %+v", d)
	}
	named := *p
	nj := *p.Judge
	nj.Adjudication.Cases = []string{pc.ID}
	named.Judge = &nj
	if d := DisputeOf(&named, pc, good, allPass); d == nil || d.Kind != DisputeNamed || d.Disagreed != "the suite names case fixit for adjudication" {
		t.Errorf("named case: %+v", d)
	}

	adjudicated := func(first, second []CriterionResult, r CellResult) CellResult {
		d := DisputeOf(&named, pc, r, first)
		d.Adjudicated, d.Key, d.Valid, d.Criteria = true, "adj", second != nil, second
		if second == nil {
			d.Reason = "the reply holds no JSON object"
		}
		return ApplyRubric(r, pc, CellJudgement{Valid: true, Criteria: first, Dispute: d})
	}
	// The adjudicator passes what the judge failed: the cell passes, its
	// checks the adjudicator's.
	r := adjudicated(oneFails, allPass, good)
	if !r.Passed || r.Judge.Score != 1 || r.Checks[len(r.Checks)-1].Detail != "only that" || r.Judge.Criteria[1].Pass {
		t.Errorf("adjudicator passes: %+v", r)
	}
	// It never passes a cell whose checks failed.
	if r := adjudicated(allPass, allPass, bad); r.Passed || r.Judge.Dispute.Decision() != DecisionPass {
		t.Errorf("adjudicator rescued a failed cell: %+v", r)
	}
	// It fails what the judge passed (a named case).
	if r := adjudicated(allPass, oneFails, good); r.Passed || r.Judge.Dispute.Decision() != DecisionFail {
		t.Errorf("adjudicator fails: %+v", r)
	}
	// An unreadable adjudication makes the cell invalid.
	if r := adjudicated(oneFails, nil, good); r.Status != StatusInvalid || r.Error != "adjudicator: the reply holds no JSON object" || r.Judge.Dispute.Decision() != DecisionInvalid {
		t.Errorf("invalid adjudication: %+v", r)
	}
	// Not adjudicated (adjudication off): the first judgement stands.
	off := DisputeOf(p, pc, good, oneFails)
	if r := ApplyRubric(good, pc, CellJudgement{Valid: true, Criteria: oneFails, Dispute: off}); r.Passed || r.Judge.Dispute.Decision() != DecisionNotAdjudicated {
		t.Errorf("not adjudicated: %+v", r)
	}

	// The report lists the disputes in plan order, with the decisions.
	var results []CellResult
	for _, c := range p.Cells {
		switch c.ID {
		case "fixit/armzeta/1":
			a := skill
			results = append(results, adjudicated(oneFails, allPass, grade(a)))
		case "fixit/armeta/1":
			results = append(results, adjudicated(allPass, oneFails, bad))
		default:
			a := skill
			a.Cell = c
			results = append(results, ApplyRubric(grade(a), pc, CellJudgement{Valid: true, Criteria: allPass}))
		}
		results[len(results)-1].Cell, results[len(results)-1].Case, results[len(results)-1].Arm, results[len(results)-1].Trial = c.ID, c.Case, c.Arm, c.Trial
	}
	rep := BuildAdjudicationReport(&named, results)
	if rep == nil || !rep.Blinded || !rep.Enabled || rep.Provider != "command" || len(rep.Disputed) != 2 {
		t.Fatalf("adjudication report %+v", rep)
	}
	want := []DisputedCell{
		{Cell: "fixit/armeta/1", Case: "fixit", Arm: "armeta", Trial: 1, Kind: DisputeDisagreement, Decision: DecisionFail, Failed: []string{"rubric 1: Nothing else changes."}},
		{Cell: "fixit/armzeta/1", Case: "fixit", Arm: "armzeta", Trial: 1, Kind: DisputeDisagreement, Decision: DecisionPass, Passed: true},
	}
	for i, w := range want {
		g := rep.Disputed[i]
		if g.Cell != w.Cell || g.Kind != w.Kind || g.Decision != w.Decision || g.Passed != w.Passed || strings.Join(g.Failed, ",") != strings.Join(w.Failed, ",") || g.Disagreed == "" {
			t.Errorf("dispute %d = %+v, want %+v", i, g, w)
		}
	}
	// The audit queue lists a disagreement with what the adjudicator decided.
	queue := AuditQueue(&named, results, 1)
	found := false
	for _, it := range queue {
		if it.Cell == "fixit/armzeta/1" {
			found = slices.Contains(it.Reasons, AuditDisagreement) && strings.Contains(it.Detail, "adjudicator: pass")
		}
	}
	if !found {
		t.Errorf("audit queue %+v lacks the adjudicated disagreement", queue)
	}
	if AdjudicationKey(p.Cells[0].Grade) == AdjudicationKey(p.Cells[1].Grade) || AdjudicationKey(p.Cells[0].Grade).Encoded() == p.Cells[0].Grade.Encoded() {
		t.Error("adjudication keys are not the cells' own")
	}
}
