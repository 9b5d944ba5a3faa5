package views

import (
	"sort"
	"unicode/utf8"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
)

// Approvals carry their context: the inbox card and the run page show the
// rendered prompt and, as a small table, the fields the approval names
// (config.fields) or else the proposed value's top-level fields, so a person
// decides without opening "Proposed value".

// maxAskColumns bounds the table: a wide proposed value shows its first
// fields (by name) and says how many more there are.
const maxAskColumns = 8

// maxAskText is where a field's text is cut (its whole text is the cell's
// title).
const maxAskText = 80

// askFields are the fields an approval shows and how many it left out.
func askFields(a *engine.ApprovalInfo) (fields []engine.ApprovalField, more int) {
	if a == nil {
		return nil, 0
	}
	if len(a.Fields) > 0 {
		return a.Fields, 0
	}
	m, ok := a.Proposed.(map[string]any)
	if !ok || len(m) == 0 {
		return nil, 0
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) > maxAskColumns {
		more, keys = len(keys)-maxAskColumns, keys[:maxAskColumns]
	}
	for _, k := range keys {
		fields = append(fields, engine.ApprovalField{Label: k, Value: m[k]})
	}
	return fields, more
}

// askFieldsCaption says where the table's fields come from.
func askFieldsCaption(a *engine.ApprovalInfo) string {
	if a != nil && len(a.Fields) > 0 {
		return "What this approval is about"
	}
	return "The proposed value's fields"
}

// askText is a field's value in a cell: text as it is, anything else as
// compact JSON, cut at maxAskText characters.
func askText(v any) string {
	s := jsonText(v)
	if v == nil {
		s = "null"
	}
	if utf8.RuneCountInString(s) <= maxAskText {
		return s
	}
	r := []rune(s)
	return string(r[:maxAskText-1]) + "…"
}

// askTitle is the cell's title: the whole value when the cell cuts it.
func askTitle(v any) string {
	s := jsonText(v)
	if utf8.RuneCountInString(s) <= maxAskText {
		return ""
	}
	return s
}

// rejectedRun reports whether a person's "no" decided how r ended.
func rejectedRun(r *store.Run) bool { return r.Outcome == engine.OutcomeRejected }
