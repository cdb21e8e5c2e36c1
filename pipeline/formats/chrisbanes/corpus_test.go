package chrisbanes_test

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/skillgate/skillgate/pipeline/suite"
)

// corpusCases are the case folders of testdata/corpus, each of which
// must import and vet.
var corpusCases = []string{
	"android-benchmark-comparison-direct",
	"android-benchmark-comparison-negative",
	"compose-ui-testing-patterns-direct",
	"gradle-completed-validation-negative",
	"gradle-incidental-validation-direct",
	"grounded-writing-direct",
	"grounded-writing-negative",
	"release-kotlin-library-direct",
	"shepherd-novel",
	"to-plan-specificity-calibration",
}

// corpusCopy copies testdata/corpus into a repository's evals folder.
func corpusCopy(t *testing.T) string {
	t.Helper()
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(repo, "evals")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "corpus"))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRealCasesImport: real chrisbanes/skills case folders (testdata/corpus,
// see its NOTICE) with each field skillgate once refused — forbidden and
// required command patterns, forbid_all_commands, required and forbidden
// Kotlin test calls, file globs, task graphs — import and vet case for
// case, and become trajectory and file checks beside their global safety
// policy.
func TestRealCasesImport(t *testing.T) {
	dir := corpusCopy(t)
	s, err := suite.LoadSuite(dir)
	if err != nil {
		t.Fatalf("vet: %s", suite.PrintError(err, dir))
	}
	if got := slices.Sorted(maps.Keys(s.Cases)); !slices.Equal(got, corpusCases) {
		t.Fatalf("cases %q, want %q", got, corpusCases)
	}
	named := func(id string) map[string]suite.Assertion {
		out := map[string]suite.Assertion{}
		for _, a := range s.Cases[id].Assert {
			out[a.Name] = a
		}
		return out
	}
	for id := range s.Cases {
		if _, ok := named(id)["safety: Gradle runs offline"]; !ok {
			t.Errorf("%s: no safety checks", id)
		}
	}

	neg := named("gradle-completed-validation-negative")
	wrapper := neg[`forbidden command evidence: (?:^|\s)(?:[^\s]+/)?gradlew(?=$|\s)`].Commands
	if wrapper == nil || wrapper.NotMatches == nil {
		t.Fatalf("negative: no forbidden gradlew check in %v", slices.Collect(maps.Keys(neg)))
	}
	re := regexp.MustCompile(*wrapper.NotMatches)
	if !re.MatchString("./gradlew test --offline") || re.MatchString("cat gradlew.properties") {
		t.Errorf("negative: %q does not read as their pattern", *wrapper.NotMatches)
	}

	direct := named("gradle-incidental-validation-direct")
	req := direct[`required command evidence: gradle_run\.py run .*--scope targeted .*--question`].Commands
	if req == nil || req.Matches == nil || !req.Succeeded {
		t.Errorf("direct: required pattern = %+v, want a succeeded matches check", req)
	}

	if none := named("shepherd-novel")["no command"].Commands; none == nil || !none.None {
		t.Errorf("shepherd-novel: forbid_all_commands = %+v, want commands: none", none)
	}

	// automatic_no_skill_control: a negative case that expects no skill at
	// all, while its twin without it expects its target.
	if r := s.Cases["android-benchmark-comparison-negative"].Routing.Skills; len(r.Required)+len(r.Allowed) != 0 {
		t.Errorf("no-skill control: routing %+v, want no skill expected nor allowed", r)
	}
	if r := s.Cases["android-benchmark-comparison-direct"].Routing.Skills; !slices.Equal(r.Required, []string{"android-benchmark-comparison"}) {
		t.Errorf("direct twin: routing %+v, want its target required", r)
	}

	calls := named("compose-ui-testing-patterns-direct")
	required, forbidden := calls["required test call"], calls["forbidden test call"]
	if required.Matches == nil || forbidden.NotMatches == nil {
		t.Fatalf("compose: test calls %+v %+v", required, forbidden)
	}
	// Their overlay's test uses the fixed override; the fix is the default.
	given, err := os.ReadFile(filepath.Join(dir, "cases/compose-ui-testing-patterns-direct/overlay/src/test/kotlin/example/SubjectTest.kt"))
	if err != nil {
		t.Fatal(err)
	}
	fixed := regexp.MustCompile(`options = CaptureOptions\.Fixed\(width = 480\)`).ReplaceAll(given, []byte("options = CaptureOptions.Default"))
	for _, tc := range []struct {
		text                string
		required, forbidden bool
	}{
		{string(given), false, true},
		{string(fixed), true, false},
		{"class T {\n  fun helper() { captureScreenshot(options = CaptureOptions.Default, tolerance = 0.02f) }\n}\n", false, false},
		{"@Test fun t() {\n  captureScreenshot(tolerance = 0.02f, options = CaptureOptions.Default)\n}\n", true, false},
	} {
		if got := regexp.MustCompile(*required.Matches).MatchString(tc.text); got != tc.required {
			t.Errorf("required test call in %q: %v, want %v", tc.text, got, tc.required)
		}
		if got := regexp.MustCompile(*forbidden.NotMatches).MatchString(tc.text); got != tc.forbidden {
			t.Errorf("forbidden test call in %q: %v, want %v", tc.text, got, tc.forbidden)
		}
	}
}
