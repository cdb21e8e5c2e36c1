// Package verdict is the fourth stage: from a plan and one graded result per
// cell it computes every arm's metrics ({value, samples}, absent when no
// sample applies), evaluates the policy's rules (data, never code) with the
// reruns of red panels, names every input's identity, and decides the
// verdict with its reasons and exit code; the paired gate compares two runs
// this way. Every rule that compares arms carries the paired inference of
// package inference beside its own figures. It imports packages suite,
// plan, grade and inference, never report.
package verdict
