package suite

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"cuelang.org/go/cue"

	"github.com/skillgate/skillgate/pipeline/suite/suitetest"
)

func init() {
	// Every suite this package's tests load checks the lookup decoder
	// against JSON decoding.
	verifyLookupDecode = true
}

// TestDecodeByLookupMatchesJSON decodes cases of every shape by lookup, by
// their literals where the files give them, and holds each to the case
// decoded through JSON.
func TestDecodeByLookupMatchesJSON(t *testing.T) {
	files := suitetest.Edit(t, "suite/cases.cue", "cases: a: {", `cases: b: {
		description: "Every field."
		prompt:      "Go on."
		seed: [{role: "user", content: "hi"}, {role: "assistant", content: "hello"}]
		temperature: 0.5
		effort:      "low"
		fixture:     "fixtures/repo"
		overlay:     "fixtures/repo"
		targets: ["cl"]
		calibration: true
		replies: ["more"]
		environment: "node"
		setup: {run: "true", shell: "bash", timeout: "1m"}
		kind:   "safety"
		tags: ["x", "y"]
		weight: 2
		routing: skills: forbidden: ["other"]
		assert: [
			{name: "n", file: "A", exists: true},
			{file: "B", unchanged: true},
			{file: "C", matches: "^a", notMatches: "b$", notContains: "c"},
			{answer: {contains: "d", matches: "e"}, messages: "all"},
			{code: {notContains: "f"}},
			{run: "true", timeout: "10s", shell: "bash", environment: "node"},
		]
		rubric: ["one", "two"]
		rubricPass: 0.5
	}
	cases: d: _base & {prompt: "By reference."}
	_base: {split: "validation", assert: [{run: "true"}]}
	cases: a: {`)
	files["suite/more.cue"] = "package s\n\ncases: a: tags: [\"more\"]\ncases: b: writes: []\n"
	root := suitetest.WriteSuite(t, files)
	dir := filepath.Join(root, "suite")
	v, insts, _, err := buildSuite(dir, root, nil)
	if err != nil {
		t.Fatal(PrintError(err, root))
	}
	it, err := v.LookupPath(pathCases).Fields(cue.Patterns(true))
	if err != nil {
		t.Fatal(err)
	}
	lits, ok := caseLiterals(insts[0].Files)
	if !ok {
		t.Fatal("caseLiterals found cases set other than by literals")
	}
	var sh *shape
	var ids []string
	for it.Next() {
		if it.Selector().ConstraintType() == cue.PatternConstraint {
			if !mirrored(it.Value(), caseType) {
				t.Fatal("#Case has a field Go lacks")
			}
			if sh = shapeOf(it.Value(), caseType); sh == nil {
				t.Fatal("no shape for #Case")
			}
			continue
		}
		id := it.Selector().Unquoted()
		ids = append(ids, id)
		if wantLits := id != "d"; (lits[id] != nil) != wantLits {
			t.Errorf("case %s: literals found = %v, want %v", id, lits[id] != nil, wantLits)
		}
		got, err := decodeCase(it.Value(), lits[id], sh, nil)
		if err != nil {
			t.Fatalf("case %s: %v", id, err)
		}
		b, _ := it.Value().MarshalJSON()
		var want Case
		if err := decodeStrict(b, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			t.Errorf("case %s by lookup:\n%s\nthrough JSON:\n%s", id, g, w)
		}
	}
	if slices.Sort(ids); strings.Join(ids, " ") != "a b d" {
		t.Errorf("cases = %v", ids)
	}
}

// TestCaseLiteralsRefusesOtherWays: a pattern over cases, or cases set by
// a reference, leaves no case to be told from its literals alone.
func TestCaseLiteralsRefusesOtherWays(t *testing.T) {
	for _, extra := range []string{
		"cases: [string]: tags: [\"all\"]\n",
		"cases: _more\n_more: {}\n",
		"for k, _ in {x: 1} { cases: (k): prompt: \"p\" }\n",
	} {
		files := suitetest.Edit(t, "suite/cases.cue", "import \"skillgate.dev/schema\"\n", "import \"skillgate.dev/schema\"\n\n"+extra)
		root := suitetest.WriteSuite(t, files)
		_, insts, _, _ := buildSuite(filepath.Join(root, "suite"), root, nil)
		if insts == nil {
			t.Fatalf("%q: the suite did not load", extra)
		}
		if _, ok := caseLiterals(insts[0].Files); ok {
			t.Errorf("%q: caseLiterals ok, want refused", extra)
		}
	}
}
