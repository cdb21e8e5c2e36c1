package plan

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/skillgate/skillgate/pipeline/suite/suitetest"
)

// TestEncodeMatchesEncodingJSON: the hand-written plan encoding and cell keys
// give encoding/json's bytes and digests exactly, for names that need
// escaping too, so plan files and keys are what they always were.
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
