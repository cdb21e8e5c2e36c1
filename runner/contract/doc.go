// Package contract holds the rules a source system's own call keeps that
// need a run folder: what a paid gstack skill-eval refuses and when its run
// folder resumes, which cases run-benchmark and benchmark-skill run for the
// skills they are given. The rules that need only a suite or a plan live
// beside each format in pipeline/formats; the commands in cmd/skillgate
// parse flags and call both.
//
// It may import the pipeline stages and runner/store, never the runner's
// root package: nothing here starts a container or calls a model.
package contract
