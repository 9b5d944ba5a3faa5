package chain

// Pinned outputs (docs/chain-format.md, "Pinned outputs"): node id → the
// output a node gives in the designer's runs of the draft instead of
// running, as n8n pins a node's data. They live in the document, so they
// travel with the draft (versions, export, import), but only a run that
// asks for them uses them (engine.RunOptions.UsePins): published runs,
// triggers, runs by name, skill calls, MCP tools and A2E never do. Compile
// skips their checks, so a stale pin never stops a chain from running or
// being published; a run that uses them checks them first (PinIssues).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/chainstudio/studio/engine/internal/clip"
)

// Pin validation rules (see the table in validate.go).
const (
	RulePinUnknownNode = "pin_unknown_node" // pinned_outputs names no node
	RulePinRouter      = "pin_router"       // a pin on a branch or condition node
)

// PinsField is the pinned_outputs field of a document.
const PinsField = "pinned_outputs"

// PinField is the place of node id's pin in issues: `pinned_outputs.fetch`.
func PinField(id string) string { return PinsField + "." + id }

// Pinnable reports whether a node of kind k may have its output pinned:
// every kind but the routers. A branch or condition node's output is its
// input and its work is choosing the route, so a pin could only hide that
// choice (the engine never mocks a router either); pin the node before it.
// An interrupt's pin is the answer it gets (the run does not pause); a map
// or parallel node's pin stands for the whole fan-out; a map body's or
// parallel branch's pin answers every item or branch alike.
func Pinnable(k Kind) bool { return k != KindBranch && k != KindCondition }

// decodePins decodes the pinned outputs: each value any JSON, each key at
// most MaxIDLength bytes without control characters, at most MaxNodes of
// them, and all of them together at most MaxPinnedBytes of compact JSON.
// The error names the pin: `pinned_outputs.fetch: is 3000000 bytes …`.
func decodePins(raws map[string]json.RawMessage, lim Limits) (map[string]any, error) {
	if raws == nil {
		return nil, nil
	}
	if len(raws) > lim.MaxNodes {
		return nil, &DecodeError{Path: PinsField, Rule: DecodeOverLimit, Msg: fmt.Sprintf("%d pinned outputs, over the limit of %d (one per node at most)", len(raws), lim.MaxNodes)}
	}
	out := make(map[string]any, len(raws))
	total, largest, largestID := 0, -1, ""
	var buf bytes.Buffer
	for _, id := range sortedKeys(raws) {
		path := PinField(clip.String(id, 64))
		switch {
		case id == "":
			return nil, &DecodeError{Path: path, Rule: DecodeBadValue, Msg: "a pinned output needs the node id it belongs to (the key is empty)"}
		case len(id) > lim.MaxIDLength:
			return nil, &DecodeError{Path: path, Rule: DecodeOverLimit, Msg: fmt.Sprintf("the node id is %d bytes, over the limit of %d", len(id), lim.MaxIDLength)}
		case strings.IndexFunc(id, unicode.IsControl) >= 0:
			return nil, &DecodeError{Path: path, Rule: DecodeBadValue, Msg: "the node id may not contain control characters"}
		}
		buf.Reset()
		if err := json.Compact(&buf, raws[id]); err != nil {
			return nil, jsonError(path, err, raws[id])
		}
		size := buf.Len()
		total += size
		if size > largest {
			largest, largestID = size, id
		}
		var v any
		if err := json.Unmarshal(buf.Bytes(), &v); err != nil {
			return nil, jsonError(path, err, raws[id])
		}
		out[id] = NormalizeValue(v)
	}
	if total > lim.MaxPinnedBytes {
		return nil, &DecodeError{Path: PinField(clip.String(largestID, 64)), Rule: DecodeOverLimit,
			Msg: fmt.Sprintf("is %d bytes of JSON, and the pinned outputs together are %d bytes, over the limit of %d: pin a smaller output, or unpin this one", largest, total, lim.MaxPinnedBytes)}
	}
	return out, nil
}

// PinIssues checks the chain's pinned outputs: each must name a node whose
// kind can be pinned. A run that uses the pins (the designer's) is refused
// while any is wrong, rather than run a pin the engine would ignore.
func PinIssues(c *Chain) []Issue {
	if c == nil || len(c.PinnedOutputs) == 0 {
		return nil
	}
	kinds := make(map[string]Kind, len(c.Nodes))
	for i := range c.Nodes {
		if _, dup := kinds[c.Nodes[i].ID]; !dup {
			kinds[c.Nodes[i].ID] = c.Nodes[i].Kind
		}
	}
	var out []Issue
	for _, id := range sortedKeys(c.PinnedOutputs) {
		k, ok := kinds[id]
		switch {
		case !ok:
			out = append(out, Issue{Rule: RulePinUnknownNode, Severity: SeverityError, Field: PinField(id),
				Message: fmt.Sprintf("no node %q: its node was removed or renamed; unpin it", clip.String(id, 64))})
		case !Pinnable(k):
			out = append(out, Issue{Rule: RulePinRouter, Severity: SeverityError, NodeID: id, Field: PinField(id),
				Message: fmt.Sprintf("node %q is a %s: it passes its input on and only decides the route, so its output cannot be pinned; pin the node before it instead", id, k)})
		}
	}
	return out
}

// checkPins adds the pin issues (group 4, after the tests).
func (v *validator) checkPins() {
	for i, is := range PinIssues(v.c) {
		v.issues = append(v.issues, keyed{Issue: is, group: 4, index: i})
	}
}
