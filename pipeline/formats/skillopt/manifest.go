package skillopt

import (
	"encoding/json"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"cuelang.org/go/cue/ast"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"
	cuejson "cuelang.org/go/encoding/json"
)

// manifestField is one field of workspace.json: its name as SkillOpt's
// exporter writes it, the word the benchmark contract uses for it when
// that differs, and whether a manifest may leave it out.
type manifestField struct {
	name, contract string
	optional       bool
}

// manifestFields are workspace.json's fields in the exporter's order. The
// contract speaks of the target and its companions; a manifest written in
// those words is read as the exporter's.
var manifestFields = []manifestField{
	{name: "schemaVersion"},
	{name: "mode"},
	{name: "optimizationUnit"},
	{name: "targetSkill", contract: "target"},
	{name: "targetReference", optional: true},
	{name: "companionSkills", contract: "companions"},
	{name: "mutablePaths"},
	{name: "immutablePaths"},
	{name: "immutableDigests"},
	{name: "skillRevisions"},
	{name: "cases"},
	{name: "caseSetDigest"},
}

// expectedFields lists the fields for a message: each required one, its
// contract word beside it, the optional ones marked.
func expectedFields() string {
	var parts []string
	for _, f := range manifestFields {
		s := f.name
		if f.contract != "" {
			s += " (or " + f.contract + ")"
		}
		if f.optional {
			s += " (optional)"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// parseManifest reads workspace.json's bytes (from the file at p) into its
// syntax, with the contract's words renamed to the exporter's field names
// at their own positions, and the manifest they decode to. An unknown,
// repeated or missing field is an error at its place (a missing one at
// the manifest's opening brace) listing the fields expected; then the
// manifest is nil, and nothing else is said of it. A value SkillOpt's
// manifest refuses leaves it nil too, with bad saying why (the format's
// schema says where).
func parseManifest(p string, src []byte) (expr ast.Expr, w *Workspace, bad error, errs cueerrors.Error) {
	expr, err := cuejson.Extract(p, src)
	if err != nil {
		return nil, nil, nil, cueerrors.Promote(err, "")
	}
	st, ok := expr.(*ast.StructLit)
	if !ok {
		return expr, nil, nil, cueerrors.Newf(expr.Pos(), "%s is not a JSON object: SkillOpt's workspace.json has %s", FileManifest, expectedFields())
	}
	seen := map[string]token.Pos{}
	renamed := map[string]json.RawMessage{}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(src, &raw); err != nil {
		return expr, nil, nil, cueerrors.Newf(expr.Pos(), "read %s: %v", FileManifest, err)
	}
	for _, d := range st.Elts {
		f, ok := d.(*ast.Field)
		if !ok {
			continue
		}
		label, _, _ := ast.LabelName(f.Label)
		name := ""
		for _, m := range manifestFields {
			if label == m.name || label == m.contract && m.contract != "" {
				name = m.name
			}
		}
		switch {
		case name == "":
			errs = cueerrors.Append(errs, cueerrors.Newf(f.Label.Pos(), "%s: unknown field %q: SkillOpt's workspace.json has %s", FileManifest, label, expectedFields()))
			continue
		case seen[name].IsValid():
			errs = cueerrors.Append(errs, cueerrors.Newf(f.Label.Pos(), "%s: field %s is given twice (%q here)", FileManifest, name, label))
			continue
		}
		seen[name] = f.Label.Pos()
		if label != name {
			f.Label = ast.NewString(name)
			ast.SetPos(f.Label, seen[name])
		}
		renamed[name] = raw[label]
	}
	var missing []string
	for _, m := range manifestFields {
		if errs != nil {
			break // a misspelt field is one mistake: not also a missing one
		}
		if !m.optional && !seen[m.name].IsValid() {
			missing = append(missing, m.name)
		}
	}
	if len(missing) > 0 {
		errs = cueerrors.Append(errs, cueerrors.Newf(st.Lbrace, "%s: missing field %s: SkillOpt's workspace.json has %s", FileManifest, strings.Join(missing, ", "), expectedFields()))
	}
	if errs != nil {
		return expr, nil, nil, errs
	}
	b, err := json.Marshal(renamed)
	if err != nil {
		return expr, nil, nil, cueerrors.Newf(expr.Pos(), "read %s: %v", FileManifest, err)
	}
	w = &Workspace{}
	if bad := decodeManifest(b, w); bad != nil {
		return expr, nil, bad, nil
	}
	return expr, w, nil, nil
}

// skillID is SkillOpt's skill identifier, checked before a name becomes
// part of a path.
var skillID = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// insidePath says why a workspace-relative path from workspace.json may
// not be read below root, or "" when it may: it is relative, clean, climbs
// nowhere, and no symlink on the way leads out of the workspace. A
// manifest never makes skillgate read a file outside the export.
func insidePath(root, p string) string {
	switch {
	case p == "" || strings.ContainsRune(p, '\\') || path.IsAbs(p) || filepath.IsAbs(p):
		return "is not a workspace-relative path"
	case path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") || p == ".":
		return "leaves the workspace (paths in workspace.json are clean and relative to it)"
	}
	real, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(p)))
	if err != nil {
		return "" // missing: the caller says so
	}
	rootReal, err := filepath.EvalSymlinks(root)
	if err != nil {
		return ""
	}
	if rel, err := filepath.Rel(rootReal, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "resolves through a symlink outside the workspace"
	}
	return ""
}
