package runner

import (
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/report"
	"github.com/skillgate/skillgate/pipeline/verdict"
	"github.com/skillgate/skillgate/runner/readback"
)

// What the commands read of a run folder is runner/readback's; these are
// its names as the runner has always given them.

// Report rebuilds the verdict and every report of a run folder
// (readback.Report).
func Report(out string) (*verdict.Report, error) { return readback.Report(out) }

// ReadRun rebuilds a run folder's report and writes nothing
// (readback.ReadRun).
func ReadRun(out string) (*plan.Plan, *verdict.Report, error) { return readback.ReadRun(out) }

// RejudgedRun is a run's report with its rejudged rubric grades
// (readback.RejudgedRun).
func RejudgedRun(out string) (*plan.Plan, *verdict.Report, *report.Evidence, error) {
	return readback.RejudgedRun(out)
}

// PreflightWarnings are the warnings the run folder's preflight recorded
// for plan p (readback.PreflightWarnings).
func PreflightWarnings(out string, p *plan.Plan) []string { return readback.PreflightWarnings(out, p) }

// ShardsOf gives each of the plan's cells, by ID, the shard (from 1) of n
// that runs it (readback.ShardsOf).
func ShardsOf(p *plan.Plan, n int) map[string]int { return readback.ShardsOf(p, n) }

// The preflight's record in the run folder.
type (
	PreflightCheck  = readback.PreflightCheck
	PreflightRecord = readback.PreflightRecord
)

// Files of the run folder the read back reads.
const (
	FilePreflight  = readback.FilePreflight
	FileSequential = readback.FileSequential
)
