package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/verdict"

	"github.com/opencontainers/go-digest"
)

// FileCalibration is where Calibrate records its outcome in the run folder.
const FileCalibration = "calibration.json"

// ReadCalibration reads the calibration recorded in the run folder for
// plan p; ok is false when there is none, or it was made for another plan.
func ReadCalibration(out string, p *plan.Plan) (cal *verdict.Calibration, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(out, FileCalibration))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read calibration: %w", err)
	}
	var rec struct {
		Plan digest.Digest `json:"plan"`
		verdict.Calibration
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, false, fmt.Errorf("read calibration: %w", err)
	}
	if rec.Plan != p.Digest {
		return nil, false, nil
	}
	return &rec.Calibration, true, nil
}
