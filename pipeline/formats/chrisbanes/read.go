package chrisbanes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"
)

// typedValidators are their validators whose expectations.json skillgate
// checks itself (the format package's _typedValidators).
var typedValidators = []string{"@validators/compose_case.py", "@validators/text_case.py"}

// joined are the expectations.json keys their validators check against
// the subject files joined, which skillgate's file checks (one file each)
// express only for a single subject file.
var joined = []string{"must_contain", "must_contain_any", "minimum_occurrences", "must_match", "required_test_call", "markdown_bullets"}

// Read reads, for the formats.chrisbanes value in of the suite in folder
// dir, the case folders holding an overlay/ folder and the RE2 form of
// every Python pattern of the expectations, as the CUE value
// {prompts: {...}, overlays: [...], patterns: {...}, testCalls: {...}}
// the format package reads at formats.chrisbanes.read. A pattern RE2
// cannot express and an expectation skillgate cannot check are errors at
// their position in the user's file.
func Read(dir string, in cue.Value) (ast.Expr, error) {
	var errs cueerrors.Error
	var overlays []ast.Expr
	prompts := &ast.StructLit{}
	pats := &patternSet{fields: map[string]*ast.Field{}}
	tests := &ast.StructLit{}

	each(in.LookupPath(cue.ParsePath("cases")), func(key string, c cue.Value) {
		caseDir := strings.TrimSuffix(key, "/case.json")
		prompt, err := readPrompt(dir, caseDir)
		var cerr cueerrors.Error
		switch {
		case errors.As(err, &cerr):
			errs = cueerrors.Append(errs, cerr)
			prompts.Elts = append(prompts.Elts, &ast.Field{Label: ast.NewString(caseDir), Value: standIn(userPos(c))})
		case err != nil:
			errs = cueerrors.Append(errs, cueerrors.Newf(userPos(c), "%s: %v", key, err))
			prompts.Elts = append(prompts.Elts, &ast.Field{Label: ast.NewString(caseDir), Value: standIn(userPos(c))})
		default:
			prompts.Elts = append(prompts.Elts, &ast.Field{Label: ast.NewString(caseDir), Value: prompt})
		}
		if st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(caseDir), "overlay")); err == nil && st.IsDir() {
			overlays = append(overlays, &ast.BasicLit{Kind: token.STRING, Value: strconv.Quote(caseDir), ValuePos: c.Pos()})
		}
		eachElem(c.LookupPath(cue.ParsePath("validators")), func(v cue.Value) {
			var argv []string
			if v.LookupPath(cue.ParsePath("argv")).Decode(&argv) != nil || len(argv) != 3 || !slices.Contains(typedValidators, argv[1]) {
				return
			}
			exp := caseDir + "/expectations.json"
			if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(exp))); err != nil {
				errs = cueerrors.Append(errs, cueerrors.Newf(userPos(v), "%s: %s reads %s, which is missing: %v", key, argv[1], exp, unwrap(err)))
			}
		})
		for _, f := range []string{"required_command_patterns", "forbidden_command_patterns"} {
			eachElem(c.LookupPath(cue.MakePath(cue.Str(f))), func(v cue.Value) {
				errs = cueerrors.Append(errs, pats.add(key, f, v))
			})
		}
	})
	each(in.LookupPath(cue.ParsePath("expectations")), func(key string, e cue.Value) {
		if files := e.LookupPath(cue.ParsePath("files")); count(files) > 1 {
			for _, f := range joined {
				if v := e.LookupPath(cue.MakePath(cue.Str(f))); count(v) > 0 {
					errs = cueerrors.Append(errs, cueerrors.Newf(userPos(v), "%s: %s is checked against the %d files joined, which skillgate's file checks (one file each) cannot express: list one file, or use must_contain_by_file", key, f, count(files)))
				}
			}
		}
		for _, f := range []string{"must_match", "must_not_match"} {
			eachElem(e.LookupPath(cue.MakePath(cue.Str(f))), func(v cue.Value) {
				errs = cueerrors.Append(errs, pats.add(key, f, v))
			})
		}
		errs = cueerrors.Append(errs, bulletPatterns(pats, key, "markdown_bullets", e.LookupPath(cue.ParsePath("markdown_bullets"))))
		eachElem(e.LookupPath(cue.ParsePath("file_globs")), func(g cue.Value) {
			for _, f := range []string{"must_match", "must_not_match"} {
				eachElem(g.LookupPath(cue.MakePath(cue.Str(f))), func(v cue.Value) {
					errs = cueerrors.Append(errs, pats.add(key, "file_globs: "+f, v))
				})
			}
			errs = cueerrors.Append(errs, bulletPatterns(pats, key, "file_globs: markdown_bullets", g.LookupPath(cue.ParsePath("markdown_bullets"))))
		})
		if calls := testCalls(e); calls != nil {
			tests.Elts = append(tests.Elts, &ast.Field{Label: ast.NewString(key), Value: calls})
		}
	})
	// With errors the read is still returned, stand-ins in place of what
	// could not be read, so each mistake is reported once, where it is,
	// and not again by every case that reads its value.
	read := &ast.StructLit{Elts: []ast.Decl{
		&ast.Field{Label: ast.NewIdent("prompts"), Value: prompts},
		&ast.Field{Label: ast.NewIdent("overlays"), Value: &ast.ListLit{Elts: overlays}},
		&ast.Field{Label: ast.NewIdent("patterns"), Value: pats.lit()},
		&ast.Field{Label: ast.NewIdent("testCalls"), Value: tests},
	}}
	if errs != nil {
		return read, errs
	}
	return read, nil
}

// bulletPatterns translates the text and links patterns of the
// markdown_bullets expectation b (field f of the file key).
func bulletPatterns(ps *patternSet, key, f string, b cue.Value) cueerrors.Error {
	var errs cueerrors.Error
	eachElem(b.LookupPath(cue.ParsePath("required")), func(r cue.Value) {
		for _, sub := range []string{"text", "links"} {
			eachElem(r.LookupPath(cue.MakePath(cue.Str(sub))), func(v cue.Value) {
				errs = cueerrors.Append(errs, ps.add(key, f+" "+sub, v))
			})
		}
	})
	return errs
}

// standIn is the value of a prompt that could not be read, at the case's
// position: the error says why, and the suite never runs with it.
func standIn(pos token.Pos) ast.Expr {
	return &ast.BasicLit{Kind: token.STRING, Value: strconv.Quote("(prompt.md could not be read)"), ValuePos: pos}
}

// patternSet collects the RE2 form of every Python pattern, once each, in
// the order first seen, positioned where it is written.
type patternSet struct {
	fields map[string]*ast.Field
	order  []string
}

// add translates the pattern v of field f of the file key; a pattern RE2
// cannot express is an error at its position.
func (ps *patternSet) add(key, f string, v cue.Value) cueerrors.Error {
	p, err := v.String()
	if err != nil {
		return nil // the schema says what is wrong with it
	}
	re, terr := Translate(p)
	var bad cueerrors.Error
	if terr != nil {
		bad = cueerrors.Newf(v.Pos(), "%s: %s: Python pattern %q: %v", key, f, p, terr)
		re = "(?:)" // stands in, so nothing else reports the same pattern
	}
	if _, seen := ps.fields[p]; !seen {
		ps.order = append(ps.order, p)
		ps.fields[p] = &ast.Field{
			Label: &ast.BasicLit{Kind: token.STRING, Value: strconv.Quote(p), ValuePos: v.Pos()},
			Value: &ast.BasicLit{Kind: token.STRING, Value: strconv.Quote(re), ValuePos: v.Pos()},
		}
	}
	return bad
}

func (ps *patternSet) lit() *ast.StructLit {
	out := &ast.StructLit{}
	for _, p := range ps.order {
		out.Elts = append(out.Elts, ps.fields[p])
	}
	return out
}

// readPrompt reads a case folder's prompt.md as a string positioned in the
// file, so a plan diff names it and an empty one is refused there.
func readPrompt(dir, caseDir string) (ast.Expr, error) {
	path := filepath.Join(dir, filepath.FromSlash(caseDir), "prompt.md")
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("a case needs its prompt.md: read %s: %w", caseDir+"/prompt.md", unwrap(err))
	}
	f := token.NewFile(path, -1, len(src))
	f.SetLinesForContent(src)
	if strings.TrimSpace(string(src)) == "" {
		return nil, cueerrors.Newf(f.Pos(0, 0), "prompt.md is empty")
	}
	return &ast.BasicLit{Kind: token.STRING, Value: literal(string(src)), ValuePos: f.Pos(0, 0)}, nil
}

// literal is s as a CUE string literal.
func literal(s string) string {
	return ast.NewString(s).Value
}

// each calls fn with every regular field of the struct v, in order.
func each(v cue.Value, fn func(key string, v cue.Value)) {
	it, err := v.Fields()
	if err != nil {
		return
	}
	for it.Next() {
		fn(it.Selector().Unquoted(), it.Value())
	}
}

// eachElem calls fn with every element of the list v.
func eachElem(v cue.Value, fn func(v cue.Value)) {
	it, err := v.List()
	if err != nil {
		return
	}
	for it.Next() {
		fn(it.Value())
	}
}

// count is the number of elements of a list, or of fields of a struct.
func count(v cue.Value) int {
	n := 0
	if it, err := v.List(); err == nil {
		for it.Next() {
			n++
		}
		return n
	}
	each(v, func(string, cue.Value) { n++ })
	return n
}

// userPos is where v is written in the user's file rather than in the
// format package: a struct or list value is positioned at the schema that
// shapes it, so its first element's position stands for it.
func userPos(v cue.Value) token.Pos {
	if !strings.HasSuffix(v.Pos().Filename(), ".cue") {
		return v.Pos()
	}
	var first cue.Value
	found := false
	if it, err := v.List(); err == nil && it.Next() {
		first, found = it.Value(), true
	} else if it, err := v.Fields(); err == nil && it.Next() {
		first, found = it.Value(), true
	}
	if found {
		if p := userPos(first); !strings.HasSuffix(p.Filename(), ".cue") {
			return p
		}
	}
	return v.Pos()
}

// unwrap is a path error's cause alone: the message names the file itself.
func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
