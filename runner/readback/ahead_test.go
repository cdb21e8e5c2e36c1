package readback

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/store"
)

// TestPlanAhead: the plan read ahead is taken while plan.json holds the
// bytes it decoded; a plan written since is read again, and a file edited
// since is refused as ReadPlan refuses it.
func TestPlanAhead(t *testing.T) {
	out := t.TempDir()
	write := func(name string) {
		p := &plan.Plan{Format: plan.PlanFormat, Suite: plan.PlanSuite{Name: name}}
		p.Digest = p.ComputeDigest()
		if err := os.WriteFile(filepath.Join(out, store.FilePlan), p.Encode(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a")
	ahead := ReadPlanAhead(out)
	p, err := readPlan(out, ahead)
	if err != nil || p != ahead.p || p.Suite.Name != "a" {
		t.Fatalf("unchanged: %v, %+v", err, p)
	}
	write("b")
	if p, err = readPlan(out, ahead); err != nil || p == ahead.p || p.Suite.Name != "b" {
		t.Fatalf("written since: %v, %+v", err, p)
	}
	b, _ := os.ReadFile(filepath.Join(out, store.FilePlan))
	os.WriteFile(filepath.Join(out, store.FilePlan), []byte(string(b[:len(b)-4])+"x\n}\n"), 0o644)
	if _, err = readPlan(out, ReadPlanAhead(out)); err == nil {
		t.Fatal("an edited plan.json was read")
	}
}
