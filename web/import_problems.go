package web

import (
	"github.com/chainstudio/studio/engine"
)

// decodeProblem is one reason a document does not decode, with where it is:
// the decoder's path and the 1-based line and column in the document.
type decodeProblem struct {
	Path    string `json:"path,omitempty"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Message string `json:"message"`
}

// decodeProblems lists every reason data does not decode (engine.DecodeAll
// says how far it looks); nil when it decodes.
func decodeProblems(data []byte, lim engine.Limits) []decodeProblem {
	_, ps := engine.DecodeAll(data, lim)
	if ps == nil {
		return nil
	}
	out := make([]decodeProblem, len(ps))
	for i, p := range ps {
		out[i] = decodeProblem{Path: p.Path, Line: p.Line, Column: p.Column, Message: p.Message}
	}
	return out
}
