package plan

// MutantArm is one arm of a mutate run (skillgate mutate): a copy of the
// arm Against with a mutant of skill Skill installed under the skill's
// name instead of the skill.
type MutantArm struct {
	Arm     string `json:"arm"`
	Against string `json:"against"`
	// Mutant is the mutant's ID, Operator how it was made, What what was
	// done, in words; Section the SKILL.md section a section mutant deletes.
	Mutant   string `json:"mutant"`
	Skill    string `json:"skill"`
	Operator string `json:"operator"`
	What     string `json:"what"`
	Section  string `json:"section,omitempty"`
}
