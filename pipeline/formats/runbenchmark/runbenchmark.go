// Package runbenchmark is the Go side of run-benchmark's format: CUE reads
// the YAML definitions itself (schema/formats/runbenchmark), so this
// package only writes the suite that names them (Import) and reads what
// the run-benchmark command needs of a loaded suite.
package runbenchmark
