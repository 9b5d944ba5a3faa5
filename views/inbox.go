package views

import (
	"fmt"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
)

// InboxFilter is what the inbox shows: its filters and the chains to pick.
type InboxFilter struct {
	Text    string
	ChainID string
	RunID   string // one run's (the run page links here)
	Sort    string
	Chains  []store.ChainSummary
	Limit   int
	Full    bool // the page is full: more may wait
	// Labels are the node labels of the items' chains, by chain id.
	Labels map[string]Labels
}

// pauseNodeID is the node a pause id belongs to: the id up to a map item's
// or branch's "[k]" or a sub-chain's "/inner" ("review[1]/approve" is
// review's).
func pauseNodeID(pauseID string) string {
	if k := strings.IndexAny(pauseID, "[/"); k > 0 {
		return pauseID[:k]
	}
	return pauseID
}

// Filtered reports whether any filter is set.
func (f InboxFilter) Filtered() bool { return f.Text != "" || f.ChainID != "" || f.RunID != "" }

// inboxFormSchema is the answer schema as the form's JSON (a schema form
// edits objects; other answers are typed as JSON).
func inboxFormSchema(it store.Interrupt) (string, bool) {
	a := it.Approval
	if a == nil {
		return "", false
	}
	if a.Schema == nil {
		_, obj := a.Proposed.(map[string]any)
		return "", obj
	}
	if t, _ := a.Schema["type"].(string); t != "object" {
		return "", false
	}
	return SchemaJSON(a.Schema), true
}

func proposedJSON(it store.Interrupt) string {
	if it.Approval == nil || it.Approval.Proposed == nil {
		return ""
	}
	return pretty(it.Approval.Proposed)
}

// dueText says when a deadline falls, relative to now.
func dueText(t time.Time) string {
	d := time.Until(t)
	switch {
	case d <= 0:
		return "overdue"
	case d < time.Minute:
		return "due in under a minute"
	case d < time.Hour:
		return fmt.Sprintf("due in %d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("due in %d h %d min", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("due in %d days", int(d.Hours()/24))
}

// onTimeoutText says what the deadline does (", then …").
func onTimeoutText(a *engine.ApprovalInfo) string {
	if a == nil {
		return ""
	}
	switch a.OnTimeout {
	case chain.OnTimeoutReject:
		return ", then it is rejected"
	case chain.OnTimeoutDefault:
		return ", then the default answer is given"
	case chain.OnTimeoutEdge:
		return ", then the timeout path is taken"
	}
	return ""
}

func actionText(a string) string {
	switch a {
	case engine.ActionApprove:
		return "approved"
	case engine.ActionReject:
		return "rejected"
	case engine.ActionTimeout:
		return "timed out"
	}
	return "responded"
}
