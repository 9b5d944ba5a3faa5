package chain

import (
	"strings"
	"testing"
)

const exprHelpDoc = `{"name":"x","nodes":[
	{"node_id":"fetch","kind":"tool","name":"echo","on_error":"fix"},
	{"node_id":"fix","kind":"tool","name":"echo","input_map":{"why":"error.message"}},
	{"node_id":"each","kind":"map","items_path":"output.items","map_node":"body"},
	{"node_id":"body","kind":"tool","name":"echo","input_map":{"it":"item"}},
	{"node_id":"ask","kind":"interrupt","config":{"prompt":"ok?"}},
	{"node_id":"route","kind":"branch","condition":"outptu.ok"},
	{"node_id":"done","kind":"tool","name":"echo","input_map":{"a":"fecth.output"}}],
	"edges":[{"source":"fetch","target":"each"},{"source":"each","target":"ask"},{"source":"ask","target":"route"},
	{"id":"yes","source":"route","target":"done","label":"true","condition":"output.ok == yes"}]}`

func TestExprFieldContextNamesPerField(t *testing.T) {
	t.Parallel()
	c, err := Decode([]byte(exprHelpDoc), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		node, edge, field string
		names, upstream   string
	}{
		{"route", "", "condition", "output,input,state,node_results,trigger", "ask,each,fetch"}, // body runs inside each; fix only when fetch failed
		{"each", "", "items_path", "output,input,state,node_results,trigger", "fetch"},
		{"body", "", "input_map.it", "output,input,state,node_results,trigger,steps,when,item,index", "each,fetch"},
		{"fix", "", "input_map.why", "output,input,state,node_results,trigger,steps,when,error", "fetch"},
		{"ask", "", "input_map.x", "output,input,state,node_results,trigger,steps,when,resume", "each,fetch"},
		{"fetch", "", "set_state.k", "output,input,state,node_results,trigger", ""},
		{"", "yes", "condition", "output,input,state,node_results,trigger", "ask,each,fetch,route"},
	}
	for _, tt := range tests {
		f, err := ExprFieldContext(c, tt.node, tt.edge, tt.field)
		if err != nil {
			t.Errorf("%s%s %s: %v", tt.node, tt.edge, tt.field, err)
			continue
		}
		if got := strings.Join(f.Names, ","); got != tt.names {
			t.Errorf("%s%s %s: names %s, want %s", tt.node, tt.edge, tt.field, got, tt.names)
		}
		if got := strings.Join(f.Upstream, ","); got != tt.upstream {
			t.Errorf("%s%s %s: upstream %s, want %s", tt.node, tt.edge, tt.field, got, tt.upstream)
		}
	}
	for _, bad := range [][3]string{{"fetch", "", "condition"}, {"nosuch", "", "condition"}, {"", "nosuch", "condition"}, {"", "yes", "items_path"}, {"body", "", "input_map."}} {
		if _, err := ExprFieldContext(c, bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

func TestValidateSuggestsNames(t *testing.T) {
	t.Parallel()
	c, err := Decode([]byte(exprHelpDoc), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, is := range Validate(c) {
		msgs = append(msgs, is.Message)
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{
		`condition reads outptu, which is neither a node nor a context name (` + strings.Join(ReservedNames, ", ") + `); it is always null; did you mean output?`,
		`input_map.a reads fecth, but there is no node "fecth" (context names: ` + strings.Join(ReservedNames, ", ") + `); did you mean fetch?`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no issue %q in\n%s", want, all)
		}
	}
}
