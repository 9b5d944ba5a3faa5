package web

import (
	"context"
	"html"
	"net/http"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine/chain"
)

// The check under an expression field says what the Validation panel says
// about that field: a bare-word comparison (== high) is the validator's
// bare_word_comparison warning, with its fix, under the field (cases and
// edge conditions alike), not a green "✓ JMESPath". The words are the
// validator's own, taken from the chain's issues once the text is saved.
func TestExprFieldCheckShowsTheValidatorsWarning(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	id := createChain(t, ts, `{"name":"bare","nodes":[
		{"node_id":"start","kind":"tool","name":"echo"},
		{"node_id":"route","kind":"condition","cases":[{"handle":"hot","when":"input.level == 'high'"}]},
		{"node_id":"hot","kind":"tool","name":"echo"},
		{"node_id":"cold","kind":"tool","name":"echo"}],
		"edges":[{"id":"in","source":"start","target":"route","condition":"input.go"},
		{"id":"h","source":"route","target":"hot","label":"hot"},
		{"id":"d","source":"route","target":"cold","label":"default"}]}`)
	ch, err := srv.DB.GetChain(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ node, edge, field, src string }{
		{node: "route", field: "cases[0].when", src: "input.level == high"},
		{edge: "in", field: "condition", src: "input.go == yes"},
	} {
		// the Validation panel's words for the field holding src
		doc, ok := chain.WithExpr(ch.Doc, tc.node, tc.edge, tc.field, tc.src)
		if !ok {
			t.Fatalf("%s: no such field", tc.field)
		}
		var want *chain.Issue
		for _, is := range chain.Validate(doc) {
			if is.Rule == chain.RuleBareWordComparison && is.Field == tc.field {
				want = &is
			}
		}
		if want == nil {
			t.Fatalf("%s %q: the validator does not warn", tc.field, tc.src)
		}
		res, body := pageDo(t, ts.URL, "POST", "/fragments/expr", "application/x-www-form-urlencoded",
			form("src", tc.src, "chain", id, "node", tc.node, "edge", tc.edge, "field", tc.field))
		if res.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", res.StatusCode, body)
		}
		got := html.UnescapeString(body)
		if strings.Contains(got, "✓") || !strings.Contains(got, want.Message) || !strings.Contains(got, "bare_word_comparison") {
			t.Errorf("%s %q: the field check says\n%s\nwant the validator's warning\n%s", tc.field, tc.src, got, want.Message)
		}
		if !strings.Contains(got, "to compare with the text, write") {
			t.Errorf("%s: the field check gives no fix: %s", tc.field, got)
		}
	}

	// the quoted text is fine in both places
	_, body := pageDo(t, ts.URL, "POST", "/fragments/expr", "application/x-www-form-urlencoded",
		form("src", "input.level == 'high'", "chain", id, "node", "route", "field", "cases[0].when"))
	if !strings.Contains(body, "✓ JMESPath") {
		t.Errorf("a quoted comparison: %s", body)
	}
	// a case the saved chain lacks yet (a row being added), or an unknown
	// chain: the expression's own verdict, not another field's warnings
	for _, f := range []string{form("src", "input.level == high", "chain", id, "node", "route", "field", "cases[5].when"),
		form("src", "input.level == high", "chain", "nope", "node", "route", "field", "cases[0].when")} {
		res, body := pageDo(t, ts.URL, "POST", "/fragments/expr", "application/x-www-form-urlencoded", f)
		if res.StatusCode != http.StatusOK || !strings.Contains(body, "✓ JMESPath") {
			t.Errorf("%s: status %d: %s", f, res.StatusCode, body)
		}
	}
}
