// Package mutate derives a skill's mutants: copies of its tree with one
// part broken or removed (a section of SKILL.md deleted, a reference file
// removed, the body emptied, the description blanked, swapped or cut, a
// single-line rule inverted), each a whole tree named by what was done. A
// suite that cannot tell the skill from a mutant cannot certify the part
// the mutant broke: the mutants run as arms beside the skill's own, and
// the kill rate says how many the suite noticed.
//
// It is a stage after plan: it derives mutants from a skill's files,
// writes each as a folder, and compiles the plan of a mutate run (Plan);
// nothing here runs a cell. Package verdict compares the arms (Adequacy).
package mutate
