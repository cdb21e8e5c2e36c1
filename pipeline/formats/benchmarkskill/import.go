package benchmarkskill

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// SuiteFile is the file Import writes.
const SuiteFile = "suite.cue"

// Import writes into out the suite that benchmarks the skills of the
// benchmark-skill repository at src (the folder holding skills/ and
// tests/): suite.cue names the tree by its path from out and lists the
// skills that have tests, with the ones that have none in a comment. It
// reads the tree first, so a case.md that does not parse is reported, with
// its position, and nothing is written; it never overwrites a file. It
// returns the files written.
func Import(src, out string) ([]string, error) {
	srcAbs, err := filepath.Abs(src)
	if err != nil {
		return nil, fmt.Errorf("import benchmark-skill %s: %w", src, err)
	}
	outAbs, err := filepath.Abs(out)
	if err != nil {
		return nil, fmt.Errorf("import benchmark-skill %s: %w", src, err)
	}
	skills, err := readSkills(srcAbs)
	if err != nil {
		return nil, fmt.Errorf("import benchmark-skill %s: %w", src, err)
	}
	if _, errs := readCases(srcAbs, skills); errs != nil {
		return nil, errs
	}
	var tested, untested []string
	for _, s := range skills {
		if len(s.cases) > 0 {
			tested = append(tested, s.key)
		} else {
			untested = append(untested, s.key)
		}
	}
	if len(tested) == 0 {
		return nil, fmt.Errorf("import benchmark-skill %s: no tests: no case folder with a %s under %s/", src, CaseFile, TestsDir)
	}
	root, err := filepath.Rel(outAbs, srcAbs)
	if err != nil {
		return nil, fmt.Errorf("import benchmark-skill %s: %w", src, err)
	}
	target := filepath.Join(outAbs, SuiteFile)
	if _, err := os.Lstat(target); err == nil {
		return nil, fmt.Errorf("import benchmark-skill %s: %s exists; not overwriting it", src, filepath.Join(out, SuiteFile))
	}
	if err := os.MkdirAll(outAbs, 0o755); err != nil {
		return nil, fmt.Errorf("import benchmark-skill %s: %w", src, err)
	}
	b := suiteSource(suiteName(srcAbs), filepath.ToSlash(root), tested, untested)
	// O_EXCL: a file that appeared since the check is not overwritten either.
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("import benchmark-skill %s: %w", src, err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(target)
		return nil, fmt.Errorf("import benchmark-skill %s: %w", src, err)
	}
	return []string{filepath.Join(out, SuiteFile)}, nil
}

var notName = regexp.MustCompile(`[^a-z0-9._-]+`)

// suiteName is a suite name made of the repository folder's name.
func suiteName(src string) string {
	n := strings.Trim(notName.ReplaceAllString(strings.ToLower(filepath.Base(src)), "-"), "-._")
	if n == "" {
		return "skills"
	}
	return n
}

// suiteSource is the suite.cue Import writes.
func suiteSource(name, root string, tested, untested []string) []byte {
	var b bytes.Buffer
	quoted := make([]string, len(tested))
	for i, s := range tested {
		quoted[i] = strconv.Quote(s)
	}
	fmt.Fprintf(&b, `package %s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/formats/benchmarkskill"
)

// The benchmark-skill tree at %s is the source of truth: every case is a
// case.md under its tests/, read afresh by vet, plan, diff and run. Each
// case runs a force-invoked new-skill arm against a no-skill baseline in 5
// paired trials, a blind judge compares them per trial on the case's soft
// criteria, and the efficacy policy passes a case with wins >= 3 and
// losses <= 1. skillgate benchmark-skill NAME writes tests/.reports/NAME.html.
`, packageName(name), root)
	if len(untested) > 0 {
		fmt.Fprintf(&b, "//\n// Skills with no tests, which cannot be benchmarked yet: %s.\n", strings.Join(untested, ", "))
	}
	fmt.Fprintf(&b, `schema.#Suite & benchmarkskill.#Suite & {
	name: %q
	formats: benchmarkSkill: {
		root: %q
		skills: [%s]
	}
	agent: agents.claudeCode & {model: "claude-sonnet-4-5"}
	judge: {provider: "anthropic", model: "claude-sonnet-4-5"}
}
`, name, root, strings.Join(quoted, ", "))
	return b.Bytes()
}

// packageName is a CUE package name made of a suite name.
func packageName(name string) string {
	p := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, name)
	if p[0] >= '0' && p[0] <= '9' {
		p = "s" + p
	}
	return p
}
