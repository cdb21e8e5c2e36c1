package grade

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// GlobMatch reports whether the slash-separated path rel matches pattern
// as Python's pathlib (3.12) globs a file: segment by segment, each an
// fnmatch pattern (*, ?, [...] and [!...], never crossing a "/", hidden
// names not special, case-sensitive), a segment "**" standing for any
// number of folders; "**" as the last segment names folders only, so no
// file.
func GlobMatch(pattern, rel string) bool {
	return globSegments(strings.Split(strings.Trim(pattern, "/"), "/"), strings.Split(rel, "/"))
}

func globSegments(pat, path []string) bool {
	for len(pat) > 0 && (pat[0] == "" || pat[0] == ".") {
		pat = pat[1:] // pathlib drops empty and "." segments
	}
	if len(pat) == 0 {
		return len(path) == 0
	}
	if len(path) == 0 {
		return false
	}
	if pat[0] == "**" {
		// Zero or more folders, and a name after them.
		for k := 0; k < len(path); k++ {
			if globSegments(pat[1:], path[k:]) {
				return true
			}
		}
		return false
	}
	return fnmatchRE(pat[0]).MatchString(path[0]) && globSegments(pat[1:], path[1:])
}

// fnmatchRE is Python's fnmatch.translate of one segment, case-sensitive.
func fnmatchRE(p string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`(?s)\A`)
	rs := []rune(p)
	for i := 0; i < len(rs); {
		c := rs[i]
		i++
		switch c {
		case '*':
			for i < len(rs) && rs[i] == '*' {
				i++
			}
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		case '[':
			j := i
			if j < len(rs) && rs[j] == '!' {
				j++
			}
			if j < len(rs) && rs[j] == ']' {
				j++
			}
			for j < len(rs) && rs[j] != ']' {
				j++
			}
			if j >= len(rs) {
				b.WriteString(`\[`)
				continue
			}
			stuff := string(rs[i:j])
			i = j + 1
			neg := strings.HasPrefix(stuff, "!")
			if neg {
				stuff = stuff[1:]
			}
			if stuff == "" {
				if neg {
					b.WriteString(`.`) // [!] is any character
				} else {
					b.WriteString(`[^\x00-\x{10FFFF}]`) // [] is none
				}
				continue
			}
			esc := strings.NewReplacer(`\`, `\\`, `[`, `\[`, `^`, `\^`).Replace(stuff)
			if neg {
				b.WriteString(`[^` + esc + `]`)
			} else {
				b.WriteString(`[` + esc + `]`)
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString(`\z`)
	re, err := regexp.Compile(b.String())
	if err != nil {
		return regexp.MustCompile(`\A` + regexp.QuoteMeta(p) + `\z`)
	}
	return re
}

// Paths lists every path of the final workspace that may hold a file:
// the initial trees' files, the setup's and the agent's changes, sorted.
func (w *World) Paths() ([]string, error) {
	seen := map[string]bool{}
	addTree := func(prefix string, t *plan.Tree, dir string) error {
		if t != nil {
			for p := range t.Files {
				seen[prefix+p] = true
			}
			return nil
		}
		if dir == "" {
			return nil
		}
		return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				rel, err := filepath.Rel(dir, p)
				if err != nil {
					return err
				}
				seen[prefix+filepath.ToSlash(rel)] = true
			}
			return nil
		})
	}
	if err := addTree("", w.FixtureTree, w.Fixture); err != nil {
		return nil, fmt.Errorf("list workspace: %w", err)
	}
	if w.Overlay != "" {
		if err := addTree("", w.OverlayTree, w.Overlay); err != nil {
			return nil, fmt.Errorf("list workspace: %w", err)
		}
	}
	for _, s := range w.Skills {
		if err := addTree(s.At+"/", s.Tree, s.Dir); err != nil {
			return nil, fmt.Errorf("list workspace: %w", err)
		}
	}
	for _, c := range append(append([]FileChange{}, w.Baseline...), w.Changes...) {
		seen[c.Path] = true
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out, nil
}

// globFile is one file a glob names: its content, or why it has none.
type globFile struct {
	path string
	text string
	cut  string
}

// globFiles lists the regular files of the final workspace that pattern
// names (a symlink to a file counts, as pathlib's is_file follows it).
func globFiles(w World, pattern string) ([]globFile, error) {
	paths, err := w.Paths()
	if err != nil {
		return nil, err
	}
	var out []globFile
	for _, p := range paths {
		if !GlobMatch(pattern, p) {
			continue
		}
		data, ok, err := w.Read(p)
		switch {
		case IsCut(err):
			out = append(out, globFile{path: p, cut: err.Error()})
		case err != nil:
			return nil, err
		case ok:
			out = append(out, globFile{path: p, text: string(data)})
		}
	}
	return out, nil
}

// GlobChecks evaluates a glob assertion over the final workspace w: its
// count, then each content condition as one check that holds in every
// file the glob names.
func GlobChecks(a suite.Assertion, w World) ([]CheckResult, error) {
	files, err := globFiles(w, *a.Glob)
	if err != nil {
		return nil, err
	}
	subject := "glob " + *a.Glob
	named := func(cond string) string {
		if a.Name != "" {
			return a.Name + ": " + subject + " " + cond
		}
		return subject + " " + cond
	}
	var out []CheckResult
	if a.Count != nil {
		ch := CheckResult{Name: named(fmt.Sprintf("count: %d", *a.Count)), Kind: CheckFile, Passed: len(files) == *a.Count}
		if !ch.Passed {
			ch.Detail = fmt.Sprintf("%d files match", len(files))
		}
		out = append(out, ch)
	}
	for _, cond := range contentConditions(a) {
		ch := CheckResult{Name: named(cond.name), Kind: CheckFile, Negative: cond.negative, Passed: true}
		for _, f := range files {
			ok, why := cond.holds(f.text)
			if f.cut != "" {
				ok, why = false, f.cut
			}
			if !ok {
				ch.Passed, ch.Detail = false, f.path+": "+why
				break
			}
		}
		out = append(out, ch)
	}
	return out, nil
}

// condition is one content condition of a file or glob assertion.
type condition struct {
	name     string
	negative bool
	holds    func(text string) (bool, string)
}

// contentConditions are an assertion's conditions on a file's text.
func contentConditions(a suite.Assertion) []condition {
	var out []condition
	text := func(cond, arg string, negative bool, hit func(string) bool) {
		out = append(out, condition{name: fmt.Sprintf("%s %q", cond, arg), negative: negative, holds: func(t string) (bool, string) {
			found := hit(t)
			return found != negative, map[bool]string{true: "found", false: "not found"}[found]
		}})
	}
	if a.Contains != nil {
		text("contains", *a.Contains, false, func(t string) bool { return strings.Contains(t, *a.Contains) })
	}
	if a.NotContains != nil {
		text("notContains", *a.NotContains, true, func(t string) bool { return strings.Contains(t, *a.NotContains) })
	}
	if a.Matches != nil {
		text("matches", *a.Matches, false, regexp.MustCompile(*a.Matches).MatchString) // compiled by vet
	}
	if a.NotMatches != nil {
		text("notMatches", *a.NotMatches, true, regexp.MustCompile(*a.NotMatches).MatchString)
	}
	out = append(out, markdownConditions(a)...)
	return out
}

// markdownConditions are an assertion's bullets and taskGraph conditions.
func markdownConditions(a suite.Assertion) []condition {
	var out []condition
	if b := a.Bullets; b != nil {
		out = append(out, condition{
			name:  fmt.Sprintf("bullets under ## %s: matches %q, links %q", b.Heading, b.Matches, b.Links),
			holds: func(t string) (bool, string) { return bulletsHold(t, *b) },
		})
	}
	if g := a.TaskGraph; g != nil {
		name := "task graph"
		for _, e := range g.RequiredEdges {
			name += fmt.Sprintf(" %s→%s", e[0], e[1])
		}
		if g.Acyclic {
			name += " acyclic"
		}
		for _, s := range g.SeparateSlices {
			name += " separate:" + s.ID
		}
		out = append(out, condition{name: name, holds: func(t string) (bool, string) {
			f := TaskGraphFailures(t, *g)
			return len(f) == 0, strings.Join(f, "; ")
		}})
	}
	return out
}
