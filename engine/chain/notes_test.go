package chain

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDecodeNotesRoundTripAndIgnoredByValidation(t *testing.T) {
	doc := `{"name":"n","nodes":[{"node_id":"a","kind":"tool","name":"echo"}],
		"notes":[{"id":"n1","text":"Why this step?\nAsk Ana.","position":{"x":10,"y":-20},"width":220,"height":120}]}`
	c, err := Decode([]byte(doc), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := Note{ID: "n1", Text: "Why this step?\nAsk Ana.", Position: Position{X: 10, Y: -20}, Width: 220, Height: 120}
	if len(c.Notes) != 1 || c.Notes[0] != want {
		t.Fatalf("notes = %+v, want [%+v]", c.Notes, want)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Decode(b, Limits{})
	if err != nil || len(again.Notes) != 1 || again.Notes[0] != want {
		t.Fatalf("re-decoded notes = %+v, %v", again, err)
	}
	// a note changes nothing the validator says
	bare, _ := Decode([]byte(`{"name":"n","nodes":[{"node_id":"a","kind":"tool","name":"echo"}]}`), Limits{})
	if got, base := len(Validate(c)), len(Validate(bare)); got != base {
		t.Errorf("validation with a note gave %d issues, without %d", got, base)
	}
}

func TestDecodeNotesErrors(t *testing.T) {
	many := make([]string, MaxNotes+1)
	for i := range many {
		many[i] = `{"id":"n` + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + `","text":"","position":{"x":0,"y":0}}`
	}
	cases := []struct{ notes, path, phrase string }{
		{`[{"id":"n1","text":"x","position":{"x":0,"y":0},"colour":"red"}]`, `notes[0]`, "colour"},
		{`[{"text":"x","position":{"x":0,"y":0}}]`, `notes[0].id`, "is required"},
		{`[{"id":"n1","text":"` + strings.Repeat("x", MaxNoteTextBytes+1) + `","position":{"x":0,"y":0}}]`, `notes[0] "n1".text`, "over the limit"},
		{`[{"id":"n1","text":"x","position":{"x":0,"y":0},"width":5}]`, `notes[0] "n1".width`, "between 40 and 4000"},
		{`[{"id":"n1","text":"x","position":{"x":1e9,"y":0}}]`, `notes[0] "n1".position`, "off the canvas"},
		{`[{"id":"n1","text":"x","position":{"x":0,"y":0}},{"id":"n1","text":"y","position":{"x":0,"y":0}}]`, `notes[1] "n1".id`, "duplicate note id"},
		{`[` + strings.Join(many, ",") + `]`, `notes`, "over the limit of 500"},
		{`{"id":"n1"}`, `notes`, "array"},
	}
	for _, tc := range cases {
		_, err := Decode([]byte(`{"name":"n","nodes":[],"notes":`+tc.notes+`}`), Limits{})
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("%.60s: want a DecodeError, got %v", tc.notes, err)
			continue
		}
		if !strings.HasPrefix(de.Path, tc.path) || !strings.Contains(err.Error(), tc.phrase) {
			t.Errorf("%.60s: got path %q, error %q; want path %q and %q", tc.notes, de.Path, err, tc.path, tc.phrase)
		}
	}
}
