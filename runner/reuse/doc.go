// Package reuse takes stored rollouts from another run folder, a pack of
// one (skillgate export), or the machine's cache (FromCache: what runs kept
// there, Keep), into a run folder before its cells run, by
// key only: a rollout is taken when the run's plan has a cell of its exact
// rollout key, which digests everything the session depends on (agent,
// model, sampling, prompt, fixture, skills, limits), so a skill edit
// leaves the no-skill arm's keys, and its stored cells, as they were.
//
// Every record is verified as merge verifies it before it is taken: its
// seal, the key it names, its answer, transcript and changed files against
// their digests, the fixture and skills it ran against the cell's, its
// exchange log and bodies against theirs. A record that fails is not
// taken, and named. What is taken is copied into the run folder, which
// stays self-contained, and listed in reused.json (FileLedger) with where
// it came from and when it ran, so reports can say which cells were
// reused and how old they are.
package reuse
