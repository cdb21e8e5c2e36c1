// Package inference says whether a difference between two arms is more
// than noise. Cells pair on (case, trial); the independent unit is the
// case, and trials of one case are repeated measures of it, never counted
// as independent. A comparison gives an estimate, a 95% interval and a
// two-sided p-value from methods exact at the sizes people run (a few
// cases, three trials), each naming its method; resampling is seeded from
// the plan digest, so the same evidence gives the same numbers byte for
// byte. It also plans power before a run (Connor's paired formula and
// exact power) and holds an anytime-valid sequential test with a futility
// rule. It imports nothing of the other stages: verdict calls it.
package inference
