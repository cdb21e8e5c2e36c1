package grade_test

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// TestSeparateSlicesKnownAnswers holds the separate-slices reading of a
// task graph to the answers chrisbanes/skills' text validator (the
// revision of evals/validators/text_case.py that reads
// separate_slice_requirements) gives on the same plans, recorded in
// testdata/taskgraph_slices_known.json: their own test's plans (grouped,
// separated, inspection only, hidden grouping and symbols, verification
// only, mixed actions, ./ paths, wrong prefixes, dependent slices) and
// negations near and far, Unicode word boundaries, verbs inside words,
// read-only and no-edit clauses, leading inspection verbs, clause splits,
// field ends and fenced fields.
func TestSeparateSlicesKnownAnswers(t *testing.T) {
	raw, err := os.ReadFile("testdata/taskgraph_slices_known.json")
	if err != nil {
		t.Fatal(err)
	}
	var items []struct {
		Name  string `json:"name"`
		Text  string `json:"text"`
		Rules struct {
			RequiredEdges [][2]string `json:"required_edges"`
			Acyclic       bool        `json:"require_acyclic"`
			Separate      []struct {
				ID      string   `json:"id"`
				Files   []string `json:"owned_files"`
				Symbols []string `json:"owned_symbols"`
			} `json:"separate_slice_requirements"`
		} `json:"rules"`
		Want []string `json:"want"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		t.Fatal(err)
	}
	if len(items) < 30 {
		t.Fatalf("%d known answers, want at least 30", len(items))
	}
	for _, it := range items {
		tg := suite.TaskGraphCheck{RequiredEdges: it.Rules.RequiredEdges, Acyclic: it.Rules.Acyclic}
		for _, s := range it.Rules.Separate {
			tg.SeparateSlices = append(tg.SeparateSlices, suite.SeparateSlice{ID: s.ID, Files: s.Files, Symbols: s.Symbols})
		}
		got := grade.TaskGraphFailures(it.Text, tg)
		if got == nil {
			got = []string{}
		}
		if !slices.Equal(got, it.Want) {
			t.Errorf("%s:\n got %q\nwant %q", it.Name, got, it.Want)
		}
	}
}
