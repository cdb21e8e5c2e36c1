package readback

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"

	"github.com/skillgate/skillgate/pipeline"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/runfolder"
)

// FilePreflight is where the preflight records its outcomes in the run folder.
const FilePreflight = runfolder.FilePreflight

// PreflightCheck is one run: check's outcome on one case's untouched workspace or on its
// reference solution.
type PreflightCheck struct {
	Key         digest.Digest `json:"key"`
	Case        string        `json:"case"`
	Check       string        `json:"check"`
	Environment string        `json:"environment,omitempty"`
	On          string        `json:"on"`
	ExitCode    int           `json:"exitCode"`
	TimedOut    bool          `json:"timedOut,omitempty"`
	Passed      bool          `json:"passed"`
	// CannotRun says why the check could not run at all ("" when it ran).
	CannotRun string `json:"cannotRun,omitempty"`
	Output    string `json:"output,omitempty"`
}

// PreflightRecord is the run folder's preflight.json: the plan it was made for, every
// stored outcome and the warnings of the plan's cases.
type PreflightRecord struct {
	Plan     digest.Digest    `json:"plan"`
	Checks   []PreflightCheck `json:"checks"`
	Warnings []string         `json:"warnings"`
	Ran      int              `json:"ran"`
	Reused   int              `json:"reused"`
}

func ReadPreflight(out string) (*PreflightRecord, error) {
	b, err := os.ReadFile(filepath.Join(out, FilePreflight))
	if err != nil {
		return nil, err
	}
	var rec PreflightRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("read preflight: %w", err)
	}
	return &rec, nil
}

func WritePreflight(out string, rec *PreflightRecord) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("write preflight: %w", err)
	}
	if err := pipeline.WriteFile(filepath.Join(out, FilePreflight), append(b, '\n')); err != nil {
		return fmt.Errorf("write preflight: %w", err)
	}
	return nil
}

// PreflightWarnings are the warnings the run folder's preflight recorded for plan p, for
// its reports.
func PreflightWarnings(out string, p *plan.Plan) []string {
	rec, err := ReadPreflight(out)
	if err != nil || rec.Plan != p.Digest {
		return nil
	}
	return rec.Warnings
}
