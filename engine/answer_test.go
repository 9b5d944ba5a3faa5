package engine

import (
	"errors"
	"strings"
	"testing"
)

// Every door reads an answer alike: what approve, reject and respond mean,
// and the rules an answer keeps, whatever the pause.
func TestReadAnswer(t *testing.T) {
	t.Parallel()
	v, mod, err := ReadAnswer(AnswerRequest{Action: ActionApprove, Comment: "  ok  "})
	if err != nil || v.Action != ActionApprove || v.Value != nil || v.Comment != "ok" || mod != nil {
		t.Fatalf("approve: %+v %v %v", v, mod, err)
	}
	if v, _, _ := ReadAnswer(AnswerRequest{Action: ActionReject, Value: 1, HasValue: true}); v.Value != nil {
		t.Fatalf("reject keeps no value: %+v", v)
	}
	if v, _, _ := ReadAnswer(AnswerRequest{Value: 2.0, HasValue: true}); v.Action != "" || v.Value != 2.0 {
		t.Fatalf("a bare value: %+v", v)
	}
	patch := map[string]any{"k": 1}
	if v, mod, err := ReadAnswer(AnswerRequest{Modified: patch}); v != nil || mod["k"] != 1 || err != nil {
		t.Fatalf("a failed run's resume: %+v %v %v", v, mod, err)
	}
	for _, c := range []struct {
		req         AnswerRequest
		field, code string
	}{
		{AnswerRequest{Action: "maybe"}, "action", CodeInvalidAnswer},
		{AnswerRequest{Action: ActionApprove, Comment: strings.Repeat("é", MaxAnswerComment+1)}, "comment", CodeInvalidAnswer},
		{AnswerRequest{Action: ActionRespond}, "value", CodeInvalidAnswer},
		{AnswerRequest{Comment: "why"}, "comment", CodeInvalidAnswer},
		{AnswerRequest{Action: ActionApprove, Modified: patch}, "modified_state", CodeAnswerPatchesState},
	} {
		_, _, err := ReadAnswer(c.req)
		var re *AnswerRuleError
		if !errors.As(err, &re) || re.Field != c.field || re.Code() != c.code {
			t.Errorf("%+v: %v, want %s on %s", c.req, err, c.code, c.field)
		}
	}
	if _, _, err := ReadAnswer(AnswerRequest{Action: ActionApprove, Comment: strings.Repeat("é", MaxAnswerComment)}); err != nil {
		t.Errorf("a comment at the limit: %v", err)
	}
}
