package views

import (
	"encoding/json"

	"github.com/chainstudio/studio/engine"
)

// reasonTexts words every reason the engine puts on an event or a node
// result. It is the one table of them: the server renders it, and the run
// page hands it to run.js (RunPage's data-reasons) for the events it
// applies live. reasons_test.go checks that each engine Reason constant has
// an entry.
var reasonTexts = map[string]string{
	engine.ReasonConditionFalse:  "condition false: no incoming edge fired",
	engine.ReasonBranchNotTaken:  "branch not taken: the router chose another edge",
	engine.ReasonUpstreamStopped: "upstream stopped: the run stopped before this node could run",
	engine.ReasonOnErrorSkip:     "on_error skip: the node failed and its error policy is skip",
	engine.ReasonNotNeeded:       "not needed: an error handler nobody needed, or a node marked reachable: false",
	engine.ReasonGuardFailed:     "guard failed: the guard of the edge into this node could not be evaluated; the node did not run and its on_error applied",
	engine.ReasonRetrying:        "retrying",
	engine.ReasonPinned:          "pinned: the output comes from the source run or was given; the node did not run",
	engine.ReasonNoOutput:        "no output: in the source run the node finished without one; it reads as null",
}

// ReasonText explains a reason in words (an unknown reason as itself).
func ReasonText(r string) string {
	if t, ok := reasonTexts[r]; ok {
		return t
	}
	return r
}

// reasonTextsJSON is the table as a JSON object, for run.js.
var reasonTextsJSON = func() string {
	b, err := json.Marshal(reasonTexts)
	if err != nil {
		panic("views: reason texts do not encode: " + err.Error())
	}
	return string(b)
}()
