package chrisbanes

import (
	"regexp"
	"sort"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"
)

// testCalls is {required?: RE, forbidden?: RE} for the test calls of an
// expectations.json, or nil when it has none (or one the schema refuses).
func testCalls(e cue.Value) ast.Expr {
	out := &ast.StructLit{}
	for _, f := range []string{"required_test_call", "forbidden_test_call"} {
		v := e.LookupPath(cue.MakePath(cue.Str(f)))
		if !v.Exists() {
			continue
		}
		var call struct {
			Name      string            `json:"name"`
			Arguments map[string]string `json:"arguments"`
		}
		if v.Decode(&call) != nil || call.Name == "" {
			continue // the schema says what is wrong with it
		}
		label := strings.TrimSuffix(f, "_test_call")
		out.Elts = append(out.Elts, &ast.Field{Label: ast.NewIdent(label),
			Value: &ast.BasicLit{Kind: token.STRING, Value: strconv.Quote(TestCallPattern(call.Name, call.Arguments)), ValuePos: v.Pos()}})
	}
	if len(out.Elts) == 0 {
		return nil
	}
	return out
}

// TestCallPattern is an RE2 expression that finds, after a Kotlin @Test
// function's header, a call of name whose parentheses hold every argument
// `NAME = VALUE` (VALUE followed by a word boundary), in any order, as their
// compose_case.py looks for one. RE2 has no recursion, so the argument
// list may nest parentheses two deep; and unlike theirs it reads comments
// and strings as code and does not stop at the test function's end.
func TestCallPattern(name string, args map[string]string) string {
	const inner = `(?:[^()]|\((?:[^()]|\([^()]*\))*\))*?`
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var alts []string
	permute(keys, func(order []string) {
		var b strings.Builder
		for _, k := range order {
			b.WriteString(inner + `\b` + regexp.QuoteMeta(k) + `\s*=\s*` + regexp.QuoteMeta(args[k]) + `\b`)
		}
		alts = append(alts, b.String())
	})
	head := `(?s)@Test\b.*?\bfun\s+\w+\s*\([^)]*\)[^{]*\{.*?\b` + regexp.QuoteMeta(name) + `\s*\(`
	if len(alts) == 0 {
		return head
	}
	return head + "(?:" + strings.Join(alts, "|") + ")"
}

// permute calls fn with every order of keys (one empty order for none).
func permute(keys []string, fn func([]string)) {
	if len(keys) <= 1 {
		fn(keys)
		return
	}
	for i := range keys {
		rest := append(append([]string{}, keys[:i]...), keys[i+1:]...)
		permute(rest, func(order []string) {
			fn(append([]string{keys[i]}, order...))
		})
	}
}
