package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/report"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/verdict"
	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/store"
)

// TestSkillOptWorkspaceCheckedAfterRollouts: a SkillOpt case's caseDir is
// its whole exported workspace, so the inputs a run pins include the
// manifest and every data/*.jsonl file, and an edit to either while the
// cells run is found after the rollouts, naming the file, as SkillOpt
// verifies its workspace again after the provider exits.
func TestSkillOptWorkspaceCheckedAfterRollouts(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "skillopt-example")
	if err := os.CopyFS(dir, os.DirFS("../suites/skillopt-example")); err != nil {
		t.Fatal(err)
	}
	p, err := plan.CompileDir(dir)
	if err != nil {
		t.Fatal(suite.PrintError(err, dir))
	}
	st, err := store.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	in := newInputs(p, dir, st)
	for _, pc := range p.Cases {
		if err := in.add(pc, p.Arms[0]); err != nil {
			t.Fatal(err)
		}
	}
	if err := in.pin(); err != nil {
		t.Fatal(err)
	}
	if changed := in.recheck(); len(changed) != 0 {
		t.Fatalf("unchanged inputs recheck as %v", changed)
	}
	data := filepath.Join(dir, ".skillopt/changelog/evaluate/data/valid-unseen.jsonl")
	b, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(data, []byte(strings.Replace(string(b), "NOTES.md", "NOTES", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	got := in.recheck()["caseDir .skillopt/changelog/evaluate"]
	if want := "caseDir .skillopt/changelog/evaluate: data/valid-unseen.jsonl modified"; !slices.Contains(got, want) {
		t.Errorf("after the edit the recheck says %v, want %q", got, want)
	}
}

// TestSkillOptExampleEndToEnd runs the SkillOpt example for real (the real
// Claude Code CLI, its model the suite's scripted stand-in): the candidate
// passes what without-target fails, and the run folder holds SkillOpt's
// evaluate and release reports of both arms, built from the pinned
// workspaces, the no-skill one with no target revision and zero bytes.
func TestSkillOptExampleEndToEnd(t *testing.T) {
	dockertest.Engine(t)
	p, err := plan.CompileDir("../suites/skillopt-example")
	if err != nil {
		t.Fatal(suite.PrintError(err, ".."))
	}
	suiteDir, _ := filepath.Abs("../suites/skillopt-example")
	out := t.TempDir()
	var log bytes.Buffer
	sum, r, err := Evaluate(context.Background(), p, Options{Out: out, SuiteDir: suiteDir, Jobs: 4, Log: &log})
	if err != nil {
		t.Fatalf("evaluate: %v\n%s", err, log.String())
	}
	if !sum.Complete() || r.Verdict.Verdict != verdict.VerdictPass {
		t.Fatalf("summary %+v, verdict %s %v\n%s", sum, r.Verdict.Verdict, r.Verdict.Reasons, log.String())
	}
	type metric struct{ Value float64 }
	type aggregate struct {
		Phase               string
		VariantRole         string
		TargetSkillRevision *string
		CaseIDs             []string
		RunCount            int
		Metrics             map[string]json.RawMessage
		Cost                struct{ TargetSkillBytes int64 }
	}
	for _, tc := range []struct {
		file, role string
		cases      int
		success    float64
	}{
		{"evaluate.candidate.json", "candidate", 2, 1},
		{"evaluate.without-target.json", "baseline", 2, 0},
		{"release.candidate.json", "candidate", 3, 1},
		{"release.without-target.json", "baseline", 3, 0},
	} {
		b, err := os.ReadFile(filepath.Join(out, report.DirSkillOpt, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		var a aggregate
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatal(err)
		}
		var ts metric
		_ = json.Unmarshal(a.Metrics["taskSuccess"], &ts)
		installed := a.TargetSkillRevision != nil
		if a.VariantRole != tc.role || len(a.CaseIDs) != tc.cases || a.RunCount != 3*tc.cases || ts.Value != tc.success ||
			installed != (tc.role == "candidate") || (a.Cost.TargetSkillBytes > 0) != installed {
			t.Errorf("%s: %s", tc.file, b)
		}
	}
}
