// Package benchmarkskill reads benchmark-skill's test tree for a suite: a
// repository whose tests/ folder mirrors skills/ by full path, each case a
// folder holding a case.md (front-matter description, ## Prompt, an
// optional role-tagged ## Seed, an optional ## Hard assertions shell block
// over $OUTPUT and $WORLD, and ## Soft criteria) and an optional fixture/
// folder. CUE cannot read Markdown, so Read turns the tree into CUE values
// with positions in the user's files, which the loader fills at
// formats.benchmarkSkill.read for the schema package
// skillgate.dev/schema/formats/benchmarkskill to map onto skills, arms and
// cases. Import writes the small suite that names such a tree.
//
// It imports CUE and pipeline (atomic file writes) only.
package benchmarkskill
