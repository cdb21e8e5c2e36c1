package plan

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/suite/suitetest"

	"github.com/opencontainers/go-digest"
)

// beforeAfter is baseSuite with two revisions of one skill installed under
// the same name, as gstack compares them.
func beforeAfter(t *testing.T) map[string]string {
	f := suitetest.Edit(t, "suite/suite.cue", `skills: cl: path: "../skills/cl"`, `skills: {
		before: {path: "../skills/cl", name: "cl"}
		after: {path: "../skills/cl2", name: "cl"}
	}`)
	f["suite/suite.cue"] = strings.Replace(f["suite/suite.cue"], `forced: {skills: ["cl"], activation: "forced"}`, `before: {skills: ["before"]}
		after: {skills: ["after"]}`, 1)
	f["skills/cl2/SKILL.md"] = f["skills/cl/SKILL.md"]
	f["skills/cl2/references/format.md"] = f["skills/cl/references/format.md"]
	return f
}

func compileRoot(t *testing.T, root string) *Plan {
	t.Helper()
	p, err := CompileDir(filepath.Join(root, "suite"))
	if err != nil {
		t.Fatalf("compile: %s", suite.PrintError(err, root))
	}
	return p
}

func TestPlanIsCanonical(t *testing.T) {
	a := suitetest.WriteSuite(t, beforeAfter(t))
	b := suitetest.WriteSuite(t, beforeAfter(t))
	// Different absolute folders and file times must not change a byte.
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	filepath.Walk(b, func(p string, _ os.FileInfo, _ error) error { return os.Chtimes(p, old, old) })
	pa, pb := compileRoot(t, a).Encode(), compileRoot(t, b).Encode()
	if !bytes.Equal(pa, pb) {
		t.Fatal("plans of identical suites in two folders differ")
	}
	if bytes.Contains(pa, []byte(a)) {
		t.Fatal("plan contains the absolute checkout path")
	}
	// The written plan reads back with its digest verified.
	file := filepath.Join(t.TempDir(), "plan.json")
	os.WriteFile(file, pa, 0o644)
	p, err := ReadPlan(file)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(p.Cells); got != 9 {
		t.Errorf("cells = %d, want 1 case × 3 arms × 3 trials", got)
	}
	// A hand edit is caught.
	os.WriteFile(file, bytes.Replace(pa, []byte(`"trial": 3`), []byte(`"trial": 4`), 1), 0o644)
	if _, err := ReadPlan(file); err == nil || !strings.Contains(err.Error(), "does not match its digest") {
		t.Fatalf("edited plan accepted: %v", err)
	}
}

func TestDiffAfterSkillOnly(t *testing.T) {
	root := suitetest.WriteSuite(t, beforeAfter(t))
	a := compileRoot(t, root)
	os.WriteFile(filepath.Join(root, "skills/cl2/SKILL.md"), []byte("---\nname: cl\ndescription: Better.\n---\n# cl v2\n"), 0o644)
	b := compileRoot(t, root)
	d := DiffPlans(a, b)
	for _, c := range d.Cells {
		arm := strings.Split(c.ID, "/")[1]
		want := DiffUnchanged
		if arm == "after" {
			want = DiffRollout
		}
		if c.Class != want {
			t.Errorf("%s: %s, want %s", c.ID, c.Class, want)
		}
		if arm == "after" && strings.Join(c.Reasons, ";") != "skill after: SKILL.md modified" {
			t.Errorf("%s reasons = %q", c.ID, c.Reasons)
		}
	}
	if d.Same() || d.Counts[DiffRollout] != 3 || d.Counts[DiffUnchanged] != 6 {
		t.Errorf("counts = %v", d.Counts)
	}
}

func TestDiffReasons(t *testing.T) {
	tests := []struct {
		name    string
		change  func(t *testing.T) map[string]string
		class   string
		arms    string // arms whose cells change, comma-separated
		reasons string
	}{
		{"assertion only regrades", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/cases.cue", `contains: "retry"`, `contains: "backoff"`)
		}, DiffRegrade, "none,forced", "case a.assert changed"},
		{"prompt reruns every arm", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/cases.cue", `"Add an entry."`, `"Add a changelog entry."`)
		}, DiffRollout, "none,forced", "case a: prompt changed"},
		{"model reruns every arm", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/suite.cue", `command: ["sh", "-c", "echo hi"]`, `command: ["sh", "-c", "echo hi"], model: "m2"`)
		}, DiffRollout, "none,forced", `agent.model: (unset) → "m2"`},
		{"fixture file", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/fixtures/repo/CHANGELOG.md", "# Changelog", "# Changes")
		}, DiffRollout, "none,forced", "fixture fixtures/repo: CHANGELOG.md modified"},
		{"forced template reruns forced arms only", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/suite.cue", `command: ["sh", "-c", "echo hi"]`, `command: ["sh", "-c", "echo hi"], forcedPrompt: "/{{skills}} {{prompt}}"`)
		}, DiffRollout, "forced", "agent.forcedPrompt changed"},
		{"limits", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/suite.cue", `limits: timeout: "2m"`, `limits: timeout: "3m"`)
		}, DiffRollout, "none,forced", `limits.timeout: "2m" → "3m"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := compileRoot(t, suitetest.WriteSuite(t, suitetest.BaseSuite))
			b := compileRoot(t, suitetest.WriteSuite(t, tc.change(t)))
			d := DiffPlans(a, b)
			for _, c := range d.Cells {
				arm := strings.Split(c.ID, "/")[1]
				if !strings.Contains(","+tc.arms+",", ","+arm+",") {
					if c.Class != DiffUnchanged {
						t.Errorf("%s: %s, want unchanged", c.ID, c.Class)
					}
					continue
				}
				if c.Class != tc.class || strings.Join(c.Reasons, "; ") != tc.reasons {
					t.Errorf("%s: %s %q, want %s %q", c.ID, c.Class, c.Reasons, tc.class, tc.reasons)
				}
			}
		})
	}
}

func TestDiffAddedRemovedAndJudge(t *testing.T) {
	a := compileRoot(t, suitetest.WriteSuite(t, suitetest.BaseSuite))
	b := compileRoot(t, suitetest.WriteSuite(t, suitetest.Edit(t, "suite/suite.cue", `limits: timeout: "2m"`, `limits: timeout: "2m"
	trials: 4
	judge: model: "judge-2"`)))
	d := DiffPlans(a, b)
	if d.Counts[DiffAdded] != 2 || d.Counts[DiffRegrade] != 6 {
		t.Errorf("counts = %v, want 2 added (trial 4 of two arms) and 6 regraded (the rubric case gets another judge)", d.Counts)
	}
	back := DiffPlans(b, a)
	if back.Counts[DiffRemoved] != 2 {
		t.Errorf("reverse counts = %v", back.Counts)
	}
	if !DiffPlans(a, a).Same() {
		t.Error("a plan differs from itself")
	}
}

func TestSummary(t *testing.T) {
	p := compileRoot(t, suitetest.WriteSuite(t, suitetest.Edit(t, "suite/suite.cue", `command: ["sh", "-c", "echo hi"]`, `command: ["sh", "-c", "echo hi"], prices: perCall: 0.5`)))
	s := p.Summary()
	if s.Cells != 6 || s.AgentCalls != 6 || s.JudgeCalls != 6 || s.CostUSD == nil || *s.CostUSD != 3 {
		t.Errorf("summary = %+v", s)
	}
}

// TestReadPlanOfOlderVersion: a plan file written before a field existed
// still reads, since its digest covers its own bytes.
func TestReadPlanOfOlderVersion(t *testing.T) {
	p := compileRoot(t, suitetest.WriteSuite(t, suitetest.BaseSuite))
	q := *p
	q.Digest = ""
	old := bytes.Replace(q.Encode(), []byte("    \"timeoutsIncomplete\": false,\n"), nil, 1)
	if bytes.Equal(old, q.Encode()) {
		t.Fatal("the plan has no timeoutsIncomplete line to drop")
	}
	d := digest.FromBytes(old)
	file := filepath.Join(t.TempDir(), "plan.json")
	os.WriteFile(file, bytes.Replace(old, []byte(`"digest": ""`), []byte(`"digest": "`+d+`"`), 1), 0o644)
	got, err := ReadPlan(file)
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != d || len(got.Cells) != len(p.Cells) {
		t.Errorf("read %s with %d cells", got.Digest, len(got.Cells))
	}
}
