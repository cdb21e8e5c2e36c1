package suite

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"

	"github.com/skillgate/skillgate/pipeline/formats"
	"github.com/skillgate/skillgate/pipeline/suite/suitetest"
)

// lineReader is a format reader for the test: each line "ID: PROMPT" of the
// file named by formats.lines.file is a case, with positions in the file; a
// line without ": " is a syntax error at its position.
func lineReader(dir string, in cue.Value) (ast.Expr, error) {
	name, err := in.LookupPath(cue.ParsePath("file")).String()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, name)
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f := token.NewFile(path, -1, len(src))
	f.SetLinesForContent(src)
	list := &ast.ListLit{}
	off := 0
	for _, line := range strings.SplitAfter(string(src), "\n") {
		text := strings.TrimSuffix(line, "\n")
		if text != "" {
			id, prompt, ok := strings.Cut(text, ": ")
			if !ok {
				return nil, cueerrors.Newf(f.Pos(off, 0), "want ID: PROMPT, got %q", text)
			}
			var p ast.Expr = &ast.BasicLit{Kind: token.INT, Value: "3", ValuePos: f.Pos(off+len(id)+2, 0)}
			if prompt != "NUMBER" {
				p = &ast.BasicLit{Kind: token.STRING, Value: `"` + prompt + `"`, ValuePos: f.Pos(off+len(id)+2, 0)}
			}
			list.Elts = append(list.Elts, ast.NewStruct("id", ast.NewString(id), "prompt", p))
		}
		off += len(line)
	}
	return list, nil
}

// withLineFormat registers lineReader as the reader of formats.lines for one
// test.
func withLineFormat(t *testing.T) {
	orig := formats.All
	formats.All = append(append([]formats.Format(nil), orig...), formats.Format{Name: "lines", Field: "lines", Read: lineReader})
	t.Cleanup(func() { formats.All = orig })
}

func linesSuite(lines string) map[string]string {
	f := maps.Clone(suitetest.BaseSuite)
	f["suite/lines.cue"] = `package s

import "skillgate.dev/schema"

schema.#Suite & {
	formats: lines: file: "cases.txt"
	cases: {for c in formats.lines.read {(c.id): {prompt: c.prompt}}}
}
`
	f["suite/cases.txt"] = lines
	return f
}

func TestFormatReaderFillsCases(t *testing.T) {
	withLineFormat(t)
	root := suitetest.WriteSuite(t, linesSuite("b: Write b.\nc: Write c.\n"))
	s, err := LoadSuite(filepath.Join(root, "suite"))
	if err != nil {
		t.Fatalf("LoadSuite: %s", PrintError(err, root))
	}
	if s.Cases["c"].Prompt != "Write c." || strings.Join(s.Cases["c"].Sources, ",") != "cases.txt" {
		t.Errorf("case c = %q from %q, want \"Write c.\" from cases.txt", s.Cases["c"].Prompt, s.Cases["c"].Sources)
	}
	if len(s.Cases["a"].Sources) != 0 || strings.Join(s.Formats, ",") != "lines" {
		t.Errorf("case a sources %q, suite formats %q", s.Cases["a"].Sources, s.Formats)
	}
}

func TestFormatReaderErrorsAtTheUsersPosition(t *testing.T) {
	withLineFormat(t)
	for name, tc := range map[string]struct{ lines, want string }{
		"syntax": {"b: Write b.\nno colon here\n", "want ID: PROMPT, got \"no colon here\":\n    ./suite/cases.txt:2:1\n"},
		"schema": {"b: Write b.\nc: NUMBER\n", "./suite/cases.txt:2:4"},
	} {
		t.Run(name, func(t *testing.T) {
			root := suitetest.WriteSuite(t, linesSuite(tc.lines))
			_, err := LoadSuite(filepath.Join(root, "suite"))
			if err == nil {
				t.Fatal("LoadSuite passed a bad file")
			}
			msg := PrintError(err, root)
			if !strings.Contains(msg, tc.want) {
				t.Errorf("error does not say %q:\n%s", tc.want, msg)
			}
			if strings.Contains(msg, "undefined field: read") {
				t.Errorf("error has the follow-on of a failed read:\n%s", msg)
			}
		})
	}
}
