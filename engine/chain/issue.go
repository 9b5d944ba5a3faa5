package chain

import "fmt"

// Severity of a validation issue.
type Severity string

const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Issue is one validation finding. Rule is a stable code (documented in
// docs/chain-format.md); NodeID, EdgeID and Field say where.
type Issue struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	NodeID   string   `json:"node_id,omitempty"`
	EdgeID   string   `json:"edge_id,omitempty"`
	Field    string   `json:"field,omitempty"`
	Pos      *int     `json:"position,omitempty"` // byte offset in the field's expression
	// Line and Column (1-based, Column counted in characters) say the same
	// place as Pos the way people read it: every page shows "line L, column C".
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Message string `json:"message"`
}

// ExprPlace returns the 1-based line and column (in characters) of byte
// offset pos in an expression's source: the one convention for error
// positions, in issues and in the designer's field checks alike.
func ExprPlace(src string, pos int) (line, col int) {
	return LineCol([]byte(src), pos)
}

func (i Issue) String() string {
	where := ""
	switch {
	case i.NodeID != "" && i.Field != "":
		where = fmt.Sprintf("node %q %s: ", i.NodeID, i.Field)
	case i.NodeID != "":
		where = fmt.Sprintf("node %q: ", i.NodeID)
	case i.EdgeID != "" && i.Field != "":
		where = fmt.Sprintf("edge %q %s: ", i.EdgeID, i.Field)
	case i.EdgeID != "":
		where = fmt.Sprintf("edge %q: ", i.EdgeID)
	case i.Field != "":
		where = i.Field + ": "
	}
	return fmt.Sprintf("%s%s [%s]", where, i.Message, i.Rule)
}

// HasErrors reports whether any issue is an error.
func HasErrors(issues []Issue) bool {
	for _, i := range issues {
		if i.Severity == SeverityError {
			return true
		}
	}
	return false
}

// ErrorsOnly is the issues of severity error, in order (nil when none).
func ErrorsOnly(issues []Issue) []Issue {
	var out []Issue
	for _, i := range issues {
		if i.Severity == SeverityError {
			out = append(out, i)
		}
	}
	return out
}
