package readback

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/store"
)

// TestPlanAhead: the plan read ahead is taken while plan.json holds the
// bytes it decoded; a plan written since is read again, and a file edited
// since it was read ahead is refused as ReadPlan refuses it.
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
	ahead = ReadPlanAhead(out)
	b, err := os.ReadFile(filepath.Join(out, store.FilePlan))
	if err != nil || !strings.Contains(string(b), `"name": "b"`) {
		t.Fatalf("plan.json: %v\n%s", err, b)
	}
	<-ahead.done // decoded before the edit
	if err := os.WriteFile(filepath.Join(out, store.FilePlan), []byte(strings.Replace(string(b), `"name": "b"`, `"name": "c"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err = readPlan(out, ahead); err == nil || !strings.Contains(err.Error(), "does not match its digest") {
		t.Fatalf("a plan.json edited since it was read ahead: %v", err)
	}
}
