// Command genclient drives a studio through the Go client that oapi-codegen
// generates from web/openapi.json. TestGeneratedGoClient (web) generates
// that client next to this file (client.gen.go, added by a build overlay,
// never written into the tree), builds this program and runs it against a
// test server; it exits non-zero, saying which call went wrong, when an
// answer does not decode into the generated types or says the wrong thing.
//
// It lives under testdata so that ./... neither builds nor vets it: without
// the generated file it does not compile.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"
)

func main() {
	base := flag.String("server", "", "the studio's base URL")
	flag.Parse()
	if err := drive(*base); err != nil {
		fmt.Fprintln(os.Stderr, "genclient:", err)
		os.Exit(1)
	}
	fmt.Println("genclient: ok")
}

func ptr[T any](v T) *T { return &v }

// want fails the call named op unless its answer had the status and decoded
// into the generated type (decoded is that field, nil when it did not).
func want[T any](op string, res *http.Response, body []byte, status int, decoded *T) error {
	if res.StatusCode != status {
		return fmt.Errorf("%s: status %d, want %d: %s", op, res.StatusCode, status, body)
	}
	if decoded == nil {
		return fmt.Errorf("%s: the %d answer did not decode into the generated type: %s", op, status, body)
	}
	return nil
}

func document(name string, x string) (ChainDocumentOrRequest, ChainDocument) {
	doc := ChainDocument{
		Name: ptr(name),
		Nodes: []Node{
			{NodeId: "a", Kind: "tool", Name: ptr("echo"), InputMap: &ExpressionMap{"x": x}},
			{NodeId: "b", Kind: "tool", Name: ptr("echo")},
		},
		Edges: &[]Edge{{Source: "a", Target: "b"}},
	}
	var body ChainDocumentOrRequest
	if err := body.FromChainDocument(doc); err != nil {
		panic(err) // a ChainDocument always encodes
	}
	return body, doc
}

func drive(base string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := NewClientWithResponses(base)
	if err != nil {
		return err
	}

	// create
	body, _ := document("genclient", "input.x")
	created, err := c.CreateChainWithResponse(ctx, &CreateChainParams{Message: ptr("first")}, body)
	if err != nil {
		return fmt.Errorf("createChain: %w", err)
	}
	if err := want("createChain", created.HTTPResponse, created.Body, http.StatusCreated, created.JSON201); err != nil {
		return err
	}
	id := created.JSON201.Id
	if created.JSON201.Version != 1 || !created.JSON201.Valid || len(created.JSON201.Doc.Nodes) != 2 {
		return fmt.Errorf("createChain: version %d, valid %v, %d nodes; want 1, true, 2",
			created.JSON201.Version, created.JSON201.Valid, len(created.JSON201.Doc.Nodes))
	}

	// get
	got, err := c.GetChainWithResponse(ctx, id, nil)
	if err != nil {
		return fmt.Errorf("getChain: %w", err)
	}
	if err := want("getChain", got.HTTPResponse, got.Body, http.StatusOK, got.JSON200); err != nil {
		return err
	}
	etag := got.HTTPResponse.Header.Get("ETag")
	if etag != `"v1"` || got.JSON200.Doc.Name == nil || *got.JSON200.Doc.Name != "genclient" {
		return fmt.Errorf("getChain: ETag %s, name %v; want \"v1\", genclient", etag, got.JSON200.Doc.Name)
	}

	// update, both shapes of the body, with If-Match
	renamed, _ := document("genclient renamed", "input.x")
	var wrapped ChainUpdate
	if err := wrapped.FromChainUpdate1(ChainUpdate1{Doc: renamed, Message: ptr("renamed")}); err != nil {
		return err
	}
	upd, err := c.UpdateChainWithResponse(ctx, id, &UpdateChainParams{IfMatch: &etag}, wrapped)
	if err != nil {
		return fmt.Errorf("updateChain: %w", err)
	}
	if err := want("updateChain (wrapped document)", upd.HTTPResponse, upd.Body, http.StatusOK, upd.JSON200); err != nil {
		return err
	}
	if upd.JSON200.Version != 2 || *upd.JSON200.Doc.Name != "genclient renamed" {
		return fmt.Errorf("updateChain (wrapped document): version %d, name %q; want 2, the new name", upd.JSON200.Version, *upd.JSON200.Doc.Name)
	}
	plainDoc, _ := document("genclient plain", "input.y")
	var plain ChainUpdate
	if err := plain.FromChainDocumentOrRequest(plainDoc); err != nil {
		return err
	}
	upd, err = c.UpdateChainWithResponse(ctx, id, &UpdateChainParams{IfMatch: ptr(`"v2"`)}, plain)
	if err != nil {
		return fmt.Errorf("updateChain: %w", err)
	}
	if err := want("updateChain (document)", upd.HTTPResponse, upd.Body, http.StatusOK, upd.JSON200); err != nil {
		return err
	}
	if upd.JSON200.Version != 3 || (*upd.JSON200.Doc.Nodes[0].InputMap)["x"] != "input.y" {
		return fmt.Errorf("updateChain (document): version %d, input_map %v; want 3, x: input.y", upd.JSON200.Version, *upd.JSON200.Doc.Nodes[0].InputMap)
	}
	stale, err := c.UpdateChainWithResponse(ctx, id, &UpdateChainParams{IfMatch: &etag}, plain)
	if err != nil {
		return fmt.Errorf("updateChain: %w", err)
	}
	if err := want("updateChain (stale If-Match)", stale.HTTPResponse, stale.Body, http.StatusConflict, stale.JSON409); err != nil {
		return err
	}
	if stale.JSON409.Error.Code != "version_conflict" {
		return fmt.Errorf("updateChain (stale If-Match): code %q, want version_conflict", stale.JSON409.Error.Code)
	}

	// list
	list, err := c.ListChainsWithResponse(ctx, &ListChainsParams{Q: ptr("genclient")})
	if err != nil {
		return fmt.Errorf("listChains: %w", err)
	}
	if err := want("listChains", list.HTTPResponse, list.Body, http.StatusOK, list.JSON200); err != nil {
		return err
	}
	if len(list.JSON200.Chains) != 1 || list.JSON200.Chains[0].Id != id || list.JSON200.Chains[0].Version != 3 {
		return fmt.Errorf("listChains: %+v, want the one chain at version 3", list.JSON200.Chains)
	}

	// validate: a good document and one whose edge leads nowhere
	val, err := c.ValidateWithResponse(ctx, plainDoc)
	if err != nil {
		return fmt.Errorf("validate: %w", err)
	}
	if err := want("validate", val.HTTPResponse, val.Body, http.StatusOK, val.JSON200); err != nil {
		return err
	}
	if !val.JSON200.Valid {
		return fmt.Errorf("validate: a good document is not valid: %+v", val.JSON200.Issues)
	}
	_, broken := document("broken", "input.x")
	(*broken.Edges)[0].Target = "nowhere"
	var brokenBody ChainDocumentOrRequest
	if err := brokenBody.FromChainDocument(broken); err != nil {
		return err
	}
	val, err = c.ValidateWithResponse(ctx, brokenBody)
	if err != nil {
		return fmt.Errorf("validate: %w", err)
	}
	if err := want("validate (broken)", val.HTTPResponse, val.Body, http.StatusOK, val.JSON200); err != nil {
		return err
	}
	if val.JSON200.Valid || len(val.JSON200.Issues) == 0 {
		return fmt.Errorf("validate (broken): valid %v with %d issues, want invalid", val.JSON200.Valid, len(val.JSON200.Issues))
	}

	// run, then read the run until it ends
	started, err := c.StartRunWithResponse(ctx, id, StartRunJSONRequestBody{Input: &map[string]any{"y": 1.25}})
	if err != nil {
		return fmt.Errorf("startRun: %w", err)
	}
	if err := want("startRun", started.HTTPResponse, started.Body, http.StatusAccepted, started.JSON202); err != nil {
		return err
	}
	var run *Run
	for run == nil || run.Active {
		if ctx.Err() != nil {
			return fmt.Errorf("getRun: run %s still %s when the time ran out", started.JSON202.RunId, run.Status)
		}
		r, err := c.GetRunWithResponse(ctx, started.JSON202.RunId)
		if err != nil {
			return fmt.Errorf("getRun: %w", err)
		}
		if err := want("getRun", r.HTTPResponse, r.Body, http.StatusOK, r.JSON200); err != nil {
			return err
		}
		run = r.JSON200
		if run.Active {
			time.Sleep(20 * time.Millisecond) // poll interval; the loop waits for the run's end
		}
	}
	if run.Status != RunStatusCompleted || run.NodesRun != 2 {
		return fmt.Errorf("getRun: status %s after %d nodes, want completed after 2", run.Status, run.NodesRun)
	}

	// export, in both formats
	exp, err := c.ExportChainWithResponse(ctx, id, &ExportChainParams{Version: ptr("draft")})
	if err != nil {
		return fmt.Errorf("exportChain: %w", err)
	}
	if err := want("exportChain", exp.HTTPResponse, exp.Body, http.StatusOK, exp.JSON200); err != nil {
		return err
	}
	exported, err := exp.JSON200.AsChainDocument()
	if err != nil || exported.Name == nil || *exported.Name != "genclient plain" || len(exported.Nodes) != 2 {
		return fmt.Errorf("exportChain: %v, %+v; want the saved document", err, exported)
	}
	exp, err = c.ExportChainWithResponse(ctx, id, &ExportChainParams{Format: ptr("a2e"), Version: ptr("draft")})
	if err != nil {
		return fmt.Errorf("exportChain a2e: %w", err)
	}
	if err := want("exportChain a2e", exp.HTTPResponse, exp.Body, http.StatusOK, exp.JSON200); err != nil {
		return err
	}
	req, err := exp.JSON200.AsChainRequest()
	if err != nil || req.Type != "chain/req" || len(req.Nodes) != 2 {
		return fmt.Errorf("exportChain a2e: %v, %+v; want the chain as a chain/req", err, req)
	}
	return nil
}
