//go:build !race

package builtin

const raceSlack = 1
