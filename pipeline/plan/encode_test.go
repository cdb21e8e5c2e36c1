package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/skillgate/skillgate/pipeline/suite/suitetest"
)

// TestEncodeMatchesEncodingJSON: the hand-written plan encoding (cells and
// fixtures: none, empty, files of every mode, a tree without files) and
// cell keys give encoding/json's bytes and digests exactly, for names that
// need escaping too, so plan files and keys are what they always were.
func TestEncodeMatchesEncodingJSON(t *testing.T) {
	p := compileRoot(t, suitetest.WriteSuite(t, suitetest.BaseSuite))
	p.Cells = append(p.Cells,
		Cell{ID: `odd<&>"\` + "\u2028é\x01", Case: "c", Arm: "a", Trial: 7, Rollout: "sha256:00", Grade: "", Rerun: 2})
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetIndent("", "  ")
	if err := enc.Encode(p); err != nil {
		t.Fatal(err)
	}
	if got := p.Encode(); !bytes.Equal(got, want.Bytes()) {
		t.Errorf("Encode differs from encoding/json:\n%s\nwant\n%s", got, want.Bytes())
	}
	for _, fixtures := range []map[string]Tree{nil, {}, {
		"fx": {Digest: "sha256:01", Bytes: 9, Files: map[string]TreeEntry{
			"b/run.sh":           {Digest: "sha256:02", Mode: "exec", Size: 4},
			`a<&>"\` + "\u2028é": {Digest: "sha256:03", Size: 5},
			"link":               {Digest: "sha256:04", Mode: "symlink", Size: 0},
		}},
		"empty":  {Digest: "sha256:05", Files: map[string]TreeEntry{}},
		"none":   {Digest: "sha256:06"},
		`odd"<é`: {Digest: "sha256:07", Files: map[string]TreeEntry{"x": {}}},
	}} {
		with := *p
		with.Fixtures = fixtures
		want.Reset()
		enc.Encode(&with)
		if got := with.Encode(); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("a plan with fixtures %v encodes as\n%s\nwant\n%s", fixtures, got, want.Bytes())
		}
	}
	for _, cells := range [][]Cell{nil, {}} {
		empty := *p
		empty.Cells = cells
		want.Reset()
		enc.Encode(&empty)
		if got := empty.Encode(); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("a plan with cells %#v encodes as\n%s\nwant\n%s", cells, got, want.Bytes())
		}
	}

	var k cellKeys
	for _, c := range []struct {
		r rolloutKey
		g gradeKey
	}{
		{rolloutKey{"sha256:aa", "sha256:bb", "sha256:cc", "sha256:dd", 3}, gradeKey{"sha256:ee", "sha256:ff", ""}},
		{rolloutKey{"", "x\"<", "", "é", 100}, gradeKey{"r", "c", "sha256:judge"}},
	} {
		if got, want := k.rollout(c.r.Agent, c.r.Limits, c.r.Arm, c.r.Case, c.r.Trial), DigestJSON(c.r); got != want {
			t.Errorf("rollout key of %+v = %s, want %s", c.r, got, want)
		}
		if got, want := k.grade(c.g.Rollout, c.g.Case, c.g.Judge), DigestJSON(c.g); got != want {
			t.Errorf("grade key of %+v = %s, want %s", c.g, got, want)
		}
	}
}

// BenchmarkEncodeFixture20000 encodes a plan whose fixture has 20,000 files,
// as its digest and its file are written, against encoding/json's encoding
// of the same plan (the same bytes): ratio is the hand-written one's time
// against encoding/json's, min/median/max over the iterations.
func BenchmarkEncodeFixture20000(b *testing.B) {
	p := &Plan{Format: 1, Cells: []Cell{{ID: "c/none/1", Case: "c", Arm: "none", Trial: 1}}}
	files := make(map[string]TreeEntry, 20000)
	for i := 0; i < 20000; i++ {
		files[fmt.Sprintf("d%03d/f%03d", i/100, i%100)] = TreeEntry{Digest: digest.FromString(strconv.Itoa(i)), Size: 4096}
	}
	p.Fixtures = map[string]Tree{"fx": {Digest: digest.FromString("fx"), Bytes: 20000 * 4096, Files: files}}
	var ratios []float64
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		got := p.Encode()
		hand := time.Since(t0)
		t0 = time.Now()
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		if err := enc.Encode(p); err != nil {
			b.Fatal(err)
		}
		reflected := time.Since(t0)
		if !bytes.Equal(got, want.Bytes()) {
			b.Fatal("the encodings differ")
		}
		ratios = append(ratios, hand.Seconds()/reflected.Seconds())
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "ratio-median")
	b.Logf("ratio (hand-written / encoding/json) min/median/max %.3f/%.3f/%.3f", ratios[0], ratios[len(ratios)/2], ratios[len(ratios)-1])
}
