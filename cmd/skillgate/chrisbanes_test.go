package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/store"
)

// TestJudgePreview: the run of a chrisbanes suite is previewed (their
// judge without --execute prints the packet and call counts, calls
// nothing); any other run is judged as skillgate judges it.
func TestJudgePreview(t *testing.T) {
	out := t.TempDir()
	for _, k := range []string{"a", "b"} {
		p := filepath.Join(out, store.DirPackets, k+".json")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	ok, err := judgePreview(&b, &plan.Plan{Formats: []string{"chrisbanes"}}, out)
	want := "{\n  \"execute\": false,\n  \"judge_calls\": 2,\n  \"packet_count\": 2\n}\n"
	if err != nil || !ok || b.String() != want {
		t.Errorf("preview = %v, %v, %q; want %q", ok, err, b.String(), want)
	}
	b.Reset()
	if ok, err := judgePreview(&b, &plan.Plan{Formats: []string{"gstack"}}, out); ok || err != nil || b.Len() != 0 {
		t.Errorf("another format's run previewed: %v %v %q", ok, err, b.String())
	}
}
