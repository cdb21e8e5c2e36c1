package plan

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/skillgate/skillgate/pipeline/suite"
)

// ResolveStandIn compiles the suite folder dir, with the calibration-only cases among
// cases, as suite.UseStandIn makes it: the same cells, answered offline by labelled
// stand-ins. A plan file is refused: its agent is the one it was compiled with.
func ResolveStandIn(dir string, cases []string) (*Target, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("read target: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("run %s with stand-ins: give the suite folder, not a plan file (a plan holds its own agent and judge)", dir)
	}
	s, err := suite.LoadSuite(dir)
	if err != nil {
		return nil, err
	}
	s.UseStandIn()
	p, err := CompileCases(s, cases)
	if err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(dir)
	return &Target{Plan: p, SuiteDir: abs, CalibrationSkipped: s.CalibrationSkipped}, nil
}
