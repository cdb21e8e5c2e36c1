package store

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"

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
// atomically. In a plan on several agents each agent's share calibrates
// apart: the record keeps the checks of the agents cal does not hold (a
// record of the same plan), in the plan's agent order, and cal's replace
// their agents' own; Skill, None and Shell then tally every agent's. A
// record of one agent, or of another plan, is replaced whole.
func WriteCalibration(out string, p *plan.Plan, cal *verdict.Calibration) error {
	b, err := sealJSON(calibrationRecord{p.Digest, withOtherAgents(out, p, cal)})
	if err != nil {
		return fmt.Errorf("write calibration: %w", err)
	}
	if err := pipeline.WriteFile(filepath.Join(out, FileCalibration), b); err != nil {
		return fmt.Errorf("write calibration: %w", err)
	}
	return nil
}

// withOtherAgents is cal with the checks the folder's record of plan p
// holds for other agents; cal itself when its checks name no agent or
// the folder holds no such record.
func withOtherAgents(out string, p *plan.Plan, cal *verdict.Calibration) *verdict.Calibration {
	agents := map[string]bool{}
	for _, ch := range cal.Checks {
		agents[ch.Agent] = true
	}
	if len(cal.Checks) == 0 || agents[""] {
		return cal
	}
	// A record that fails its seal carries nothing: its agents' shares
	// record their checks again at their next calibration.
	old, ok, err := ReadCalibration(out, p)
	if err != nil || !ok {
		return cal
	}
	all := *cal
	all.Checks = nil
	for _, ch := range old.Checks {
		if ch.Agent != "" && !agents[ch.Agent] {
			all.Checks = append(all.Checks, ch)
		}
	}
	all.Checks = append(all.Checks, cal.Checks...)
	order := p.AgentNames()
	rank := func(a string) int {
		if i := slices.Index(order, a); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortStableFunc(all.Checks, func(a, b verdict.CalibrationCheck) int { return cmp.Compare(rank(a.Agent), rank(b.Agent)) })
	all.Tally()
	return &all
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
