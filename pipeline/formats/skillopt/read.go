package skillopt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"
	cuejson "cuelang.org/go/encoding/json"
)

// Fields of formats.skillopt, the suite's lines that name the user's
// workspaces.
var (
	fieldWorkspace = cue.ParsePath("workspace")
	fieldRelease   = cue.ParsePath("release")
	fieldFixtures  = cue.ParsePath("fixtures")
	fieldRead      = cue.ParsePath("read")
)

// exported is one workspace as read: where it is, its manifest, its cases.
type exported struct {
	rel      string // suite-relative folder
	abs      string
	manifest ast.Expr
	ws       *Workspace // nil when workspace.json does not decode
	cases    []ast.Expr
	invalid  []ast.Expr // lines that do not decode as a case, for the schema to say why
	pos      token.Pos  // the suite field that names the workspace
}

// Read reads the exported SkillOpt workspaces formats.skillopt names (its
// `workspace`, and the `release` workspace of a release report), verifies
// each the way SkillOpt's verifyWorkspace does (per-file immutable
// digests, skill-tree revisions, every case digest, the case-set digest,
// the splits of the export's mode), and returns the data the format
// package maps to cases, skills and arms, to be filled at
// formats.skillopt.read. Every value carries its position in the user's
// workspace.json or .jsonl line, so a schema conflict names that file; a
// failed check is an error naming the file and the value it is about.
func Read(dir string, in cue.Value) (ast.Expr, error) {
	var errs, syntax cueerrors.Error
	fixtures := ""
	if v := in.LookupPath(fieldFixtures); v.Exists() {
		fixtures, _ = v.String()
	}
	var list []*exported
	for _, f := range []cue.Path{fieldWorkspace, fieldRelease} {
		v := in.LookupPath(f)
		if !v.Exists() {
			continue
		}
		rel, err := v.String()
		if err != nil {
			continue // the schema says what is wrong with it
		}
		e, serrs, werrs := readWorkspace(dir, rel, v.Pos(), fixtures)
		syntax = cueerrors.Append(syntax, serrs)
		errs = cueerrors.Append(errs, werrs)
		if e != nil {
			list = append(list, e)
		}
	}
	if syntax != nil {
		return nil, syntax
	}
	if len(list) == 2 {
		errs = cueerrors.Append(errs, checkPair(list[0], list[1]))
	}
	var elems []ast.Expr
	for _, e := range list {
		elems = append(elems, ast.NewStruct(
			"dir", positioned(ast.NewString(e.rel), e.pos),
			"manifest", e.manifest,
			"cases", ast.NewList(e.cases...),
			"invalid", ast.NewList(e.invalid...),
		))
	}
	out := ast.NewStruct("workspaces", ast.NewList(elems...))
	// What the format's schema refuses is said first, at its place in the
	// user's file: an edited line is a wrong value before it is a changed
	// digest.
	filled := in.FillPath(fieldRead, in.Context().BuildExpr(out))
	if err := filled.Validate(cue.Concrete(true)); err != nil {
		return nil, cueerrors.Promote(err, "")
	}
	if errs != nil {
		return nil, errs
	}
	return out, nil
}

// checkPair refuses two workspaces that cannot make one release report:
// SkillOpt's release report takes exactly one evaluate and one release
// workspace of the same target, optimization unit, target reference,
// companions and skill revisions.
func checkPair(ev, rel *exported) cueerrors.Error {
	if ev.ws == nil || rel.ws == nil {
		return nil
	}
	a, b := ev.ws, rel.ws
	var why []string
	if a.Mode != ModeEvaluate {
		why = append(why, fmt.Sprintf("workspace %s is an %s workspace, not an evaluate one", ev.rel, a.Mode))
	}
	if b.Mode != ModeRelease {
		why = append(why, fmt.Sprintf("release %s is an %s workspace, not a release one", rel.rel, b.Mode))
	}
	if a.TargetSkill != b.TargetSkill {
		why = append(why, fmt.Sprintf("targetSkill %s differs from %s", a.TargetSkill, b.TargetSkill))
	}
	if a.OptimizationUnit != b.OptimizationUnit {
		why = append(why, fmt.Sprintf("optimizationUnit %s differs from %s", a.OptimizationUnit, b.OptimizationUnit))
	}
	if a.TargetReference != b.TargetReference {
		why = append(why, fmt.Sprintf("targetReference %q differs from %q", a.TargetReference, b.TargetReference))
	}
	ca, cb := slices.Sorted(slices.Values(a.CompanionSkills)), slices.Sorted(slices.Values(b.CompanionSkills))
	if !slices.Equal(ca, cb) {
		why = append(why, fmt.Sprintf("companionSkills %v differ from %v", ca, cb))
	}
	for _, s := range a.Skills() {
		if a.SkillRevisions[s] != b.SkillRevisions[s] {
			why = append(why, fmt.Sprintf("skill %s's revision %s differs from %s", s, short(a.SkillRevisions[s]), short(b.SkillRevisions[s])))
		}
	}
	var errs cueerrors.Error
	for _, w := range why {
		errs = cueerrors.Append(errs, cueerrors.Newf(rel.pos, "pair workspaces %s and %s: %s: a release report needs one evaluate and one release workspace of the same identities", ev.rel, rel.rel, w))
	}
	return errs
}

// readWorkspace reads and verifies one workspace folder.
func readWorkspace(dir, rel string, pos token.Pos, fixtures string) (e *exported, syntax, errs cueerrors.Error) {
	abs := filepath.Join(dir, filepath.FromSlash(rel))
	mpath := filepath.Join(abs, FileManifest)
	src, err := os.ReadFile(mpath)
	if err != nil {
		return nil, cueerrors.Newf(pos, "read workspace %s: %v", rel, unwrapPath(err)), nil
	}
	manifest, ws, _, merrs := parseManifest(mpath, src)
	if merrs != nil {
		return nil, cueerrors.Promote(merrs, "read workspace "+rel), nil
	}
	e = &exported{rel: rel, abs: abs, manifest: manifest, ws: ws, pos: pos}
	var probs []problem
	if e.ws != nil {
		probs = append(probs, checkManifest(e.ws)...)
		probs = append(probs, verifyFiles(abs, e.ws)...)
		probs = append(probs, verifySkills(abs, e.ws)...)
	}
	lines := map[string]*token.File{}
	cases, invalid, cprobs, syntax, errs := readCases(e, fixtures, lines)
	e.cases, e.invalid = cases, invalid
	probs = append(probs, cprobs...)
	for _, p := range probs {
		at := pos
		if p.at.pos.IsValid() {
			at = p.at.pos
		} else if p.at.manifest != nil {
			if n := lookup(manifest, p.at.manifest); n != nil {
				at = n.Pos()
			}
		} else if f := lines[p.file]; f != nil && p.at.line > 0 {
			at = f.Pos(p.at.offset, token.NoRelPos)
		}
		errs = cueerrors.Append(errs, cueerrors.Newf(at, "verify workspace %s: %s", rel, p.msg))
	}
	return e, syntax, errs
}

// readCases reads every data/*.jsonl line of a workspace and checks the
// exact case set against the manifest.
func readCases(e *exported, fixtures string, files map[string]*token.File) (cases, invalid []ast.Expr, probs []problem, syntax, errs cueerrors.Error) {
	dataDir := filepath.Join(e.abs, DirData)
	names, err := regularFiles(dataDir)
	if err != nil {
		return nil, nil, []problem{{FileManifest, locator{manifest: []any{"cases"}}, fmt.Sprintf("the data folder cannot be read: %v", unwrapPath(err))}}, nil, nil
	}
	want := map[string]string{}
	if e.ws != nil {
		for _, c := range e.ws.Cases {
			want[c.ID] = c.Digest
		}
	}
	var observed []CaseRecord
	seen := map[string]bool{}
	caseProblem := false
	for _, name := range names {
		if !strings.HasSuffix(name, ".jsonl") {
			continue
		}
		file := DirData + "/" + name
		abs := filepath.Join(dataDir, filepath.FromSlash(name))
		src, err := os.ReadFile(abs)
		if err != nil {
			syntax = cueerrors.Append(syntax, cueerrors.Newf(e.pos, "read workspace %s: %s: %v", e.rel, file, unwrapPath(err)))
			continue
		}
		tf := token.NewFile(abs, -1, len(src))
		tf.SetLinesForContent(src)
		files[file] = tf
		split := strings.TrimSuffix(path.Base(name), ".jsonl")
		if e.ws != nil && isSplit(split) && !slices.Contains(ModeSplits[e.ws.Mode], split) {
			probs = append(probs, problem{file, locator{line: 1, pos: tf.Pos(0, token.NoRelPos)}, fmt.Sprintf("%s holds split %s, which an %s workspace does not (%s): SkillOpt never merges exports", file, split, e.ws.Mode, strings.Join(ModeSplits[e.ws.Mode], ", "))})
			caseProblem = true
		}
		start := 0
		for n := 1; start < len(src); n++ {
			end := bytes.IndexByte(src[start:], '\n')
			if end < 0 {
				end = len(src) - start
			}
			line := bytes.TrimSuffix(src[start:start+end], []byte("\r"))
			offset := start
			start += end + 1
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var expr ast.Expr
			at := func(field string, msg string, args ...any) {
				loc := locator{line: n, offset: offset}
				if field != "" {
					loc.pos = lookup(expr, []any{field}).Pos()
				}
				probs = append(probs, problem{file, loc, fmt.Sprintf(msg, args...)})
			}
			// Parse the line alone, as if the lines before it were empty,
			// so its positions are its own in the file.
			pad := append(bytes.Repeat([]byte("\n"), n-1), line...)
			expr, err = cuejson.Extract(abs, pad)
			if err != nil {
				syntax = cueerrors.Append(syntax, cueerrors.Promote(err, fmt.Sprintf("read workspace %s: %s line %d", e.rel, file, n)))
				continue
			}
			var c EvalCase
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&c); err != nil {
				// The format's schema says, with positions, what is wrong.
				invalid = append(invalid, expr)
				caseProblem = true
				continue
			}
			digest, err := CaseDigest(line)
			if err != nil {
				at("", "case cannot be digested: %v", err)
				caseProblem = true
				continue
			}
			if e.ws != nil {
				if !slices.Contains(ModeSplits[e.ws.Mode], c.Split) {
					at("split", "case %s has split %s, which an %s workspace does not hold (%s): SkillOpt never merges exports", c.ID, c.Split, e.ws.Mode, strings.Join(ModeSplits[e.ws.Mode], ", "))
					caseProblem = true
				} else if isSplit(split) && split != c.Split {
					at("split", "case %s has split %s but is in %s", c.ID, c.Split, file)
					caseProblem = true
				}
			}
			switch w, ok := want[c.ID]; {
			case seen[c.ID]:
				at("id", "case %s appears more than once", c.ID)
				caseProblem = true
				continue
			case e.ws != nil && !ok:
				at("id", "case %s is not in workspace.json's case set", c.ID)
				caseProblem = true
			case e.ws != nil && w != digest:
				at("", "case %s changed: its digest is %s, workspace.json records %s; export the workspace again", c.ID, short(digest), short(w))
				caseProblem = true
			}
			seen[c.ID] = true
			observed = append(observed, CaseRecord{ID: c.ID, Digest: digest})
			translated, terrs := translate(&c, expr, fixtures)
			if terrs != nil {
				errs = cueerrors.Append(errs, terrs)
				continue
			}
			cases = append(cases, caseEntry(file, n, digest, expr, translated, tf.Pos(offset, token.NoRelPos)))
		}
	}
	if e.ws != nil {
		for i, c := range e.ws.Cases {
			if !seen[c.ID] {
				probs = append(probs, problem{FileManifest, locator{manifest: []any{"cases", i, "id"}}, fmt.Sprintf("case %s is missing from %s", c.ID, DirData)})
				caseProblem = true
			}
		}
		if !caseProblem && CaseSetDigest(observed) != e.ws.CaseSetDigest {
			probs = append(probs, problem{FileManifest, locator{manifest: []any{"caseSetDigest"}}, "caseSetDigest does not match the exported case data"})
		}
	}
	return cases, invalid, probs, syntax, errs
}

// isSplit reports whether s names a SkillOpt split.
func isSplit(s string) bool {
	for _, list := range ModeSplits {
		if slices.Contains(list, s) {
			return true
		}
	}
	return false
}

// caseEntry is one read case: where it is, its digest, its value, and the
// skillgate check each of its assertions becomes.
func caseEntry(file string, line int, digest string, expr ast.Expr, translated []ast.Expr, pos token.Pos) ast.Expr {
	fields := []any{
		"file", positioned(ast.NewString(file), pos),
		"line", positioned(ast.NewLit(token.INT, fmt.Sprint(line)), pos),
		"case", expr,
	}
	if translated != nil {
		fields = append(fields,
			"digest", positioned(ast.NewString(digest), pos),
			"checks", ast.NewList(translated...))
	}
	return ast.NewStruct(fields...)
}

// positioned sets a computed literal's position to one in the user's file.
func positioned[T ast.Node](n T, pos token.Pos) T {
	ast.SetPos(n, pos)
	return n
}

// lookup finds the node at a path of labels and indexes in a JSON value.
func lookup(n ast.Node, steps []any) ast.Node {
	for _, s := range steps {
		switch s := s.(type) {
		case string:
			st, ok := n.(*ast.StructLit)
			if !ok {
				return n
			}
			var next ast.Node
			for _, d := range st.Elts {
				if f, ok := d.(*ast.Field); ok {
					if name, _, _ := ast.LabelName(f.Label); name == s {
						next = f.Value
						break
					}
				}
			}
			if next == nil {
				return n
			}
			n = next
		case int:
			l, ok := n.(*ast.ListLit)
			if !ok || s >= len(l.Elts) {
				return n
			}
			n = l.Elts[s]
		}
	}
	return n
}
