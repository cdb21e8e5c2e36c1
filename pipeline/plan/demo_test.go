package plan

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/pipeline/suite"

	cuecmd "cuelang.org/go/cmd/cue/cmd"
)

// The demo suite as shipped, relative to this package, and the parts of the
// repository it needs.
const (
	demoSuite = "suites/demo"
	demoSkill = "skills/changelog"
)

// copyDemo copies the demo suite and its skill into a fresh repository,
// keeping their layout, and returns its root.
func copyDemo(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{demoSuite, demoSkill} {
		copyTree(t, filepath.Join("..", "..", rel), filepath.Join(root, rel))
	}
	return root
}

// copyTree copies files, modes and symlinks from src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(to, b, info.Mode().Perm())
		}
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}

func compileDemo(t *testing.T, root string) *Plan {
	t.Helper()
	p, err := CompileDir(filepath.Join(root, demoSuite))
	if err != nil {
		t.Fatalf("compile demo in %s: %s", root, suite.PrintError(err, root))
	}
	return p
}

func TestDemoSuiteVets(t *testing.T) {
	s, err := suite.LoadSuite(filepath.Join("..", "..", demoSuite))
	if err != nil {
		t.Fatalf("LoadSuite: %s", suite.PrintError(err, filepath.Join("..", "..")))
	}
	if len(s.Cases) < 8 {
		t.Errorf("%d cases, want at least 8", len(s.Cases))
	}
	kinds, splits, asserts := map[string]bool{}, map[string]bool{}, map[string]bool{}
	seeded, rubrics := false, false
	for _, c := range s.Cases {
		kinds[c.Kind] = true
		splits[c.Split] = true
		seeded = seeded || len(c.Seed) > 0
		rubrics = rubrics || len(c.Rubric) > 0
		for _, a := range c.Assert {
			for _, k := range assertionKinds(a) {
				asserts[k] = true
			}
		}
	}
	for _, k := range []string{"task", "no-change", "safety"} {
		if !kinds[k] {
			t.Errorf("no case of kind %s (kinds: %v)", k, slices.Sorted(maps.Keys(kinds)))
		}
	}
	for _, sp := range []string{"train", "validation"} {
		if !splits[sp] {
			t.Errorf("no case in split %s (splits: %v)", sp, slices.Sorted(maps.Keys(splits)))
		}
	}
	if !seeded || !rubrics {
		t.Errorf("seed conversation used: %v, rubric used: %v; want both", seeded, rubrics)
	}
	for _, k := range []string{
		"file exists true", "file exists false", "file unchanged",
		"file contains", "file notContains", "file matches", "file notMatches",
		"answer contains", "answer notContains", "answer matches",
		"code notMatches", "run",
	} {
		if !asserts[k] {
			t.Errorf("no %q assertion (have: %v)", k, slices.Sorted(maps.Keys(asserts)))
		}
	}

	if got := strings.Join(s.ArmOrder, ","); got != "none,forced,automatic" {
		t.Fatalf("arms = %s, want none,forced,automatic", got)
	}
	if a := s.Arms["none"]; len(a.Skills) != 0 {
		t.Errorf("arm none installs %v, want no skill", a.Skills)
	}
	if a := s.Arms["forced"]; strings.Join(a.Skills, ",") != "changelog" || a.Activation != "forced" {
		t.Errorf("arm forced = %+v", a)
	}
	if a := s.Arms["automatic"]; strings.Join(a.Skills, ",") != "changelog" || a.Activation != "automatic" {
		t.Errorf("arm automatic = %+v", a)
	}
}

// assertionKinds names what one assertion checks, as "subject check".
func assertionKinds(a suite.Assertion) []string {
	var out []string
	text := func(subject string, c suite.TextCheck) {
		for _, k := range []struct {
			name string
			set  bool
		}{{"contains", c.Contains != nil}, {"notContains", c.NotContains != nil}, {"matches", c.Matches != nil}, {"notMatches", c.NotMatches != nil}} {
			if k.set {
				out = append(out, subject+" "+k.name)
			}
		}
	}
	switch {
	case a.File != nil:
		if a.Exists != nil {
			if *a.Exists {
				out = append(out, "file exists true")
			} else {
				out = append(out, "file exists false")
			}
		}
		if a.Unchanged != nil {
			out = append(out, "file unchanged")
		}
		text("file", a.TextCheck)
	case a.Answer != nil:
		text("answer", *a.Answer)
	case a.Code != nil:
		text("code", *a.Code)
	case a.Run != nil:
		out = append(out, "run")
	}
	return out
}

func TestDemoPlanFromTwoCheckouts(t *testing.T) {
	a, b := copyDemo(t), copyDemo(t)
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	err := filepath.WalkDir(b, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		return os.Chtimes(p, old, old)
	})
	if err != nil {
		t.Fatal(err)
	}
	pa, pb := compileDemo(t, a).Encode(), compileDemo(t, b).Encode()
	if !bytes.Equal(pa, pb) {
		t.Fatal("the demo's plans from two checkouts with different file times differ")
	}
	if real := compileDemo(t, filepath.Join("..", "..")).Encode(); !bytes.Equal(pa, real) {
		t.Fatal("the demo's plan from a copy differs from the plan of the repository's suites/demo")
	}
	if bytes.Contains(pa, []byte(a)) {
		t.Fatal("plan holds the checkout's absolute path")
	}
}

// cueVet runs plain `cue vet -c .` in-process in dir and returns its error
// and its report: what it printed, then the returned error with positions,
// as cue's main would print it.
func cueVet(t *testing.T, dir string) (string, error) {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := os.Chdir(wd); err != nil {
			t.Fatal(err)
		}
	}()
	cmd, _ := cuecmd.New([]string{"vet", "-c", "."})
	var out bytes.Buffer
	cmd.SetOut(io.Discard)
	cmd.SetErr(&out)
	err = cmd.Run(context.Background())
	if err != nil {
		out.WriteString(suite.PrintError(err, dir))
	}
	return out.String(), err
}

func TestVendoredSchemaAcceptedByPlainCue(t *testing.T) {
	root := copyDemo(t)
	dir := filepath.Join(root, demoSuite)
	if _, err := suite.WriteSchema(dir); err != nil {
		t.Fatal(err)
	}
	if out, err := cueVet(t, dir); err != nil {
		t.Fatalf("cue vet of the demo with the vendored schema: %v\n%s", err, out)
	}

	// A misspelt field fails plain cue and skillgate alike, with its position.
	file := filepath.Join(dir, "cases_control.cue")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	line := 1 + bytes.Count(b[:bytes.Index(b, []byte("prompt:"))], []byte("\n"))
	if err := os.WriteFile(file, bytes.Replace(b, []byte("prompt:"), []byte("promt:"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := cueVet(t, dir)
	if err == nil {
		t.Fatal("cue vet accepted a misspelt case field")
	}
	for _, want := range []string{`cases."internal-refactor".promt: field not allowed`, "cases_control.cue:" + strconv.Itoa(line) + ":"} {
		if !strings.Contains(out, want) {
			t.Errorf("cue vet report lacks %q:\n%s", want, out)
		}
	}
	_, err = suite.LoadSuite(dir)
	if err == nil {
		t.Fatal("LoadSuite accepted a misspelt case field")
	}
	msg := suite.PrintError(err, root)
	for _, want := range []string{
		`cases."internal-refactor".promt: field not allowed`,
		"suites/demo/cases_control.cue:" + strconv.Itoa(line) + ":",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("LoadSuite error lacks %q:\n%s", want, msg)
		}
	}
}

func TestDemoDiffAfterSkillEdit(t *testing.T) {
	root := copyDemo(t)
	before := compileDemo(t, root)
	f, err := os.OpenFile(filepath.Join(root, demoSkill, "SKILL.md"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("\nKeep entries short.\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	after := compileDemo(t, root)

	d := DiffPlans(before, after)
	if len(d.Cells) != len(before.Cells) || len(d.Cells) == 0 {
		t.Fatalf("diff has %d cells, plan has %d", len(d.Cells), len(before.Cells))
	}
	for _, c := range d.Cells {
		arm := strings.Split(c.ID, "/")[1]
		switch arm {
		case "none":
			if c.Class != DiffUnchanged {
				t.Errorf("%s: %s %q, want unchanged: no skill is installed", c.ID, c.Class, c.Reasons)
			}
		case "forced", "automatic":
			if c.Class != DiffRollout || strings.Join(c.Reasons, "; ") != "skill changelog: SKILL.md modified" {
				t.Errorf("%s: %s %q, want rollout because skill changelog: SKILL.md modified", c.ID, c.Class, c.Reasons)
			}
		default:
			t.Errorf("%s: unexpected arm", c.ID)
		}
	}
	third := len(d.Cells) / 3
	if d.Same() || d.Counts[DiffRollout] != 2*third || d.Counts[DiffUnchanged] != third {
		t.Errorf("counts = %v, want %d rollout and %d unchanged", d.Counts, 2*third, third)
	}
}
