// Package formats reads other evaluation systems' own files into suites:
// one subpackage per system, each with the CUE package of the same name
// under skillgate.dev/schema/formats that turns the system's inputs into
// cases. A user's files stay the source of truth: a suite names them under
// `formats.FIELD`, CUE reads what it can (JSON and YAML, through @embed),
// and a Read function here reads what it cannot (Markdown case trees,
// JSONL) into `formats.FIELD.read`, with positions in the user's files.
package formats

import (
	"fmt"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"

	"github.com/skillgate/skillgate/pipeline/formats/benchmarkskill"
	"github.com/skillgate/skillgate/pipeline/formats/chrisbanes"
	"github.com/skillgate/skillgate/pipeline/formats/gstack"
	"github.com/skillgate/skillgate/pipeline/formats/runbenchmark"
	"github.com/skillgate/skillgate/pipeline/formats/skillcreator"
	"github.com/skillgate/skillgate/pipeline/formats/skillopt"
)

// Format is one system's files.
type Format struct {
	// Name is the system's name on the command line (`skillgate import NAME`).
	Name string
	// Field is the suite field under `formats` its inputs live in.
	Field string
	// Package is the CUE package, under skillgate.dev/schema/formats, that
	// shapes the inputs and turns them into cases.
	Package string
	// Read reads the files named by the suite's formats.FIELD (in, not yet
	// validated; dir is the suite folder, absolute) into the data filled at
	// formats.FIELD.read; nil when CUE reads the files itself. With an
	// error it may still return what it read, stand-ins in place of what
	// it could not, so that no case reading those values reports the same
	// mistake again.
	Read func(dir string, in cue.Value) (ast.Expr, error)
	// Import writes into out a suite naming the system's files at src, and
	// returns the files written.
	Import func(src, out string) ([]string, error)
}

// All are the formats skillgate reads, in the order `skillgate import`
// lists them.
var All = []Format{
	{Name: "gstack", Field: "gstack", Package: "gstack", Read: gstack.Read, Import: gstack.Import},
	{Name: "chrisbanes", Field: "chrisbanes", Package: "chrisbanes", Read: chrisbanes.Read, Import: chrisbanes.Import},
	{Name: "benchmark-skill", Field: "benchmarkSkill", Package: "benchmarkskill", Read: benchmarkskill.Read, Import: benchmarkskill.Import},
	{Name: "run-benchmark", Field: "runBenchmark", Package: "runbenchmark", Import: runbenchmark.Import},
	{Name: "skill-creator", Field: "skillCreator", Package: "skillcreator", Import: skillcreator.Import},
	{Name: "skillopt", Field: "skillopt", Package: "skillopt", Read: skillopt.Read, Import: skillopt.Import},
}

// Lookup finds a format by its command-line name.
func Lookup(name string) (Format, error) {
	i := slices.IndexFunc(All, func(f Format) bool { return f.Name == name })
	if i < 0 {
		return Format{}, fmt.Errorf("no format %q (formats: %s)", name, strings.Join(Names(), ", "))
	}
	return All[i], nil
}

// ByField finds a format by its suite field.
func ByField(field string) (Format, bool) {
	i := slices.IndexFunc(All, func(f Format) bool { return f.Field == field })
	if i < 0 {
		return Format{}, false
	}
	return All[i], true
}

// Names lists the formats' command-line names.
func Names() []string {
	out := make([]string, len(All))
	for i, f := range All {
		out[i] = f.Name
	}
	return out
}
