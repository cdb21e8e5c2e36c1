package plan

import (
	"maps"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/suite/suitetest"
)

// withEmbeddedCase is the base suite with a case read by CUE from a JSON
// file under `formats`, as a format package reads another system's files.
func withEmbeddedCase(prompt string) map[string]string {
	f := maps.Clone(suitetest.BaseSuite)
	f["suite/extra.cue"] = `@extern(embed)

package s

import "skillgate.dev/schema"

schema.#Suite & {
	formats: local: tasks: _ @embed(file=extra.json)
	cases: {for t in formats.local.tasks {(t.id): {prompt: t.prompt, assert: [{answer: contains: t.must}]}}}
}
`
	f["suite/extra.json"] = `[{"id": "b", "prompt": "` + prompt + `", "must": "done"}]` + "\n"
	return f
}

func TestDiffNamesTheFileOfAnotherFormat(t *testing.T) {
	a := compileRoot(t, suitetest.WriteSuite(t, withEmbeddedCase("Write b.")))
	b := compileRoot(t, suitetest.WriteSuite(t, withEmbeddedCase("Write b again.")))
	if got := strings.Join(b.Formats, ","); got != "local" {
		t.Errorf("plan formats %q, want local", got)
	}
	for _, pc := range b.Cases {
		want := ""
		if pc.ID == "b" {
			want = "extra.json"
		}
		if got := strings.Join(pc.Sources, ","); got != want {
			t.Errorf("case %s sources %q, want %q", pc.ID, got, want)
		}
	}
	d := DiffPlans(a, b)
	for _, c := range d.Cells {
		if !strings.HasPrefix(c.ID, "b/") {
			if c.Class != DiffUnchanged {
				t.Errorf("%s: %s, want unchanged", c.ID, c.Class)
			}
			continue
		}
		if c.Class != DiffRollout || strings.Join(c.Reasons, "; ") != "case b (extra.json): prompt changed" {
			t.Errorf("%s: %s %q, want rollout [case b (extra.json): prompt changed]", c.ID, c.Class, c.Reasons)
		}
	}
}
