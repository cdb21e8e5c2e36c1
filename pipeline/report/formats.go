package report

import (
	"fmt"

	"github.com/skillgate/skillgate/pipeline/verdict"
)

// formatWriters write another system's own output files into a run folder,
// by the suite's formats field (verdict.Report.Formats), after the standard
// reports; each lives in the file named for its system. run-benchmark has
// none: its reports carry a run date and live beside its definitions, where
// the run-benchmark command writes them.
var formatWriters = map[string]func(dir string, r *verdict.Report, ev *Evidence) error{
	"gstack":         writeGstack,
	"chrisbanes":     writeChrisbanes,
	"benchmarkSkill": writeBenchmarkSkill,
	"skillCreator":   writeSkillCreator,
	"skillopt":       writeSkillOpt,
}

// writeFormats writes the output files of every system the report's cases
// come from.
func writeFormats(dir string, r *verdict.Report, ev *Evidence) error {
	for _, f := range r.Formats {
		w, ok := formatWriters[f]
		if !ok {
			continue
		}
		if err := w(dir, r, ev); err != nil {
			return fmt.Errorf("write %s outputs: %w", f, err)
		}
	}
	return nil
}
