//go:build !race

package builtin_test

const raceOn = false
