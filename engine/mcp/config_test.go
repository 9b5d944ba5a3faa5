package mcp

import (
	"net/http"
	"strings"
	"testing"
)

func TestConfigIsCheckedBeforeAnythingStarts(t *testing.T) {
	t.Parallel()
	hc := &http.Client{}
	cases := []struct {
		srv  Server
		opts Options
		want string
	}{
		{Server{Name: "", Transport: TransportHTTP, URL: "http://x"}, Options{HTTPClient: hc}, "empty"},
		{Server{Name: "a b", Transport: TransportHTTP, URL: "http://x"}, Options{HTTPClient: hc}, "letters, digits"},
		{Server{Name: strings.Repeat("a", 65), Transport: TransportHTTP, URL: "http://x"}, Options{HTTPClient: hc}, "longer than 64"},
		{Server{Name: "a", Transport: "ws", URL: "http://x"}, Options{HTTPClient: hc}, "not one of"},
		{Server{Name: "a", Transport: TransportHTTP, URL: "http://x"}, Options{}, "no HTTP client"},
		{Server{Name: "a", Transport: TransportSSE, URL: "http://x"}, Options{}, "no HTTP client"},
		{Server{Name: "a", Transport: TransportHTTP, URL: "file:///etc/passwd"}, Options{HTTPClient: hc}, "not an http or https URL"},
		{Server{Name: "a", Transport: TransportHTTP, URL: "http://u:p@x"}, Options{HTTPClient: hc}, "user or password"},
		{Server{Name: "a", Transport: TransportHTTP, URL: "http://x", Headers: map[string]string{"Mcp-Session-Id": "1"}}, Options{HTTPClient: hc}, "set by the transport"},
		{Server{Name: "a", Transport: TransportHTTP, URL: "http://x", Headers: map[string]string{"X-Key": "a\r\nEvil: 1"}}, Options{HTTPClient: hc}, "line break"},
		{Server{Name: "a", Transport: TransportHTTP, URL: "http://x", Headers: map[string]string{"Bad Name": "1"}}, Options{HTTPClient: hc}, "not a valid header name"},
		{Server{Name: "a", Transport: TransportHTTP, URL: "http://x", Command: "ls"}, Options{HTTPClient: hc}, "for the stdio transport"},
		{Server{Name: "a", Transport: TransportStdio}, Options{}, "needs a command"},
		{Server{Name: "a", Transport: TransportStdio, Command: "./x"}, Options{}, "relative path"},
		{Server{Name: "a", Transport: TransportStdio, Command: "sh", URL: "http://x"}, Options{}, "not stdio"},
	}
	for _, c := range cases {
		_, err := NewManager([]Server{c.srv}, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want it to say %q", c.srv, err, c.want)
		}
	}
	twice := []Server{{Name: "a", Transport: TransportHTTP, URL: "http://x"}, {Name: "a", Transport: TransportSSE, URL: "http://y"}}
	if _, err := NewManager(twice, Options{HTTPClient: hc}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a name used twice: err = %v", err)
	}
}

func TestToolIDs(t *testing.T) {
	t.Parallel()
	if id := ToolID("fs", "read_file"); id != "mcp:fs/read_file" {
		t.Errorf("ToolID = %q", id)
	}
	for id, want := range map[string][2]string{"mcp:fs/read_file": {"fs", "read_file"}, "mcp:fs/a.b-c": {"fs", "a.b-c"}} {
		s, tl, ok := ParseToolID(id)
		if !ok || s != want[0] || tl != want[1] {
			t.Errorf("ParseToolID(%q) = %q, %q, %v", id, s, tl, ok)
		}
	}
	for _, id := range []string{"http", "mcp:", "mcp:fs", "mcp:fs/", "mcp:/x", "mcp:f s/x", "MCP:fs/x"} {
		if _, _, ok := ParseToolID(id); ok {
			t.Errorf("ParseToolID(%q) accepted it", id)
		}
	}
}
