package benchmarkskill

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline"
)

// ReportsIgnore is the .gitignore written into tests/.reports, so the
// reports stay out of the repository without an edit to the user's own
// .gitignore.
const ReportsIgnore = "# skillgate benchmark-skill reports: generated, never committed.\n*\n"

// ReportsFolder is the tests/.reports folder of a case's repository, absolute,
// found from what a plan keeps of the case: its case.md and its skill's
// folder, both relative to the suite folder suiteDir. The case.md's folder's
// parent is the tests/ folder with the skill's path mirrored, so the
// components the two share at their end are the mirror and what precedes
// them is tests/.
func ReportsFolder(suiteDir, caseMD, skillPath string) (string, error) {
	mirrorDir := strings.Split(filepath.ToSlash(filepath.Dir(filepath.Dir(caseMD))), "/")
	skill := strings.Split(filepath.ToSlash(skillPath), "/")
	n := 0
	for n < len(mirrorDir) && n < len(skill) && mirrorDir[len(mirrorDir)-1-n] == skill[len(skill)-1-n] && skill[len(skill)-1-n] != ".." {
		n++
	}
	tests := mirrorDir[:len(mirrorDir)-n]
	if n == 0 || len(tests) == 0 || tests[len(tests)-1] != TestsDir {
		return "", fmt.Errorf("find tests/.reports: %s is not under tests/ at the path of skill folder %s", caseMD, skillPath)
	}
	return filepath.Join(suiteDir, filepath.FromSlash(strings.Join(tests, "/")), ReportsDir), nil
}

// WriteReports writes a skill's report files into dir (tests/.reports),
// with the .gitignore that keeps them out of git when dir has none. It
// returns the paths written.
func WriteReports(dir string, files map[string][]byte) ([]string, error) {
	var out []string
	ignore := filepath.Join(dir, ".gitignore")
	if _, err := os.Stat(ignore); errors.Is(err, os.ErrNotExist) {
		if err := pipeline.WriteFile(ignore, []byte(ReportsIgnore)); err != nil {
			return nil, err
		}
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := filepath.Join(dir, name)
		if err := pipeline.WriteFile(p, files[name]); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}
