package store

import (
	"fmt"
	"path/filepath"

	"github.com/skillgate/skillgate/pipeline"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/runfolder"
	"github.com/skillgate/skillgate/pipeline/verdict"

	"github.com/opencontainers/go-digest"
)

// FileCalibration is where Calibrate records its outcome in the run folder.
const FileCalibration = runfolder.FileCalibration

// calibrationRecord is calibration.json: the calibration and the plan it was
// made for, sealed like every stored record.
type calibrationRecord struct {
	Plan digest.Digest `json:"plan"`
	*verdict.Calibration
}

// WriteCalibration records cal, made for plan p, in the run folder, sealed and
// atomically.
func WriteCalibration(out string, p *plan.Plan, cal *verdict.Calibration) error {
	b, err := sealJSON(calibrationRecord{p.Digest, cal})
	if err != nil {
		return fmt.Errorf("write calibration: %w", err)
	}
	if err := pipeline.WriteFile(filepath.Join(out, FileCalibration), b); err != nil {
		return fmt.Errorf("write calibration: %w", err)
	}
	return nil
}

// ReadCalibration reads the calibration recorded in the run folder for
// plan p; ok is false when there is none, or it was made for another plan. A
// record edited by hand (its seal does not match), or a link, is refused.
func ReadCalibration(out string, p *plan.Plan) (cal *verdict.Calibration, ok bool, err error) {
	rec := calibrationRecord{Calibration: &verdict.Calibration{}}
	found, err := readSealed(filepath.Join(out, FileCalibration), &rec)
	if err != nil {
		return nil, false, fmt.Errorf("read calibration: %w", err)
	}
	if !found || rec.Plan != p.Digest {
		return nil, false, nil
	}
	return rec.Calibration, true, nil
}

// unsealCalibration checks a calibration record read from file and decodes it.
func unsealCalibration(file string, b []byte) (calibrationRecord, error) {
	rec := calibrationRecord{Calibration: &verdict.Calibration{}}
	return rec, unseal(file, b, &rec)
}
