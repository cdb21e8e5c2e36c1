package skillopt_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	cueerrors "cuelang.org/go/cue/errors"

	"github.com/skillgate/skillgate/pipeline/formats/skillopt"
	"github.com/skillgate/skillgate/pipeline/suite"
)

const example = "../../../suites/skillopt-example"

// copyExample copies the example suite into a fresh repository folder.
func copyExample(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "suite")
	if err := os.CopyFS(dir, os.DirFS(example)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// vetMessages loads the suite at dir and returns its problems as vet
// prints them, with positions relative to dir.
func vetMessages(t *testing.T, dir string) string {
	t.Helper()
	_, err := suite.LoadSuite(dir)
	if err == nil {
		return ""
	}
	var b strings.Builder
	cueerrors.Print(&b, err, &cueerrors.Config{Cwd: dir, ToSlash: true})
	return b.String()
}

// TestExampleSuite: the example vets, with the workspaces' cases, the
// target skill from candidate/, and SkillOpt's two topologies as arms.
func TestExampleSuite(t *testing.T) {
	s, err := suite.LoadSuite(example)
	if err != nil {
		t.Fatal(vetMessages(t, example))
	}
	if got := s.CaseOrder; !slices.Equal(slices.Sorted(slices.Values(got)), []string{"changelog-frozen-fix", "changelog-retry-fix", "changelog-token-refusal"}) {
		t.Errorf("cases %v", got)
	}
	if got := s.Skills["changelog"].Path; got != ".skillopt/changelog/evaluate/candidate/skills/changelog" {
		t.Errorf("skill path %q", got)
	}
	if got := s.Arms["candidate"].Skills; !slices.Equal(got, []string{"changelog"}) {
		t.Errorf("candidate arm installs %v", got)
	}
	if got := s.Arms["without-target"].Skills; len(got) != 0 {
		t.Errorf("without-target arm installs %v", got)
	}
	c := s.Cases["changelog-frozen-fix"]
	if c.Split != "test-frozen" || c.CaseDir != ".skillopt/changelog/release" || c.Fixture != "evals/fixtures/retry-fix" {
		t.Errorf("frozen case: split %s, caseDir %s, fixture %s", c.Split, c.CaseDir, c.Fixture)
	}
	if !slices.Equal(c.Sources, []string{".skillopt/changelog/release/data/test-frozen.jsonl"}) {
		t.Errorf("frozen case sources %v", c.Sources)
	}
	r := s.Cases["changelog-retry-fix"]
	if len(r.Assert) != 3 || r.Assert[0].Answer == nil || deref(r.Assert[0].Answer.Matches) != `(?i)\[unreleased\]` || deref(r.Assert[2].Run) != `'grep' '-q' '^### Fixed' 'CHANGELOG.md'` || r.Assert[2].Timeout != "120000ms" {
		t.Errorf("retry-fix checks %+v", r.Assert)
	}
	if len(r.Rubric) != 0 {
		t.Errorf("a fixture-behavior case is not judged, rubric %v", r.Rubric)
	}
}

// TestReleasePairRefused: a release workspace whose skill revision differs
// from the evaluate workspace's cannot make one release report, even when
// each verifies on its own; nor can two workspaces in the wrong roles.
func TestReleasePairRefused(t *testing.T) {
	dir := copyExample(t)
	release := filepath.Join(dir, ".skillopt", "changelog", "release")
	skill := filepath.Join(release, "candidate", "skills", "changelog", "SKILL.md")
	b, err := os.ReadFile(skill)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(skill, append(b, "\nOne more rule.\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(release, skillopt.FileManifest), skillopt.ExportManifest(t, release, skillopt.ModeRelease, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	got := vetMessages(t, dir)
	src, _ := os.ReadFile(filepath.Join(dir, "suite.cue"))
	line := 1 + strings.Count(string(src[:strings.Index(string(src), "release:")]), "\n")
	if want := "pair workspaces .skillopt/changelog/evaluate and .skillopt/changelog/release: skill changelog's revision"; !strings.Contains(got, want) || !strings.Contains(got, "suite.cue:"+itoa(line)+":") {
		t.Errorf("vet says\n%s\nwant %q at the release field", got, want)
	}

	dir = copyExample(t)
	cue := filepath.Join(dir, "suite.cue")
	b, _ = os.ReadFile(cue)
	swapped := strings.NewReplacer(`workspace: ".skillopt/changelog/evaluate"`, `workspace: ".skillopt/changelog/release"`,
		`release:   ".skillopt/changelog/release"`, `release:   ".skillopt/changelog/evaluate"`).Replace(string(b))
	if err := os.WriteFile(cue, []byte(swapped), 0o644); err != nil {
		t.Fatal(err)
	}
	got = vetMessages(t, dir)
	for _, want := range []string{"workspace .skillopt/changelog/release is an release workspace, not an evaluate one", "release .skillopt/changelog/evaluate is an evaluate workspace, not a release one"} {
		if !strings.Contains(got, want) {
			t.Errorf("vet says\n%s\nwant %q", got, want)
		}
	}
}

// TestLookaroundRefused: a JavaScript look-ahead, which RE2 cannot match,
// is refused at the pattern's place in the .jsonl line.
func TestLookaroundRefused(t *testing.T) {
	dir := copyExample(t)
	ws := filepath.Join(dir, ".skillopt", "changelog", "evaluate")
	data := filepath.Join(ws, "data", "adversarial.jsonl")
	b, _ := os.ReadFile(data)
	edited := strings.Replace(string(b), `"value":"secret|token"`, `"value":"secret(?!s)"`, 1)
	if edited == string(b) {
		t.Fatal("the example's adversarial case has no regex to edit")
	}
	if err := os.WriteFile(data, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, skillopt.FileManifest), skillopt.ExportManifest(t, ws, skillopt.ModeEvaluate, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	got := vetMessages(t, dir)
	col := strings.Index(edited, `"secret(?!s)"`) + 1
	want := `read case changelog-token-refusal: regular expression "secret(?!s)" uses a look-around ((?!...), which RE2 cannot match:` + "\n    .skillopt/changelog/evaluate/data/adversarial.jsonl:1:"
	if !strings.Contains(got, want) || !strings.Contains(got, "adversarial.jsonl:1:"+itoa(col)) {
		t.Errorf("vet says\n%s\nwant %q at column %d", got, want, col)
	}
}

// TestFixturesRequired: a case with a fixture needs formats.skillopt.fixtures.
func TestFixturesRequired(t *testing.T) {
	dir := copyExample(t)
	cue := filepath.Join(dir, "suite.cue")
	b, _ := os.ReadFile(cue)
	if err := os.WriteFile(cue, []byte(strings.Replace(string(b), `fixtures:  "evals/fixtures"`, "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	got := vetMessages(t, dir)
	if want := `read case changelog-retry-fix: its fixture "retry-fix" is a folder of SkillOpt's evals/fixtures, which formats.skillopt.fixtures must name:` + "\n    .skillopt/changelog/evaluate/data/valid-unseen.jsonl:1:"; !strings.Contains(got, want) {
		t.Errorf("vet says\n%s\nwant %q", got, want)
	}
}

// TestImportExample: import finds the release workspace beside the
// evaluate one and the fixtures of SkillOpt's repository layout, and the
// suite it writes vets.
func TestImportExample(t *testing.T) {
	dir := copyExample(t)
	out := filepath.Join(dir, "imported")
	files, err := skillopt.Import(filepath.Join(dir, ".skillopt", "changelog", "evaluate"), out)
	if err != nil || !slices.Equal(files, []string{skillopt.FileSuite}) {
		t.Fatalf("import: %v %v", files, err)
	}
	b, _ := os.ReadFile(filepath.Join(out, skillopt.FileSuite))
	for _, want := range []string{`workspace: "../.skillopt/changelog/evaluate"`, `release:   "../.skillopt/changelog/release"`, `fixtures:  "../evals/fixtures"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("suite.cue lacks %s:\n%s", want, b)
		}
	}
	s, err := suite.LoadSuite(out)
	if err != nil {
		t.Fatal(vetMessages(t, out))
	}
	if len(s.Cases) != 3 {
		t.Errorf("imported suite has %d cases", len(s.Cases))
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestForeignSplitFileRefused: a data file of a split the workspace's mode
// does not hold is refused, even empty: exports are never merged.
func TestForeignSplitFileRefused(t *testing.T) {
	dir := copyExample(t)
	f := filepath.Join(dir, ".skillopt", "changelog", "evaluate", "data", "test-frozen.jsonl")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got := vetMessages(t, dir)
	if want := "verify workspace .skillopt/changelog/evaluate: data/test-frozen.jsonl holds split test-frozen, which an evaluate workspace does not (valid-unseen, transfer, adversarial): SkillOpt never merges exports:\n    .skillopt/changelog/evaluate/data/test-frozen.jsonl"; !strings.Contains(got, want) {
		t.Errorf("vet says\n%s\nwant %q", got, want)
	}
}
