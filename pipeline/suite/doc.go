// Package suite is the first stage: it loads a suite's CUE package with the
// embedded schema, vets it (CUE's errors at the user's positions, then the
// checks CUE cannot make: folders on disk, references between skills, arms
// and routing, regular expressions, sizes), and decodes it into the Go
// mirror of the schema (Suite, Case, Arm, Agent, Judge, Limits, Policy),
// which carries no default of its own. It also vendors the schema into a
// suite's cue.mod, reads policy presets, and scaffolds new suites. It
// imports only the schema.
package suite
