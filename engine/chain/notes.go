package chain

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode"

	"github.com/chainstudio/studio/engine/internal/clip"
)

// Note is a sticky note on the designer's canvas: text at a place, kept in
// the chain document so it travels with the chain (export, versions), and
// ignored by validation and execution.
type Note struct {
	ID       string   `json:"id"`
	Text     string   `json:"text"`
	Position Position `json:"position"`
	Width    float64  `json:"width,omitempty"`  // canvas units; 0 = the designer's default
	Height   float64  `json:"height,omitempty"` // canvas units; 0 = the designer's default
}

// Bounds of the notes of one chain: enough for any real canvas, small
// enough that notes cannot be used to bloat a document.
const (
	MaxNotes         = 500
	MaxNoteTextBytes = 4 << 10
	MaxNoteSize      = 4000 // width and height, canvas units
	maxNoteCoord     = 1e7  // |x|, |y|
	minNoteSize      = 40   // a note smaller than this cannot be grabbed
	noteIDPathBytes  = 64   // how much of an id an error repeats
)

// decodeNotes decodes the notes strictly (unknown fields are errors), with
// a path that names the note in every error.
func decodeNotes(raws []json.RawMessage, lim Limits) ([]Note, error) {
	if raws == nil {
		return nil, nil
	}
	if len(raws) > MaxNotes {
		return nil, &DecodeError{Path: "notes", Rule: DecodeOverLimit, Msg: fmt.Sprintf("%d notes, over the limit of %d", len(raws), MaxNotes)}
	}
	out := make([]Note, 0, len(raws))
	seen := make(map[string]int, len(raws))
	for i, raw := range raws {
		path := fmt.Sprintf("notes[%d]", i)
		var n Note
		if err := strictUnmarshalAt(path, raw, &n); err != nil {
			return nil, err
		}
		if n.ID != "" {
			path += fmt.Sprintf(" %q", clip.String(n.ID, noteIDPathBytes))
		}
		bad := func(field, msg string) error { return &DecodeError{Path: path + "." + field, Msg: msg} }
		switch {
		case n.ID == "":
			return nil, bad("id", "is required")
		case len(n.ID) > lim.MaxIDLength:
			return nil, bad("id", fmt.Sprintf("is %d bytes, over the limit of %d", len(n.ID), lim.MaxIDLength))
		case strings.IndexFunc(n.ID, unicode.IsControl) >= 0:
			return nil, bad("id", "may not contain control characters")
		case len(n.Text) > MaxNoteTextBytes:
			return nil, bad("text", fmt.Sprintf("is %d bytes, over the limit of %d", len(n.Text), MaxNoteTextBytes))
		case math.Abs(n.Position.X) > maxNoteCoord || math.Abs(n.Position.Y) > maxNoteCoord:
			return nil, bad("position", fmt.Sprintf("is off the canvas (|x| and |y| at most %g)", float64(maxNoteCoord)))
		}
		for _, f := range []struct {
			name string
			v    float64
		}{{"width", n.Width}, {"height", n.Height}} {
			if f.v != 0 && (f.v < minNoteSize || f.v > MaxNoteSize) {
				return nil, bad(f.name, fmt.Sprintf("must be between %d and %d (or left out), got %g", minNoteSize, MaxNoteSize, f.v))
			}
		}
		if j, dup := seen[n.ID]; dup {
			return nil, bad("id", fmt.Sprintf("duplicate note id %q (also notes[%d])", n.ID, j))
		}
		seen[n.ID] = i
		out = append(out, n)
	}
	return out, nil
}
