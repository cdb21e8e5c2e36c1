// Package chrisbanes reads what CUE's @embed cannot of a chrisbanes/skills
// evals tree (which case folders have an overlay/, the RE2 form of each
// Python pattern), refuses in vet what skillgate cannot check, with the
// position in the user's case.json or expectations.json, and writes the
// small suite that names such a tree (Import). The mapping of the files
// to cases and arms is the CUE package skillgate.dev/schema/formats/chrisbanes.
package chrisbanes
