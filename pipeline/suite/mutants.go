package suite

// Mutants says which mutants `skillgate mutate` derives from a suite's
// skills and in which arms they run (schema #Mutants).
type Mutants struct {
	Operators         []string `json:"operators"`
	DescriptionBudget int      `json:"descriptionBudget"`
	// Arms are the activations of the arms content and description
	// mutants run in.
	Arms struct {
		Content     string `json:"content"`
		Description string `json:"description"`
	} `json:"arms"`
	// Folders are hand-written mutants by ID.
	Folders map[string]MutantFolder `json:"folders"`
}

// MutantFolder is a hand-written mutant: a skill folder standing in for
// the suite's skill Skill.
type MutantFolder struct {
	Skill string `json:"skill"`
	Path  string `json:"path"`
}
