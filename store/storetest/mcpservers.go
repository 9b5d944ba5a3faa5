package storetest

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/store"
)

// MCP servers: a record round-trips whole; names are unique; a record that
// breaks the shape rules (a secret-looking header, fields of the other
// transport) is refused with ErrInvalid naming the field and writes nothing;
// an update keeps the creation; a removal removes.
func testMCPServers(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	web := store.MCPServer{Name: "docs", Transport: store.MCPTransportHTTP, URL: "https://mcp.example.com/mcp",
		Headers: map[string]string{"X-Tenant": "acme"}, Credential: "docs-token", Enabled: true,
		CreatedBy: "ann", Created: at, UpdatedBy: "ann", Updated: at}
	local := store.MCPServer{Name: "everything", Transport: store.MCPTransportStdio, Command: "node",
		Args: []string{"dist/index.js", "stdio"}, Env: map[string]string{"LOG_LEVEL": "debug"},
		CreatedBy: "bob", Created: at, UpdatedBy: "bob", Updated: at}
	for _, s := range []store.MCPServer{web, local} {
		if err := db.AddMCPServer(ctx, &s); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.AddMCPServer(ctx, &web); !errors.Is(err, store.ErrNameTaken) {
		t.Fatalf("a second docs: %v", err)
	}
	got, err := db.GetMCPServer(ctx, "docs")
	if err != nil || !reflect.DeepEqual(*got, web) {
		t.Fatalf("got %+v, %v\nwant %+v", got, err, web)
	}
	list, err := db.ListMCPServers(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "docs" || !reflect.DeepEqual(list[1], local) {
		t.Fatalf("list %+v, %v", list, err)
	}

	for name, tc := range map[string]struct {
		s     store.MCPServer
		field string
	}{
		"bad name":            {store.MCPServer{Name: "a b", Transport: "stdio", Command: "node"}, "name"},
		"bad transport":       {store.MCPServer{Name: "x", Transport: "ws", URL: "ws://h"}, "transport"},
		"no url":              {store.MCPServer{Name: "x", Transport: "http"}, "url"},
		"ftp url":             {store.MCPServer{Name: "x", Transport: "sse", URL: "ftp://h/"}, "url"},
		"user in url":         {store.MCPServer{Name: "x", Transport: "http", URL: "https://u:p@h/"}, "url"},
		"secret header":       {store.MCPServer{Name: "x", Transport: "http", URL: "https://h/", Headers: map[string]string{"Authorization": "Bearer x"}}, "headers.Authorization"},
		"api key header":      {store.MCPServer{Name: "x", Transport: "http", URL: "https://h/", Headers: map[string]string{"X-API-Key": "k"}}, "headers.X-API-Key"},
		"line break":          {store.MCPServer{Name: "x", Transport: "http", URL: "https://h/", Headers: map[string]string{"X-A": "a\r\nB: c"}}, "headers.X-A"},
		"command on http":     {store.MCPServer{Name: "x", Transport: "http", URL: "https://h/", Command: "node"}, "command"},
		"no command":          {store.MCPServer{Name: "x", Transport: "stdio"}, "command"},
		"url on stdio":        {store.MCPServer{Name: "x", Transport: "stdio", Command: "node", URL: "https://h/"}, "url"},
		"credential on stdio": {store.MCPServer{Name: "x", Transport: "stdio", Command: "node", Credential: "c"}, "url"},
		"secret env":          {store.MCPServer{Name: "x", Transport: "stdio", Command: "node", Env: map[string]string{"GITHUB_TOKEN": "t"}}, "env.GITHUB_TOKEN"},
		"bad env name":        {store.MCPServer{Name: "x", Transport: "stdio", Command: "node", Env: map[string]string{"A=B": "t"}}, "env"},
		"NUL argument":        {store.MCPServer{Name: "x", Transport: "stdio", Command: "node", Args: []string{"a\x00"}}, "args[0]"},
	} {
		err := db.AddMCPServer(ctx, &tc.s)
		if store.ErrorCode(err) != store.EINVALID || !strings.Contains(err.Error(), `"`+tc.s.Name+`"`) || !strings.Contains(err.Error(), tc.field+":") {
			t.Errorf("%s: %v, want invalid naming the server and %s", name, err, tc.field)
		}
	}
	if list, _ := db.ListMCPServers(ctx); len(list) != 2 {
		t.Fatalf("refused adds wrote something: %+v", list)
	}

	later := at.Add(time.Hour)
	upd := local
	upd.Enabled, upd.Args, upd.Env, upd.UpdatedBy, upd.Updated = true, []string{"x.js"}, nil, "cy", later
	upd.Created, upd.CreatedBy = later, "someone else" // ignored: creation stays
	if err := db.UpdateMCPServer(ctx, &upd); err != nil {
		t.Fatal(err)
	}
	got, _ = db.GetMCPServer(ctx, "everything")
	if !got.Enabled || len(got.Args) != 1 || len(got.Env) != 0 || got.UpdatedBy != "cy" || !got.Updated.Equal(later) || got.CreatedBy != "bob" || !got.Created.Equal(at) {
		t.Fatalf("updated %+v", got)
	}
	bad := upd
	bad.Env = map[string]string{"API_KEY": "x"}
	if err := db.UpdateMCPServer(ctx, &bad); store.ErrorCode(err) != store.EINVALID {
		t.Fatalf("a bad update: %v", err)
	}
	ghost := upd
	ghost.Name = "ghost"
	if err := db.UpdateMCPServer(ctx, &ghost); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("update of a missing server: %v", err)
	}
	if err := db.RemoveMCPServer(ctx, "docs"); err != nil {
		t.Fatal(err)
	}
	if err := db.RemoveMCPServer(ctx, "docs"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second remove: %v", err)
	}
	if _, err := db.GetMCPServer(ctx, "docs"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get after remove: %v", err)
	}
}
