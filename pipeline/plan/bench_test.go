package plan

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/suite/suitetest"

	cuecmd "cuelang.org/go/cmd/cue/cmd"
)

// generateSuite writes a suite of n cases over 4 arms and the given trials,
// with the schema vendored so plain cue can vet it too.
func generateSuite(tb testing.TB, n, trials int) string {
	tb.Helper()
	root := tb.TempDir()
	files := map[string]string{}
	for k, v := range suitetest.BaseSuite {
		if k != "suite/cases.cue" {
			files[k] = v
		}
	}
	files["suite/suite.cue"] = strings.Replace(files["suite/suite.cue"], `forced: {skills: ["cl"], activation: "forced"}`,
		fmt.Sprintf(`forced: {skills: ["cl"], activation: "forced"}
		automatic: {skills: ["cl"]}
		other: {skills: ["cl"]}
	}
	trials: %d
	arms: {`, trials), 1)
	var b strings.Builder
	b.WriteString("package s\n\nimport \"skillgate.dev/schema\"\n\nschema.#Suite & {\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `	cases: "case-%04d": {
		prompt:  "Add a changelog entry for change %d."
		fixture: "fixtures/repo"
		split:   "validation"
		tags: ["markdown"]
		routing: skills: required: ["cl"]
		writes: ["CHANGELOG.md"]
		assert: [
			{file: "CHANGELOG.md", contains: "change %d"},
			{answer: {notMatches: "(?i)I cannot"}},
			{run: "grep -q '^## ' \"$WORLD/CHANGELOG.md\""},
		]
	}
`, i, i, i)
	}
	b.WriteString("}\n")
	files["suite/cases.cue"] = b.String()
	os.Mkdir(filepath.Join(root, ".git"), 0o755)
	for p, body := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := suite.WriteSchema(filepath.Join(root, "suite")); err != nil {
		tb.Fatal(err)
	}
	return filepath.Join(root, "suite")
}

// BenchmarkVetVersusCue vets a 500-case suite with skillgate and with plain
// `cue vet -c`, alternating, and reports skillgate's time as a ratio of
// cue's (target ≤ 1.3: CUE's own evaluation is the floor).
func BenchmarkVetVersusCue(b *testing.B) {
	dir := generateSuite(b, 500, 3)
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		b.Fatal(err)
	}
	defer os.Chdir(wd)
	var sg, cue time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := suite.VetSuites([]string{"."}); err != nil {
			b.Fatal(suite.PrintError(err, dir))
		}
		t1 := time.Now()
		cmd, err := cuecmd.New([]string{"vet", "-c", "."})
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		sg += t1.Sub(t0)
		cue += time.Since(t1)
	}
	b.ReportMetric(float64(sg.Milliseconds())/float64(b.N), "skillgate-ms/op")
	b.ReportMetric(float64(cue.Milliseconds())/float64(b.N), "cue-ms/op")
	b.ReportMetric(float64(sg)/float64(cue), "ratio")
}

// BenchmarkPlan10000Cells loads and compiles 500 cases × 4 arms × 5 trials
// (target: under 1 s an operation).
func BenchmarkPlan10000Cells(b *testing.B) {
	dir := generateSuite(b, 500, 5)
	for i := 0; i < b.N; i++ {
		p, err := CompileDir(dir)
		if err != nil {
			b.Fatal(suite.PrintError(err, dir))
		}
		if len(p.Cells) != 10000 {
			b.Fatalf("cells = %d", len(p.Cells))
		}
		_ = p.Encode()
	}
}
