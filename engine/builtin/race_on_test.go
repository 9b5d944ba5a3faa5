//go:build race

package builtin

// raceSlack widens timing bounds under the race detector, which slows
// text/template's reflection 5 to 10 times.
const raceSlack = 5
