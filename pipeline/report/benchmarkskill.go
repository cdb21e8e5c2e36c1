package report

import "github.com/skillgate/skillgate/pipeline/verdict"

// writeBenchmarkSkill writes the system's own output files into the run folder dir.
func writeBenchmarkSkill(dir string, r *verdict.Report, ev *Evidence) error { return nil }
