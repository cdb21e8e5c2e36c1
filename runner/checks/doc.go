// Package checks is what a `run:` check session is made of, shared by the
// grading of stored rollouts, the preflight and a case's setup: the folder a
// check is given (CheckDir: the answer, the lists of deleted paths), the
// case's folder mounted read-only (CaseDirMount), the session's limits and
// its output cap, the archives of a cell's final workspace rebuilt from its
// stored changes (CheckWorld), the start of a session holding that
// workspace (StartCheckSession) and a command's outcome as a check result
// (CheckResult); and the calibration checks of an agent (calibration.go:
// the synthetic cells that ask it to quote a skill's line, to name no skill,
// to run a command, and the grading of its answers).
//
// Its files: session.go the session's folders, limits, start and outcome;
// world.go the final workspace's archives; calibration.go the calibration
// cells.
//
// It reaches the engine through runner/backend alone and may import
// runner/images (the agent's user), runner/store and the pipeline's plan,
// suite and grade; never the runner's root package, whose grader
// (grade.go: runChecks) and preflight (preflight_run.go) drive the sessions
// and whose calibrate.go runs the calibration cells.
package checks
