package store

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/pipeline/plan"
)

// TestMergeReusedLedger: merge carries an entry of reused.json when the
// version of its rollout it chose is the one the listing folder holds,
// once per key (the entry taken first), and refuses an entry that does not
// name the rollout its folder holds.
func TestMergeReusedLedger(t *testing.T) {
	p := mergePlan(t)
	base := t.TempDir()
	at := time.Date(2025, 5, 1, 10, 0, 0, 0, time.UTC)
	c0, c1 := p.Cells[0], p.Cells[1]
	ledger := func(dir string, list ...Reused) {
		b, _ := json.MarshalIndent(list, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, FileReused), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// a took both cells from elsewhere; b ran c0 itself an hour earlier
	// (its version is chosen); c holds a's very version of c1, taken first.
	a, b, c := filepath.Join(base, "a"), filepath.Join(base, "b"), filepath.Join(base, "c")
	fakeRun(t, p, a, []plan.Cell{c0, c1}, "a", at)
	ledger(a, Reused{Key: c0.Rollout, Cell: c0.ID, From: "a-source", RanAt: at, TakenAt: at.Add(time.Hour)},
		Reused{Key: c1.Rollout, Cell: c1.ID, From: "a-source", RanAt: at.Add(time.Second), TakenAt: at.Add(time.Hour)})
	fakeRun(t, p, b, []plan.Cell{c0}, "b", at.Add(-time.Hour))
	fakeRun(t, p, c, []plan.Cell{c1}, "a", at.Add(time.Second))
	ledger(c, Reused{Key: c1.Rollout, Cell: c1.ID, From: "c-source", RanAt: at.Add(time.Second), TakenAt: at.Add(time.Minute)})

	out := filepath.Join(base, "m")
	rec := mustMerge(t, out, a, b, c)
	for _, dup := range rec.Duplicates {
		if dup.Key == c1.Rollout.Encoded() {
			t.Fatalf("a and c hold two versions of c1's rollout, want one: %+v", dup)
		}
	}
	got, err := ReadReused(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Key != c1.Rollout || got[0].From != "c-source" || rec.Reused != 1 {
		t.Errorf("merged reused.json %+v (record %d), want only c1's entry, the one c took first", got, rec.Reused)
	}

	// An entry whose rollout ran at another time than the one its folder
	// holds is refused, naming the folder and the entry.
	d := filepath.Join(base, "d")
	fakeRun(t, p, d, []plan.Cell{c0}, "d", at)
	ledger(d, Reused{Key: c0.Rollout, Cell: c0.ID, From: "x", RanAt: at.Add(time.Minute), TakenAt: at.Add(time.Hour)})
	_, err = Merge(filepath.Join(base, "m2"), []string{d})
	if err == nil || !strings.Contains(err.Error(), "verify "+d+": reused.json entry 1: it names rollout") || !strings.Contains(err.Error(), "altered or damaged") {
		t.Errorf("merge of a folder whose reused.json names another run of its rollout: %v", err)
	}
	if _, err := os.Stat(filepath.Join(base, "m2")); err == nil {
		t.Errorf("a refused merge wrote its folder")
	}
}
