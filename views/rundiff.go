package views

import (
	"math"
	"strings"
	"unicode/utf8"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/inspect"
)

// Helpers of the page comparing two runs (rundiff.templ).

func divergenceID(d *inspect.RunDiff) string {
	if d == nil || d.Divergence == nil {
		return ""
	}
	return d.Divergence.NodeID
}

// whatText names what differs at a node, in words.
func whatText(what []string) string {
	words := map[string]string{
		inspect.DiffStatus: "status", inspect.DiffError: "error", inspect.DiffRoute: "route taken",
		inspect.DiffOutput: "output", inspect.DiffAdded: "only in B's chain", inspect.DiffRemoved: "only in A's chain",
	}
	out := make([]string, len(what))
	for i, w := range what {
		if t, ok := words[w]; ok {
			out[i] = t
		} else {
			out[i] = w
		}
	}
	return strings.Join(out, ", ")
}

func runErrText(e *engine.RunError) string {
	if e == nil {
		return "none"
	}
	if e.NodeID != "" {
		return e.Code + " at " + e.NodeID
	}
	return e.Code
}

// shortID is the start of a run id, enough to tell runs apart on a page.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func sideDuration(s *inspect.NodeSide) string {
	if s == nil || s.DurationMS == nil {
		return "—"
	}
	return duration(*s.DurationMS)
}

// deltaText is a duration change with its sign: "+12 ms", "−1.4 s"; under
// a millisecond either way it is "< 1 ms", too small to have a direction.
func deltaText(ms float64) string {
	switch {
	case ms == 0:
		return "no change"
	case math.Abs(ms) < 1:
		return duration(math.Abs(ms))
	case ms > 0:
		return "+" + duration(ms)
	}
	return "−" + duration(-ms)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func sameList(a, b []string) bool {
	return strings.Join(a, "\x00") == strings.Join(b, "\x00") && len(a) == len(b)
}

// edgeList names fired edges ("nothing" for none).
func edgeList(ids []string) string {
	if len(ids) == 0 {
		return "nothing"
	}
	return strings.Join(ids, ", ")
}

// compareLabel is one option of "Compare with…": which run, its status and
// version, and when it started; the default one says it is the previous
// (or next) run.
func compareLabel(o CompareOption) string {
	r := &o.Run
	s := shortID(r.ID) + " · " + statusText(string(r.Status))
	if r.ChainVersion > 0 {
		s += " · v" + itoa(r.ChainVersion)
	}
	s += " · " + ago(r.Started)
	if o.Default && o.Newer {
		s += " (next run)"
	} else if o.Default {
		s += " (previous run)"
	}
	return s
}

// maxInputText is how much of a run's input the comparison page prints
// (pretty JSON bytes); the changed paths above it are listed in full.
const maxInputText = 8 << 10

// inputText is a run's input as indented JSON, cut at maxInputText bytes.
func inputText(in map[string]any) string {
	if in == nil {
		in = map[string]any{}
	}
	t := pretty(in)
	if len(t) <= maxInputText {
		return t
	}
	cut := maxInputText
	for cut > 0 && !utf8.RuneStart(t[cut]) {
		cut--
	}
	return t[:cut] + "\n… (the first " + itoa(cut) + " of " + itoa(len(t)) + " bytes)"
}
