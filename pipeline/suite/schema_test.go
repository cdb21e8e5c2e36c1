package suite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/suite/suitetest"
)

func TestBaseSuiteIsValid(t *testing.T) {
	root := suitetest.WriteSuite(t, suitetest.BaseSuite)
	s, err := LoadSuite(filepath.Join(root, "suite"))
	if err != nil {
		t.Fatalf("LoadSuite: %s", PrintError(err, root))
	}
	// Defaults come from the schema, not from Go.
	if s.Audit.SamplePercent != 10 {
		t.Errorf("audit.samplePercent = %d, want the schema's 10", s.Audit.SamplePercent)
	}
	if s.Trials != 3 || s.Limits.Timeout != "2m" || s.Limits.Memory != "2g" || s.Cases["a"].Kind != "task" || s.Cases["a"].Weight != 1 {
		t.Errorf("defaults not applied: trials=%d limits=%+v case=%+v", s.Trials, s.Limits, s.Cases["a"])
	}
	if s.Policy.Uplift == nil || s.Policy.Uplift.MinPoints != 15 || s.Policy.Retention == nil || s.Policy.Retention.MinShare != 0.8 {
		t.Errorf("policy preset not applied or override lost: %+v", s.Policy)
	}
	if s.Skills["cl"].Name != "cl" || s.Arms["none"].Activation != "automatic" || len(s.Arms["none"].Skills) != 0 {
		t.Errorf("skill or arm defaults wrong: %+v %+v", s.Skills, s.Arms)
	}
	if got := strings.Join(s.ArmOrder, ","); got != "none,forced" {
		t.Errorf("arm order = %s", got)
	}
}

// TestDecodeRefusesFieldsGoLacks adds a field to the schema's #Case that the Go mirror
// does not have: a suite that sets it must fail to load, naming the field, rather than
// lose it; one that does not set it still loads.
func TestDecodeRefusesFieldsGoLacks(t *testing.T) {
	for _, tc := range []struct{ anchor, old, new string }{
		{"#Case: {\n", `prompt:  "Add an entry."`, `prompt: "Add an entry.", colour: "red"`},
		{"#Assertion: {\n", `{file: "CHANGELOG.md", contains: "retry"}`, `{file: "CHANGELOG.md", contains: "retry", colour: "red"}`},
	} {
		t.Run(strings.Trim(tc.anchor, ": {\n"), func(t *testing.T) {
			orig := schemaFiles
			t.Cleanup(func() { schemaFiles = orig })
			schemaFiles = func() map[string][]byte {
				files := orig()
				if !strings.Contains(string(files["case.cue"]), tc.anchor) {
					t.Fatalf("case.cue lacks %q", tc.anchor)
				}
				files["case.cue"] = []byte(strings.Replace(string(files["case.cue"]), tc.anchor, tc.anchor+"\tcolour?: string\n", 1))
				return files
			}
			root := suitetest.WriteSuite(t, suitetest.BaseSuite)
			if _, err := LoadSuite(filepath.Join(root, "suite")); err != nil {
				t.Fatalf("a suite that does not use the new field: %s", PrintError(err, root))
			}
			root = suitetest.WriteSuite(t, suitetest.Edit(t, "suite/cases.cue", tc.old, tc.new))
			_, err := LoadSuite(filepath.Join(root, "suite"))
			if err == nil || !strings.Contains(err.Error(), `unknown field "colour"`) || !strings.Contains(err.Error(), "case a") {
				t.Fatalf("LoadSuite with a field Go lacks = %v, want an error naming the field and the case", err)
			}
		})
	}
}

func TestSuiteErrors(t *testing.T) {
	cases := []struct {
		name  string
		files func(t *testing.T) map[string]string
		want  []string // substrings of the printed error, including positions
	}{
		{"misspelt suite field", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/suite.cue", `name: "cl"`, `nmae: "cl"`)
		}, []string{"nmae: field not allowed", "suite/suite.cue:10:2"}},
		{"misspelt field in second file", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/cases.cue", "cases: a: {", "caes: a: {")
		}, []string{"caes: field not allowed", "suite/cases.cue:6:2"}},
		{"misspelt case field", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/cases.cue", `prompt:  "Add an entry."`, `prompt: "Add an entry.", fixtrue: "x"`)
		}, []string{"cases.a.fixtrue: field not allowed", "suite/cases.cue:7:"}},
		{"misspelt skill field", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/suite.cue", `skills: cl: path:`, `skills: cl: pth:`)
		}, []string{"skills.cl.pth: field not allowed"}},
		{"misspelt agent field", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/suite.cue", `command: ["sh"`, `comand: ["x"], command: ["sh"`)
		}, []string{"agent.comand: field not allowed"}},
		{"misspelt arm field", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/suite.cue", `activation: "forced"`, `activaton: "forced"`)
		}, []string{"arms.forced.activaton: field not allowed"}},
		{"misspelt limits field", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/suite.cue", `limits: timeout:`, `limits: timout:`)
		}, []string{"limits.timout: field not allowed"}},
		{"misspelt routing field", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/cases.cue", `routing: skills: required:`, `routing: skills: requird:`)
		}, []string{"cases.a.routing.skills.requird: field not allowed"}},
		{"misspelt assertion field", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/cases.cue", `contains: "retry"`, `contain: "retry"`)
		}, []string{"cases.a.assert.0.contain: field not allowed"}},
		{"misspelt answer check", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/cases.cue", `{answer: {notMatches:`, `{answer: {notMatch:`)
		}, []string{"cases.a.assert.1.answer.notMatch: field not allowed"}},
		{"misspelt policy rule", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/suite.cue", `{uplift: minPoints: 15}`, `{uplfit: minPoints: 15}`)
		}, []string{"policy.uplfit: field not allowed"}},
		{"misspelt rule threshold", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/suite.cue", `{uplift: minPoints: 15}`, `{uplift: minPoint: 15}`)
		}, []string{"policy.uplift.minPoint: field not allowed"}},
		{"misspelt significance field", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/suite.cue", `{uplift: minPoints: 15}`, `{uplift: minPoints: 15, significance: alpah: 0.1}`)
		}, []string{"policy.significance.alpah: field not allowed"}},
		{"significance of a rule that does not ask for better", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/suite.cue", `{uplift: minPoints: 15}`, `{uplift: minPoints: 15, significance: rules: ["worse"]}`)
		}, []string{"policy.significance.rules.0"}},
		{"misspelt judge field", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/suite.cue", `limits: timeout: "2m"`, `limits: timeout: "2m"
	judge: {provider: "scripted", mdoe: "pairwise"}`)
		}, []string{"judge.mdoe: field not allowed"}},
		{"misspelt adjudication field", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/suite.cue", `limits: timeout: "2m"`, `limits: timeout: "2m"
	judge: {provider: "scripted", adjudication: {enabled: true, judge: {provider: "command", comand: ["x"]}}}`)
		}, []string{"judge.adjudication.judge.comand: field not allowed"}},
		{"adjudication of an undefined case", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/suite.cue", `limits: timeout: "2m"`, `limits: timeout: "2m"
	judge: {provider: "scripted", adjudication: cases: ["a", "nope"]}`)
		}, []string{`judge.adjudication.cases.1: judge.adjudication.cases names case "nope", which the suite does not define`, "suite/suite.cue:"}},
		{"wrong enum", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/cases.cue", `split:   "validation"`, `split:   "tran"`)
		}, []string{`cases.a.split: "tran" is not one of train, valid-seen, valid-unseen, transfer, adversarial, test-frozen, validation:`, "suite/cases.cue:9:12"}},
		{"missing prompt", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/cases.cue", `prompt:  "Add an entry."`, ``)
		}, []string{"cases.a.prompt: incomplete value"}},
		{"duplicate case ID across files", func(t *testing.T) map[string]string {
			f := suitetest.Edit(t, "suite/cases.cue", "", "")
			f["suite/more.cue"] = "package s\n\nimport \"skillgate.dev/schema\"\n\nschema.#Suite & {\n\tcases: a: prompt: \"Add an entry.\"\n}\n"
			return f
		}, []string{"cases.a: case a is declared 2 times", "suite/cases.cue:6:9", "suite/more.cue:6:9"}},
		{"fixture escaping the repository", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/cases.cue", `fixture: "fixtures/repo"`, `fixture: "../../../etc"`)
		}, []string{"cases.a.fixture: path ../../../etc leaves the repository", "suite/cases.cue:8:"}},
		{"missing fixture", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/cases.cue", `fixture: "fixtures/repo"`, `fixture: "fixtures/nope"`)
		}, []string{"cases.a.fixture: path fixtures/nope: no such file or directory"}},
		{"undefined skill in arm", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/suite.cue", `skills: ["cl"]`, `skills: ["cl2"]`)
		}, []string{`arms.forced.skills.0: arm forced names skill "cl2", which the suite does not define`}},
		{"undefined skill in routing", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/cases.cue", `required: ["cl"]`, `required: ["nope"]`)
		}, []string{`cases.a.routing.skills.required.0: routing names skill "nope"`}},
		{"missing reference file", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/cases.cue", `cl/references/format.md`, `cl/references/nope.md`)
		}, []string{`no skill installed as cl has the file references/nope.md`}},
		{"bad regex", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/cases.cue", `"(?i)I cannot"`, `"(?i)I cannot("`)
		}, []string{"cases.a.assert.1: invalid regular expression", "suite/cases.cue:15:"}},
		{"assertion with two subjects", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/cases.cue", `{code: {notMatches: "rm -rf"}}`, `{code: {notMatches: "rm -rf"}, run: "true"}`)
		}, []string{"cases.a.assert.2: an assertion needs exactly one of file, glob, answer, code, run, commands, tool or sequence (has 2)"}},
		{"count without a glob", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/cases.cue", `{code: {notMatches: "rm -rf"}}`, `{file: "a.md", contains: "x", count: 1}`)
		}, []string{"cases.a.assert.2: count applies to glob assertions only"}},
		{"glob checking nothing", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/cases.cue", `{code: {notMatches: "rm -rf"}}`, `{glob: "plans/*.md"}`)
		}, []string{`cases.a.assert.2: glob assertion "plans/*.md" checks nothing`}},
		{"glob with exists", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/cases.cue", `{code: {notMatches: "rm -rf"}}`, `{glob: "plans/*.md", exists: true}`)
		}, []string{"cases.a.assert.2: exists, unchanged, contains"}},
		{"bullets with a bad link pattern", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/cases.cue", `{code: {notMatches: "rm -rf"}}`, `{file: "CHANGELOG.md", bullets: {heading: "Unreleased", matches: [], links: ["(#1"]}}`)
		}, []string{`cases.a.assert.2: invalid regular expression "(#1"`}},
		{"misspelt task graph field", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/cases.cue", `{code: {notMatches: "rm -rf"}}`, `{glob: "p/*.md", taskGraph: {requiredEdge: []}}`)
		}, []string{"requiredEdge: field not allowed"}},
		{"command check with none and a pattern", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/cases.cue", `{code: {notMatches: "rm -rf"}}`, `{commands: {none: true, notMatches: "rm"}}`)
		}, []string{"cases.a.assert.2: commands: none: true checks that no command ran"}},
		{"tool check with a bad name pattern", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/cases.cue", `{code: {notMatches: "rm -rf"}}`, `{tool: {name: "Bash("}}`)
		}, []string{"cases.a.assert.2: invalid regular expression"}},
		{"sequence step with tool and command", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/cases.cue", `{code: {notMatches: "rm -rf"}}`, `{sequence: [{tool: "Bash", command: "ls"}]}`)
		}, []string{"cases.a.assert.2: sequence step 0 needs exactly one of tool or command"}},
		{"misspelt trajectory field", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "suite/cases.cue", `{code: {notMatches: "rm -rf"}}`, `{commands: {notMatch: "rm"}}`)
		}, []string{"notMatch: field not allowed"}},
		{"skill without description", func(t *testing.T) map[string]string {
			return suitetest.Edit(t, "skills/cl/SKILL.md", "description: Writes changelog entries.\n", "")
		}, []string{"skills.cl.path: SKILL.md front matter has no description", "suite/suite.cue:11:20"}},
		{"several problems are all reported", func(t *testing.T) map[string]string {
			f := suitetest.Edit(t, "suite/cases.cue", `"(?i)I cannot"`, `"("`)
			f["suite/cases.cue"] = strings.Replace(f["suite/cases.cue"], `required: ["cl"]`, `required: ["nope"]`, 1)
			return f
		}, []string{"invalid regular expression", `routing names skill "nope"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := suitetest.WriteSuite(t, tc.files(t))
			_, err := LoadSuite(filepath.Join(root, "suite"))
			if err == nil {
				t.Fatal("LoadSuite succeeded; want an error")
			}
			out := PrintError(err, root)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("error output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestSymlinkEscapingRepository(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("fixture is a symlink", func(t *testing.T) {
		root := suitetest.WriteSuite(t, suitetest.Edit(t, "suite/cases.cue", `fixture: "fixtures/repo"`, `fixture: "fixtures/link"`))
		if err := os.Symlink(outside, filepath.Join(root, "suite/fixtures/link")); err != nil {
			t.Fatal(err)
		}
		_, err := LoadSuite(filepath.Join(root, "suite"))
		if err == nil || !strings.Contains(PrintError(err, root), "resolves through a symlink outside the repository") {
			t.Fatalf("want symlink escape error, got %v", err)
		}
	})
	t.Run("symlink inside the fixture", func(t *testing.T) {
		root := suitetest.WriteSuite(t, suitetest.BaseSuite)
		if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "suite/fixtures/repo/secret")); err != nil {
			t.Fatal(err)
		}
		_, err := LoadSuite(filepath.Join(root, "suite"))
		if err == nil || !strings.Contains(PrintError(err, root), "symlink secret points outside the repository") {
			t.Fatalf("want symlink escape error, got %v", err)
		}
	})
	t.Run("symlink inside the skill", func(t *testing.T) {
		root := suitetest.WriteSuite(t, suitetest.BaseSuite)
		if err := os.Symlink(outside, filepath.Join(root, "skills/cl/references/more")); err != nil {
			t.Fatal(err)
		}
		_, err := LoadSuite(filepath.Join(root, "suite"))
		if err == nil || !strings.Contains(PrintError(err, root), "symlink references/more points outside the repository") {
			t.Fatalf("want symlink escape error, got %v", err)
		}
	})
	t.Run("symlink staying inside is fine", func(t *testing.T) {
		root := suitetest.WriteSuite(t, suitetest.BaseSuite)
		if err := os.Symlink("CHANGELOG.md", filepath.Join(root, "suite/fixtures/repo/HISTORY.md")); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadSuite(filepath.Join(root, "suite")); err != nil {
			t.Fatalf("LoadSuite: %s", PrintError(err, root))
		}
	})
}
