package ops

import "github.com/chainstudio/studio/engine/chain"

// DecodeProblem is one reason a document does not decode, with where it is:
// the decoder's path and the 1-based line and column in the document.
type DecodeProblem struct {
	Path    string `json:"path,omitempty"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Message string `json:"message"`
}

// DecodeProblems lists every reason data does not decode (chain.DecodeAll
// says how far it looks); nil when it decodes.
func DecodeProblems(data []byte, lim chain.Limits) []DecodeProblem {
	_, ps := chain.DecodeAll(data, lim)
	if ps == nil {
		return nil
	}
	out := make([]DecodeProblem, len(ps))
	for i, p := range ps {
		out[i] = DecodeProblem{Path: p.Path, Line: p.Line, Column: p.Column, Message: p.Message}
	}
	return out
}
