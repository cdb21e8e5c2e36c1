package benchmarkskill

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"github.com/rogpeppe/go-internal/txtar"
)

// tree writes a txtar archive's files into a fresh folder.
func tree(t *testing.T, archive string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range txtar.Parse([]byte(archive)).Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// input is formats.benchmarkSkill as the suite gives it.
func input(t *testing.T, src string) cue.Value {
	t.Helper()
	v := cuecontext.New().CompileString(src, cue.Filename("suite.cue"))
	if v.Err() != nil {
		t.Fatal(v.Err())
	}
	return v
}

// read runs Read and compiles what it returns.
func read(t *testing.T, dir, in string) (cue.Value, error) {
	t.Helper()
	x, err := Read(dir, input(t, in))
	if err != nil {
		return cue.Value{}, err
	}
	v := cuecontext.New().BuildExpr(x)
	if v.Err() != nil {
		t.Fatalf("build read value: %v", v.Err())
	}
	return v, nil
}

const goodTree = `
-- skills/greet/SKILL.md --
---
name: greet
description: Greets well.
---
Say hello.
-- skills/tools/review/SKILL.md --
---
name: review
description: Reviews.
---
Review.
-- skills/untested/SKILL.md --
---
name: untested
description: Has no tests.
---
-- tests/skills/greet/basic/case.md --
---
description: "greets the user"
---
## Prompt
Say hello to Ada.

Politely.

## Soft criteria
- The greeting names Ada.
- It is polite,
  and short.
-- tests/skills/greet/basic/fixture/names.txt --
Ada
-- tests/skills/tools/review/conversation/case.md --
---
description: follows up on a review
---
## Prompt
Now write it down.

## Seed
**User:** Review ` + "`greet`" + `.
**Assistant:** Which part?
It has two.
**User:** The flags.

## Hard assertions
` + "```bash" + `
test -f "$WORLD/review.md"
grep -q flags "$OUTPUT"
` + "```" + `

## Soft criteria
1. The review is written to review.md.
-- tests/.reports/greet.html --
not a case
-- tests/.reports/skills/greet/copy/case.md --
a report folder is never read
`

func TestReadTree(t *testing.T) {
	dir := tree(t, goodTree)
	v, err := read(t, dir, `root: "."`)
	if err != nil {
		t.Fatal(cueerrors.Details(err, nil))
	}
	want := map[string]string{
		`skills.greet.path`:                                 "skills/greet",
		`skills.greet.tests`:                                "tests/skills/greet",
		`skills.review.path`:                                "skills/tools/review",
		`cases."greet.basic".skill`:                         "greet",
		`cases."greet.basic".file`:                          "tests/skills/greet/basic/case.md",
		`cases."greet.basic".description`:                   "greets the user",
		`cases."greet.basic".prompt`:                        "Say hello to Ada.\n\nPolitely.",
		`cases."greet.basic".softCriteria[1]`:               "It is polite, and short.",
		`cases."greet.basic".fixture`:                       "tests/skills/greet/basic/fixture",
		`cases."review.conversation".seed[0].role`:          "user",
		`cases."review.conversation".seed[0].content`:       "Review `greet`.",
		`cases."review.conversation".seed[1].content`:       "Which part?\nIt has two.",
		`cases."review.conversation".seed[2].role`:          "user",
		`cases."review.conversation".hardAssertions.shell`:  "bash",
		`cases."review.conversation".hardAssertions.script`: "test -f \"$WORLD/review.md\"\ngrep -q flags \"$OUTPUT\"",
		`cases."review.conversation".softCriteria[0]`:       "The review is written to review.md.",
	}
	for p, w := range want {
		got, err := v.LookupPath(cue.ParsePath(p)).String()
		if err != nil || got != w {
			t.Errorf("%s = %q (%v), want %q", p, got, err, w)
		}
	}
	if v.LookupPath(cue.ParsePath("skills.untested")).Exists() {
		t.Error("a skill with no tests is read when no skill is named")
	}
	if v.LookupPath(cue.ParsePath(`cases."review.conversation".fixture`)).Exists() {
		t.Error("a case with no fixture/ has a fixture")
	}
	// Order: the tree's path order.
	it, _ := v.LookupPath(cue.ParsePath("cases")).Fields()
	var ids []string
	for it.Next() {
		ids = append(ids, it.Selector().Unquoted())
	}
	if got := strings.Join(ids, ","); got != "greet.basic,review.conversation" {
		t.Errorf("cases %s", got)
	}
	// Positions: every value is at its line in its case.md.
	for p, w := range map[string]string{
		`cases."greet.basic".prompt`:                                   "tests/skills/greet/basic/case.md:5:1",
		`cases."greet.basic".description`:                              "tests/skills/greet/basic/case.md:2:14",
		`cases."greet.basic".softCriteria[1]`:                          "tests/skills/greet/basic/case.md:11:3",
		`cases."review.conversation".seed[1].content`:                  "tests/skills/tools/review/conversation/case.md:9:16",
		`cases."review.conversation".hardAssertions.script`:            "tests/skills/tools/review/conversation/case.md:15:1",
		`cases."review.conversation".hardAssertions.predicates[1].run`: "tests/skills/tools/review/conversation/case.md:16:1",
	} {
		pos := v.LookupPath(cue.ParsePath(p)).Pos().Position()
		got := fmt.Sprintf("%s:%d:%d", filepath.ToSlash(strings.TrimPrefix(pos.Filename, dir+string(filepath.Separator))), pos.Line, pos.Column)
		if got != w {
			t.Errorf("%s at %s, want %s", p, got, w)
		}
	}
}

func TestReadSelectedSkills(t *testing.T) {
	dir := tree(t, goodTree)
	v, err := read(t, dir, `skills: ["review"]`)
	if err != nil {
		t.Fatal(cueerrors.Details(err, nil))
	}
	if v.LookupPath(cue.ParsePath("skills.greet")).Exists() || !v.LookupPath(cue.ParsePath(`cases."review.conversation"`)).Exists() {
		t.Errorf("skills: [review] read %v", v)
	}
	for _, c := range []struct{ in, want string }{
		{`skills: ["greet", "untested"]`, `suite.cue:1:19: skill untested has no tests: no case folder with a case.md under tests/skills/untested/`},
		{`skills: ["nosuch"]`, `suite.cue:1:10: no skill named nosuch`},
	} {
		_, err := read(t, dir, c.in)
		if got := errorsAt(err, dir); !strings.Contains(got, c.want) {
			t.Errorf("%s: %s, want %s", c.in, got, c.want)
		}
	}
	empty := tree(t, "-- skills/greet/SKILL.md --\n---\nname: greet\n---\n")
	if _, err := read(t, empty, `root: "."`); !strings.Contains(errorsAt(err, empty), `suite.cue:1:1: no tests: no case folder with a case.md under tests/`) {
		t.Errorf("a tree with no tests: %v", errorsAt(err, empty))
	}
	if _, err := read(t, t.TempDir(), `root: "."`); !strings.Contains(errorsAt(err, ""), "suite.cue:1:1: read benchmark-skill tree: no skills/ folder") {
		t.Errorf("no skills/: %v", err)
	}
}

// errorsAt is every error of err as FILE:LINE:COL: MESSAGE, one a line, FILE
// relative to dir.
func errorsAt(err error, dir string) string {
	var out []string
	for _, e := range cueerrors.Errors(err) {
		pos := e.Position()
		name := pos.Filename()
		if dir != "" {
			name = strings.TrimPrefix(name, dir+string(filepath.Separator))
		}
		format, args := e.Msg()
		out = append(out, fmt.Sprintf("%s:%d:%d: %s", filepath.ToSlash(name), pos.Line(), pos.Column(), fmt.Sprintf(format, args...)))
	}
	return strings.Join(out, "\n")
}

func TestReadCaseErrors(t *testing.T) {
	const good = "---\ndescription: d\n---\n## Prompt\np\n\n## Soft criteria\n- c\n"
	for _, c := range []struct{ name, src, want string }{
		{"no front-matter", "## Prompt\np\n## Soft criteria\n- c\n", "case.md:1:1: no front-matter"},
		{"front-matter not closed", "---\ndescription: d\n## Prompt\n", "case.md:1:1: front-matter is not closed"},
		{"unknown key", "---\ndescription: d\nfixture: x\n---\n## Prompt\np\n## Soft criteria\n- c\n", `case.md:3:1: unknown front-matter key "fixture"`},
		{"not key value", "---\ndescription: d\njust words\n---\n## Prompt\np\n## Soft criteria\n- c\n", `case.md:3:1: front-matter line is not "key: value"`},
		{"no description", "---\n---\n## Prompt\np\n## Soft criteria\n- c\n", "case.md:1:1: front-matter has no description"},
		{"block description", "---\ndescription: >\n  two\n---\n## Prompt\np\n## Soft criteria\n- c\n", "case.md:2:14: description: a block scalar (>) is not one line"},
		{"bad quotes", "---\ndescription: \"open\n---\n## Prompt\np\n## Soft criteria\n- c\n", "case.md:2:14: description: unreadable double-quoted value"},
		{"missing prompt", "---\ndescription: d\n---\n## Soft criteria\n- c\n", "case.md:1:1: no ## Prompt section"},
		{"empty prompt", "---\ndescription: d\n---\n## Prompt\n\n## Soft criteria\n- c\n", "case.md:4:1: ## Prompt is empty"},
		{"no soft criteria section", "---\ndescription: d\n---\n## Prompt\np\n", "case.md:1:1: no ## Soft criteria section"},
		{"no soft criteria entry", "---\ndescription: d\n---\n## Prompt\np\n## Soft criteria\n\n", "case.md:6:1: ## Soft criteria has no entry"},
		{"soft criteria not a list", good + "plain words\n", `case.md:9:1: soft criteria are a list`},
		{"unknown section", good + "## Notes\nx\n", "case.md:9:1: unknown section ## Notes"},
		{"section twice", good + "## Prompt\nq\n", "case.md:9:1: section ## Prompt appears twice (first at line 4)"},
		{"text before sections", "---\ndescription: d\n---\nhello\n## Prompt\np\n## Soft criteria\n- c\n", "case.md:4:1: text before the first section"},
		{"unknown seed role", good + "## Seed\n**User:** hi\n**System:** be terse\n", `case.md:11:3: unknown seed role "System"`},
		{"seed text before a tag", good + "## Seed\nhi\n", "case.md:10:1: seed text before the first role tag"},
		{"empty seed turn", good + "## Seed\n**User:**\n**Assistant:** x\n", "case.md:10:1: seed turn of user is empty"},
		{"no seed turn", good + "## Seed\n\n", "case.md:9:1: ## Seed has no turn"},
		{"hard assertions in python", good + "## Hard assertions\n```python\nprint(1)\n```\n", `case.md:10:4: hard assertions are a "python" block`},
		{"hard assertions prose", good + "## Hard assertions\nCheck it.\n```sh\ntrue\n```\n", "case.md:10:1: text outside the shell block"},
		{"hard assertions empty", good + "## Hard assertions\n```sh\n```\n", "case.md:10:1: the hard assertions block is empty"},
		{"hard assertions no block", good + "## Hard assertions\n", "case.md:9:1: ## Hard assertions has no ```sh block"},
		{"block not closed", good + "## Hard assertions\n```sh\ntrue\n", "case.md:10:1: code block is not closed: no ``` line after it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := tree(t, "-- skills/s/SKILL.md --\n---\nname: s\n---\n-- tests/skills/s/x/case.md --\n"+c.src)
			_, err := read(t, dir, `root: "."`)
			got := errorsAt(err, filepath.Join(dir, "tests", "skills", "s", "x"))
			if !strings.Contains(got, c.want) {
				t.Errorf("got\n%s\nwant %s", got, c.want)
			}
		})
	}
}

func TestReadTreeErrors(t *testing.T) {
	dir := tree(t, `
-- skills/greet/SKILL.md --
---
name: greet
---
-- tests/skills/gone/basic/case.md --
---
description: d
---
-- tests/skills/greet/a/case.md --
---
description: d
---
## Prompt
p
-- tests/skills/greet/b/case.md --
---
description: d
---
## Prompt
p
## Soft criteria
- c
-- tests/skills/greet/b/fixture --
a file
`)
	_, err := read(t, dir, `root: "."`)
	got := errorsAt(err, dir)
	for _, want := range []string{
		"tests/skills/gone/basic/case.md:1:1: case folder basic maps to no skill: tests/ mirrors skills/ by path, and skills/gone holds no SKILL.md",
		"tests/skills/greet/a/case.md:1:1: no ## Soft criteria section",
		"tests/skills/greet/b/case.md:1:1: fixture beside case.md is a file",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("got\n%s\nwant %s", got, want)
		}
	}
}

// TestPredicates: each line of a hard-assertion block is a predicate of its
// own, so a negated one fails when it should; a block whose commands span
// lines runs whole under set -e.
func TestPredicates(t *testing.T) {
	for _, c := range []struct{ script, want string }{
		{"test -f a\n! grep -q TODO a\n", "test -f a|! grep -q TODO a"},
		{"# a comment\n\ntest -f a \\\n  -a -f b\n", "test -f a -a -f b"},
		{"if [ -f a ]; then\n  true\nfi\n", "set -e\nif [ -f a ]; then\n  true\nfi\n"},
		{"grep -q x a |\n  wc -l\n", "set -e\ngrep -q x a |\n  wc -l\n"},
		{"cat <<EOF > f\nx\nEOF\n", "set -e\ncat <<EOF > f\nx\nEOF\n"},
		{"grep -q 'two\nlines' a\n", "set -e\ngrep -q 'two\nlines' a\n"},
	} {
		var got []string
		for _, p := range predicates(text{c.script, 0}) {
			got = append(got, p.s)
		}
		if strings.Join(got, "|") != c.want {
			t.Errorf("%q: %q, want %q", c.script, got, c.want)
		}
	}
	ps := predicates(text{"true\n  false\n", 10})
	if len(ps) != 2 || ps[1].off != 17 {
		t.Errorf("offsets %+v", ps)
	}
}
