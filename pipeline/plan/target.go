package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/skillgate/skillgate/pipeline/suite"
)

// Target is what `skillgate run` executes: a plan and the suite folder its
// fixtures and skills are read from.
type Target struct {
	Plan     *Plan
	SuiteDir string
	// CalibrationSkipped: a stand-in run turned the policy's calibration
	// off (suite.UseStandIn).
	CalibrationSkipped bool
}

// ResolveTarget reads a run target. A suite folder is compiled, with the
// calibration-only cases among cases (the cases the run selects). A plan
// file is executed exactly: its suite (suiteDir, else the plan's suite
// folder in the repository holding the current folder) is compiled again,
// with the calibration-only cases the plan holds, and must give the same
// plan, else the error says which inputs changed.
func ResolveTarget(target, suiteDir string, cases []string) (*Target, error) {
	st, err := os.Stat(target)
	if err != nil {
		return nil, fmt.Errorf("read target: %w", err)
	}
	if st.IsDir() {
		p, err := CompileDirCases(target, cases)
		if err != nil {
			return nil, err
		}
		abs, _ := filepath.Abs(target)
		return &Target{Plan: p, SuiteDir: abs}, nil
	}
	p, err := ReadPlan(target)
	if err != nil {
		return nil, err
	}
	if suiteDir == "" {
		cwd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("find suite: %w", err)
		}
		suiteDir = filepath.Join(suite.RepositoryRoot(cwd), filepath.FromSlash(p.Suite.Dir))
	}
	now, err := CompileDirCases(suiteDir, p.CalibrationCases())
	if err != nil {
		return nil, fmt.Errorf("check plan %s against suite %s: %w", target, suiteDir, err)
	}
	if now.Digest != p.Digest {
		return nil, fmt.Errorf("check plan %s: the suite in %s no longer matches it: %s", target, suiteDir, changeSummary(DiffPlans(p, now)))
	}
	abs, _ := filepath.Abs(suiteDir)
	return &Target{Plan: p, SuiteDir: abs}, nil
}

// changeSummary names the distinct reasons of a diff, briefly.
func changeSummary(d *PlanDiff) string {
	seen := map[string]bool{}
	var reasons []string
	for _, g := range d.Groups() {
		rs := g.Reasons
		if g.Class == DiffAdded || g.Class == DiffRemoved {
			rs = []string{fmt.Sprintf("%d cells %s", len(g.Cells), g.Class)}
		}
		for _, r := range rs {
			if !seen[r] {
				seen[r] = true
				reasons = append(reasons, r)
			}
		}
	}
	if len(reasons) == 0 {
		return "the plan's suite metadata changed"
	}
	if len(reasons) > 5 {
		reasons = append(reasons[:5], fmt.Sprintf("and %d more", len(reasons)-5))
	}
	return strings.Join(reasons, "; ")
}
