//go:build race

package builtin_test

// raceOn: the race detector cannot map its shadow memory in a sandbox
// child under RLIMIT_AS, so memory-limit cases are skipped with it.
const raceOn = true
