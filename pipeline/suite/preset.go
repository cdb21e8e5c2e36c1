package suite

import (
	"fmt"
	"path/filepath"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/load"

	"github.com/skillgate/skillgate/schema"
)

// PresetPolicy evaluates a policy preset of the embedded schema, such as
// "skillopt", so that commands without a suite (gate) still take every
// threshold from CUE, never from Go.
func PresetPolicy(name string) (Policy, error) {
	root := filepath.Join(string(filepath.Separator), "skillgate-preset")
	overlay := map[string]load.Source{
		filepath.Join(root, "cue.mod", "module.cue"): load.FromString(moduleFile),
		filepath.Join(root, "preset.cue"): load.FromString(fmt.Sprintf(
			"package preset\n\nimport \"%s/policies\"\n\npolicy: policies[%q]\n", schema.ImportPath, name)),
	}
	pkgDir := filepath.Join(root, "cue.mod", "pkg", filepath.FromSlash(schema.ImportPath))
	for p, b := range schema.Files() {
		overlay[filepath.Join(pkgDir, filepath.FromSlash(p))] = load.FromBytes(b)
	}
	insts := load.Instances([]string{"."}, &load.Config{Dir: root, ModuleRoot: root, Overlay: overlay})
	if insts[0].Err != nil {
		return Policy{}, fmt.Errorf("load policy preset %s: %w", name, insts[0].Err)
	}
	v := cuecontext.New().BuildInstance(insts[0]).LookupPath(cue.ParsePath("policy"))
	if err := v.Validate(cue.Concrete(true)); err != nil {
		return Policy{}, fmt.Errorf("evaluate policy preset %s: %w", name, err)
	}
	var p Policy
	b, err := v.MarshalJSON()
	if err == nil {
		err = decodeStrict(b, &p)
	}
	if err != nil {
		return Policy{}, fmt.Errorf("decode policy preset %s: %w", name, err)
	}
	return p, nil
}
