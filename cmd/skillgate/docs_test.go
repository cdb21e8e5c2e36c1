package main

import (
	"bytes"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	cueyaml "cuelang.org/go/encoding/yaml"
)

// commandsPage is the commands reference, one section per command of
// `skillgate --help`, headed "skillgate NAME" ("skillgate image build" for a
// subcommand).
const commandsPage = "../../docs/commands.md"

// repoRoot is the repository holding README.md and docs/.
const repoRoot = "../.."

// TestCommandsReference keeps docs/commands.md and every command's --help in
// step: each command `skillgate --help` lists (and each subcommand its own
// --help lists) has its section, whose first code block is the usage line its
// --help prints, and whose flags table documents exactly the flags its --help
// lists (--help itself aside). A section naming no command fails too.
func TestCommandsReference(t *testing.T) {
	page, err := os.ReadFile(commandsPage)
	if err != nil {
		t.Fatalf("read commands reference: %v", err)
	}
	sections := commandSections(string(page))
	defer func() {
		// A command's Before may tune the collector for a short-lived
		// process; the test process is not one.
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
	}()
	seen := map[string]bool{}
	var walk func(path []string)
	walk = func(path []string) {
		name := strings.Join(append([]string{"skillgate"}, path...), " ")
		help := helpOf(t, path)
		for _, sub := range helpCommands(help) {
			walk(append(slices.Clone(path), sub))
		}
		if len(path) == 0 {
			return
		}
		seen[name] = true
		body, ok := sections[name]
		if !ok {
			t.Errorf("%s: no section %q in docs/commands.md", name, name)
			return
		}
		if want, got := helpUsage(help), docUsage(body); got != want {
			t.Errorf("%s: docs/commands.md gives the usage line\n\t%q\n--help prints\n\t%q", name, got, want)
		}
		helpFlags, docFlags := flagNames(helpFlagColumn(help)), flagNames(docFlagColumn(body))
		for _, f := range helpFlags {
			if !slices.Contains(docFlags, f) {
				t.Errorf("%s: --help lists %s, docs/commands.md does not document it", name, f)
			}
		}
		for _, f := range docFlags {
			if !slices.Contains(helpFlags, f) {
				t.Errorf("%s: docs/commands.md documents %s, --help does not list it", name, f)
			}
		}
	}
	walk(nil)
	if len(seen) < 20 {
		t.Fatalf("found %d commands in skillgate --help: the help's layout changed", len(seen))
	}
	for name := range sections {
		if !seen[name] {
			t.Errorf("docs/commands.md has a section %q, which --help lists no command for", name)
		}
	}
}

// helpOf is what `skillgate PATH... --help` prints.
func helpOf(t *testing.T, path []string) string {
	t.Helper()
	var out bytes.Buffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, &out
	if err := app.Run(append(append([]string{"skillgate"}, path...), "--help")); err != nil {
		t.Fatalf("skillgate %s --help: %v", strings.Join(path, " "), err)
	}
	return out.String()
}

// helpBlock is the indented block under a help heading such as "OPTIONS:".
func helpBlock(help, heading string) []string {
	_, rest, ok := strings.Cut(help, "\n"+heading+":\n")
	if !ok {
		return nil
	}
	var lines []string
	for _, line := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(line, " ") {
			break
		}
		lines = append(lines, line)
	}
	return lines
}

// helpCommands are the command names a help's COMMANDS block lists.
func helpCommands(help string) []string {
	var names []string
	for _, line := range helpBlock(help, "COMMANDS") {
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, strings.TrimSuffix(f[0], ","))
		}
	}
	return names
}

// helpUsage is a help's usage line.
func helpUsage(help string) string {
	lines := helpBlock(help, "USAGE")
	if len(lines) == 0 {
		return ""
	}
	return strings.TrimSpace(lines[0])
}

// helpFlagColumn is the left column of a help's OPTIONS block: the flags as
// written, such as "--jobs value, -j value".
func helpFlagColumn(help string) []string {
	var col []string
	for _, line := range helpBlock(help, "OPTIONS") {
		left, _, _ := strings.Cut(strings.TrimSpace(line), "  ")
		col = append(col, left)
	}
	return col
}

// flagToken is a flag's name as a command line writes it: "--out", "-j".
var flagToken = regexp.MustCompile("(?:^|[\\s,`])(--?[a-z0-9][a-z0-9-]*)")

// flagNames are the distinct flag names of a flag column, --help and -h aside.
func flagNames(col []string) []string {
	var names []string
	for _, cell := range col {
		for _, m := range flagToken.FindAllStringSubmatch(cell, -1) {
			if n := m[1]; n != "--help" && n != "-h" && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return names
}

// commandSections maps each "skillgate ..." heading of the commands page to
// its body, up to the next heading.
func commandSections(page string) map[string]string {
	sections := map[string]string{}
	name, body := "", []string(nil)
	flush := func() {
		if name != "" {
			sections[name] = strings.Join(body, "\n")
		}
	}
	for _, line := range outsideFences(page) {
		if strings.HasPrefix(line.text, "#") {
			flush()
			name, body = "", nil
			heading := strings.TrimSpace(strings.TrimLeft(line.text, "#"))
			if strings.HasPrefix(heading, "skillgate ") {
				name = heading
			}
			continue
		}
		body = append(body, line.raw)
	}
	flush()
	return sections
}

// docUsage is the first line of a section's first fenced code block.
func docUsage(body string) string {
	_, rest, ok := strings.Cut(body, "```\n")
	if !ok {
		return ""
	}
	first, _, _ := strings.Cut(rest, "\n")
	return strings.TrimSpace(first)
}

// docFlagColumn is the first column of a section's flags table, the rows
// whose first cell starts with a dash.
func docFlagColumn(body string) []string {
	var col []string
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "| `-") {
			continue
		}
		first, _, _ := strings.Cut(strings.ReplaceAll(line[1:], `\|`, "\x00"), "|")
		col = append(col, strings.ReplaceAll(first, "\x00", "|"))
	}
	return col
}

// pageLine is a line of a Markdown page; text is empty inside a code fence.
type pageLine struct{ raw, text string }

// outsideFences is a page's lines, with those inside fenced code blocks
// (and the fences) blanked in text, so a "# comment" there is no heading.
func outsideFences(page string) []pageLine {
	var lines []pageLine
	fence := ""
	for _, raw := range strings.Split(page, "\n") {
		trimmed := strings.TrimSpace(raw)
		switch {
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			lines = append(lines, pageLine{raw: raw})
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:3]
			lines = append(lines, pageLine{raw: raw})
		default:
			lines = append(lines, pageLine{raw: raw, text: raw})
		}
	}
	return lines
}

// TestDocsLinks holds every relative link of README.md, docs/**/*.md and the
// other pages of documentation (each suite's README, bench's, .ci's) to a
// file or folder of the repository and, for a Markdown page, to one of its
// headings when the link names an anchor.
func TestDocsLinks(t *testing.T) {
	pages := docPages(t)
	others, err := filepath.Glob(filepath.Join(repoRoot, "suites", "*", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(append(pages, others...), filepath.Join(repoRoot, "bench", "README.md"), filepath.Join(repoRoot, ".ci", "KUBE.md"))
	anchors := map[string][]string{}
	anchorsOf := func(page string) []string {
		if a, ok := anchors[page]; ok {
			return a
		}
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatalf("read %s: %v", page, err)
		}
		anchors[page] = pageAnchors(string(b))
		return anchors[page]
	}
	links := 0
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatalf("read %s: %v", page, err)
		}
		rel, _ := filepath.Rel(repoRoot, page)
		for _, l := range pageLinks(string(b)) {
			links++
			target, anchor, _ := strings.Cut(l.target, "#")
			resolved := page
			if target != "" {
				resolved = filepath.Join(filepath.Dir(page), filepath.FromSlash(target))
				if r, err := filepath.Rel(repoRoot, resolved); err != nil || strings.HasPrefix(r, "..") {
					t.Errorf("%s:%d: link %s leaves the repository", rel, l.line, l.target)
					continue
				}
				if _, err := os.Stat(resolved); err != nil {
					t.Errorf("%s:%d: link %s: no such file", rel, l.line, l.target)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(resolved, ".md") && !slices.Contains(anchorsOf(resolved), anchor) {
				t.Errorf("%s:%d: link %s: no heading with the anchor #%s", rel, l.line, l.target, anchor)
			}
		}
	}
	if links < 50 {
		t.Fatalf("found %d links in README.md and docs/: the link pattern no longer matches", links)
	}
}

// docPages are README.md and every page under docs/.
func docPages(t *testing.T) []string {
	t.Helper()
	pages := []string{filepath.Join(repoRoot, "README.md")}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			pages = append(pages, p)
		}
		return err
	})
	if err != nil {
		t.Fatalf("list docs pages: %v", err)
	}
	return pages
}

// pageLink is a relative link of a page, at its line.
type pageLink struct {
	target string
	line   int
}

var (
	inlineCode   = regexp.MustCompile("`[^`]*`")
	markdownLink = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	htmlAnchor   = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
)

// pageLinks are a page's relative links (inline links and images, outside
// code), web and mail addresses aside.
func pageLinks(page string) []pageLink {
	var links []pageLink
	for i, line := range outsideFences(page) {
		text := inlineCode.ReplaceAllString(line.text, "code")
		for _, m := range markdownLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links = append(links, pageLink{target: target, line: i + 1})
		}
	}
	return links
}

// pageAnchors are the anchors GitHub gives a page's headings (lower case,
// punctuation dropped, spaces as hyphens, a repeated one suffixed -1, -2 ...)
// and its HTML anchors.
func pageAnchors(page string) []string {
	var anchors []string
	count := map[string]int{}
	for _, line := range outsideFences(page) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line.text, -1) {
			anchors = append(anchors, m[1])
		}
		if !strings.HasPrefix(line.text, "#") {
			continue
		}
		heading := strings.TrimSpace(strings.TrimLeft(line.text, "#"))
		heading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
		var slug strings.Builder
		for _, r := range strings.ToLower(heading) {
			switch {
			case r == ' ':
				slug.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				slug.WriteRune(r)
			}
		}
		s := slug.String()
		if n := count[s]; n > 0 {
			anchors = append(anchors, s+"-"+strconv.Itoa(n))
		} else {
			anchors = append(anchors, s)
		}
		count[s]++
	}
	return anchors
}

// readmeCommands are the two commands the README opens with: the demo suite,
// offline, and every test. .ci/run runs the second on CI.
var readmeCommands = []string{
	".ci/docker-up && go run ./cmd/skillgate run suites/demo",
	".ci/docker-up && go test -timeout 45m ./...",
}

// TestReadmeOpens holds the README to opening with its two commands, the
// first two code blocks of the page, and to what they name: .ci/docker-up
// executable, suites/demo a suite, and .ci/run running the same test command.
func TestReadmeOpens(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatalf("read README: %v", err)
	}
	blocks := codeBlocks(string(b))
	if len(blocks) < 2 {
		t.Fatalf("README.md has %d code blocks, want its two commands first", len(blocks))
	}
	for i, want := range readmeCommands {
		if got := strings.TrimSpace(blocks[i].body); blocks[i].lang != "sh" || got != want {
			t.Errorf("README code block %d is ```%s %q, want ```sh %q", i+1, blocks[i].lang, got, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(repoRoot, ".ci/docker-up")); err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf(".ci/docker-up is not an executable file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(repoRoot, "suites/demo/suite.cue")); err != nil {
		t.Errorf("the demo suite: %v", err)
	}
	ci, err := os.ReadFile(filepath.Join(repoRoot, ".ci/run"))
	if err != nil {
		t.Fatalf("read .ci/run: %v", err)
	}
	if !slices.Contains(strings.Split(string(ci), "\n"), readmeCommands[1]) {
		t.Errorf(".ci/run does not run the README's test command %q", readmeCommands[1])
	}
}

// TestDocsYAML parses every YAML block of README.md and docs/**/*.md (the CI
// workflows), so a workflow a user copies is at least valid YAML.
func TestDocsYAML(t *testing.T) {
	n := 0
	for _, page := range docPages(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatalf("read %s: %v", page, err)
		}
		for _, blk := range codeBlocks(string(b)) {
			if blk.lang != "yaml" && blk.lang != "yml" {
				continue
			}
			n++
			rel, _ := filepath.Rel(repoRoot, page)
			if _, err := cueyaml.Extract("block", blk.body); err != nil {
				t.Errorf("%s:%d: YAML block (its lines counted from the fence): %v", rel, blk.line, err)
			}
		}
	}
	if n < 2 {
		t.Fatalf("found %d YAML blocks, want the CI workflows", n)
	}
}

// codeBlock is a fenced code block of a page: its language, its text and
// the line its fence opens at.
type codeBlock struct {
	lang, body string
	line       int
}

// codeBlocks are a page's fenced code blocks, in order.
func codeBlocks(page string) []codeBlock {
	var blocks []codeBlock
	var cur *codeBlock
	for i, line := range strings.Split(page, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &codeBlock{lang: strings.TrimSpace(trimmed[3:]), line: i + 1}
		case cur != nil && trimmed == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.body += line + "\n"
		}
	}
	return blocks
}
