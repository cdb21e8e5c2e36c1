package runner

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
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
