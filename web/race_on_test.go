//go:build race

package web

// raceOn: the race detector slows text/template 5 to 10 times, so tests
// that render 100 MB of template output skip under it.
const raceOn = true
