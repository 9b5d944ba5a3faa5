package chain

// Defaults used when a chain or host sets none.
const (
	DefaultTimeout        = 300 // seconds, as in A2E
	DefaultMaxConcurrency = 64
	DefaultMaxDepth       = 5
)
