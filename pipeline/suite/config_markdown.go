package suite

// BulletCheck checks the top-level bullets of a Markdown section
// (#BulletCheck): some bullet matches every expression of Matches and
// links to each of Links.
type BulletCheck struct {
	Heading string   `json:"heading"`
	Matches []string `json:"matches"`
	Links   []string `json:"links"`
}

// TaskGraphCheck checks the task graph of a Markdown plan
// (#TaskGraphCheck); each required edge is [task, dependency].
type TaskGraphCheck struct {
	RequiredEdges  [][2]string     `json:"requiredEdges"`
	Acyclic        bool            `json:"acyclic"`
	SeparateSlices []SeparateSlice `json:"separateSlices,omitempty"`
}

// SeparateSlice is an independent behaviour of a plan (#SeparateSlice):
// the files one slice alone must own, and the symbols no other slice may
// implement.
type SeparateSlice struct {
	ID      string   `json:"id"`
	Files   []string `json:"files"`
	Symbols []string `json:"symbols,omitempty"`
}
