package grade

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/suite/suitetest"
)

// TestJudgeBlindArmsAlike: a skill arm and the no-skill baseline answering
// alike, the skill arm also naming its skill, its paths and SKILL.md, and
// quoting SKILL.md in its answer, give equal packets: the judge sees no
// marker, no name and no quote that only one arm's packet holds, in a
// rubric packet or in either place of a pairwise one. A file the agent
// wrote keeps a SKILL.md line it holds: a template the skill prescribes is
// its effect, which the judge must see.
func TestJudgeBlindArmsAlike(t *testing.T) {
	root := suitetest.WriteSuite(t, blindSuite)
	p, err := plan.CompileDir(filepath.Join(root, "suite"))
	if err != nil {
		t.Fatal(suite.PrintError(err, root))
	}
	pc := p.Cases[0]
	plain := "alpha.txt holds alpha beta, before after.\nI read it first.\n"
	skilled := "alpha.txt holds alpha beta, before after, as the alpha skill says.\n" +
		"I read it first. I followed .claude/skills/alpha/SKILL.md before answering.\n" +
		"> Always read every file before you answer.\n"
	files := map[string]string{"notes.md": "read alpha.txt\n"}
	changes := []FileChange{{Path: "notes.md", Kind: "added"}}
	none := judgeAttemptIn(t, p, root, "fx", cellOf(t, p, "read/none/1"), plain, files, changes)
	skill := judgeAttemptIn(t, p, root, "fx", cellOf(t, p, "read/before/1"), skilled, files, changes)
	template := judgeAttemptIn(t, p, root, "fx", cellOf(t, p, "read/before/1"),
		plain, map[string]string{"notes.md": "read alpha.txt\nAlways read every file before you answer!\n"}, changes)
	// The skill as installed, with a line an agent may recite.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(blindSuite["skills/v1/SKILL.md"]+"\nAlways read every file before you answer.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	skill.World.Skills = []WorldSkill{{At: ".claude/skills/alpha", Dir: dir}}
	template.World.Skills = skill.World.Skills

	rubric := func(a JudgeAttempt) []byte {
		rp, err := BuildRubricPacket(p, pc, a)
		if err != nil {
			t.Fatal(err)
		}
		rp.Candidate = "CANDIDATE"
		rp.Evidence = nil // the checks' outcomes differ as the answers do
		return EncodePacket(rp)
	}
	if a, b := rubric(none), rubric(skill); !bytes.Equal(a, b) {
		t.Errorf("rubric packets differ:\nbaseline:\n%s\nskill arm:\n%s", a, b)
	}
	for _, order := range [][2]JudgeAttempt{{none, skill}, {skill, none}} {
		pp, err := BuildPairwisePacket(p, pc, order[0], order[1])
		if err != nil {
			t.Fatal(err)
		}
		a, b := EncodePacket(pp.A), EncodePacket(pp.B)
		if !bytes.Equal(a, b) {
			t.Errorf("pairwise attempts differ:\nA:\n%s\nB:\n%s", a, b)
		}
		for _, leak := range []string{"redacted", "SKILL.md", ".claude", "alpha skill", "every file"} {
			if bytes.Contains(EncodePacket(pp), []byte(leak)) {
				t.Errorf("pairwise packet holds %q", leak)
			}
		}
	}
	if got := rubric(skill); !strings.Contains(string(got), "I read it first.") {
		t.Errorf("the skill arm's own words are gone:\n%s", got)
	}
	if got := rubric(template); !strings.Contains(string(got), "+Always read every file before you answer!") {
		t.Errorf("a SKILL.md line in a file the agent wrote is gone from the packet:\n%s", got)
	}
}
