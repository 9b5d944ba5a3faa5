//go:build race

package sandbox

// raceOn: the race detector maps its shadow memory in the child, which a
// child under RLIMIT_AS cannot do; memory tests are skipped with it.
const raceOn = true
