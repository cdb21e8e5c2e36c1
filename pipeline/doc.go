// Package pipeline holds skillgate's pure stages, one package each, in the
// order a run goes through them:
//
//	runfolder  the names of a run folder's files and folders, each defined once
//	formats    read other systems' own files (gstack, chrisbanes, ...) into suites
//	suite      load and vet a suite (CUE), the Go mirror of the schema, vendoring, scaffolds
//	plan       compile a suite into its content-addressed plan, trees, keys, diffs, git revisions
//	mutate     a skill's mutants (parts broken on purpose) and the plan of a mutate run
//	grade      grade a cell from its stored rollout, the judge's packets and replies, the audit
//	inference  paired, case-clustered comparisons, power, sequential tests: the statistics
//	verdict    metrics, the policy's rules, reruns, identity, the paired gate: a verdict
//	report     render a verdict's report in every format
//
// Each stage imports only the stages above it, so the compiler keeps the
// order. Nothing here starts a container or calls a model: package runner
// does, and hands the stages what it stored. This package holds what every
// stage shares: skillgate's version and atomic file writes.
package pipeline
