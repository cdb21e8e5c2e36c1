package skillopt

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/load"

	"github.com/skillgate/skillgate/schema"
)

// TestDefaultsMatchTheSchema: the SkillOpt defaults fillDefaults gives a case
// (they decide its digest) are #EvalCase's in the format package, so the two
// cannot drift apart.
func TestDefaultsMatchTheSchema(t *testing.T) {
	const line = `{"id": "c-1", "title": "A case", "skill": "composition", "kind": "routing", "split": "valid-unseen",
		"prompt": "Do the thing well.", "tags": ["t"], "rationale": "Because it matters.",
		"assertions": [{"kind": "contains", "value": "a"}, {"kind": "regex", "value": "b"}, {"kind": "command", "command": ["true"]}]}`
	root := filepath.Join(string(filepath.Separator), "skillopt-defaults")
	overlay := map[string]load.Source{
		filepath.Join(root, "cue.mod", "module.cue"): load.FromString("module: \"skillgate.local/defaults\"\nlanguage: version: \"" + schema.LanguageVersion + "\"\n"),
		filepath.Join(root, "c.cue"):                 load.FromString("package c\n\nimport \"" + schema.ImportPath + "/formats/skillopt\"\n\nc: skillopt.#EvalCase & " + line + "\n"),
	}
	for p, b := range schema.Files() {
		overlay[filepath.Join(root, "cue.mod", "pkg", filepath.FromSlash(schema.ImportPath), filepath.FromSlash(p))] = load.FromBytes(b)
	}
	insts := load.Instances([]string{"."}, &load.Config{Dir: root, ModuleRoot: root, Overlay: overlay})
	if insts[0].Err != nil {
		t.Fatal(insts[0].Err)
	}
	v := cuecontext.New().BuildInstance(insts[0]).LookupPath(cue.ParsePath("c"))
	b, err := v.MarshalJSON()
	if err != nil {
		t.Fatalf("evaluate #EvalCase: %v", err)
	}
	var fromSchema, fromGo EvalCase
	if err := json.Unmarshal(b, &fromSchema); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(line), &fromGo); err != nil {
		t.Fatal(err)
	}
	fromGo.fillDefaults()
	if !reflect.DeepEqual(fromGo, fromSchema) {
		t.Errorf("fillDefaults gives\n%+v\n#EvalCase gives\n%+v", fromGo, fromSchema)
	}
}
