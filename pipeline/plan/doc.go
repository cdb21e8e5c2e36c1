// Package plan is the second stage: it compiles a loaded suite into its
// plan, every cell with its rollout and grade keys and every input by digest
// (skill and fixture trees), as canonical JSON with one digest; reads and
// checks plan files; diffs two plans, or a suite at two git revisions,
// saying which cells must run again and why; and names a case's identity.
// It imports package suite, nothing of the later stages.
package plan
