package suite

// Retry is how the gateway retries a provider's transient errors (schema
// #Limits.retry); durations as written in CUE.
type Retry struct {
	Attempts int    `json:"attempts"`
	Delay    string `json:"delay"`
	MaxDelay string `json:"maxDelay"`
}
