package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/runner/store"
)

// TestJudgePreview: the run of a chrisbanes suite is previewed (their
// judge without --execute prints the packet and call counts, calls
// nothing); any other run is judged as skillgate judges it.
func TestJudgePreview(t *testing.T) {
	out := t.TempDir()
	p := &plan.Plan{Formats: []string{"chrisbanes"},
		Cases: []plan.PlanCase{{Case: suite.Case{ID: "c", Rubric: []string{"It is right."}}}, {Case: suite.Case{ID: "d"}}},
		Cells: []plan.Cell{{ID: "c/none/1", Case: "c", Grade: digest.FromString("a")}, {ID: "c/forced/1", Case: "c", Grade: digest.FromString("b")},
			{ID: "c/automatic/1", Case: "c", Grade: digest.FromString("unstored")}, {ID: "d/none/1", Case: "d", Grade: digest.FromString("d")}}}
	for _, k := range []string{"a", "b", "d"} {
		f := filepath.Join(out, store.DirPackets, digest.FromString(k).Encoded()+".json")
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	ok, err := judgePreview(&b, p, out, true)
	want := "{\n  \"execute\": false,\n  \"judge_calls\": 2,\n  \"packet_count\": 2\n}\n"
	if err != nil || !ok || b.String() != want {
		t.Errorf("preview = %v, %v, %q; want %q", ok, err, b.String(), want)
	}
	b.Reset()
	if ok, err := judgePreview(&b, p, out, false); !ok || err != nil || b.String() != "2 eligible persisted packets; 2 planned judge calls\n" {
		t.Errorf("preview = %v, %v, %q", ok, err, b.String())
	}
	b.Reset()
	if ok, err := judgePreview(&b, &plan.Plan{Formats: []string{"gstack"}}, out, false); ok || err != nil || b.Len() != 0 {
		t.Errorf("another format's run previewed: %v %v %q", ok, err, b.String())
	}
}
