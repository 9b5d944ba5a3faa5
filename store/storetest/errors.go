package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
)

// testErrorCodes: every failure a caller branches on carries its store code
// (what the HTTP layer maps to a status) and keeps its typed detail.
func testErrorCodes(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	want := func(what string, err error, code string, sentinel error) {
		t.Helper()
		if got := store.ErrorCode(err); got != code {
			t.Errorf("%s: code %q, want %q (err %v)", what, got, code, err)
		}
		if sentinel != nil && !errors.Is(err, sentinel) {
			t.Errorf("%s: %v is not %v", what, err, sentinel)
		}
		if store.ErrorMessage(err) != err.Error() {
			t.Errorf("%s: message %q, want the error's text %q", what, store.ErrorMessage(err), err.Error())
		}
	}
	ch, err := db.CreateChain(ctx, SampleChain("coded", 2), "", true)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.GetChain(ctx, "missing")
	want("missing chain", err, store.ENOTFOUND, store.ErrNotFound)
	_, err = db.GetVersion(ctx, ch.ID, 7)
	want("missing version", err, store.ENOTFOUND, store.ErrNotFound)
	_, err = db.GetRun(ctx, "missing")
	want("missing run", err, store.ENOTFOUND, store.ErrNotFound)
	_, err = db.GetRunInfo(ctx, "missing")
	want("missing run info", err, store.ENOTFOUND, store.ErrNotFound)
	err = db.DeleteChain(ctx, "missing", 0)
	want("delete of a missing chain", err, store.ENOTFOUND, store.ErrNotFound)

	_, err = db.CreateChain(ctx, SampleChain("coded", 1), "", true)
	want("taken name", err, store.ECONFLICT, store.ErrNameTaken)
	var ce *store.ConflictError
	if !errors.As(err, &ce) || ce.Name != "coded" || ce.ChainID != ch.ID {
		t.Errorf("taken name detail: %#v", err)
	}
	if _, err := db.SaveChain(ctx, ch.ID, 1, SampleChain("coded", 3), ""); err != nil {
		t.Fatal(err)
	}
	_, err = db.SaveChain(ctx, ch.ID, 1, SampleChain("coded", 4), "")
	want("stale save", err, store.ECONFLICT, store.ErrVersionConflict)
	var vc *store.VersionConflictError
	if !errors.As(err, &vc) || vc.Base != 1 || vc.Current != 2 {
		t.Errorf("stale save detail: %#v", err)
	}
	if err := db.AppendEvents(ctx, Events("ev", 1, 3)); err != nil {
		t.Fatal(err)
	}
	err = db.AppendEvents(ctx, Events("ev", 2, 1))
	want("event seq stored twice", err, store.ECONFLICT, store.ErrSeqConflict)
	var se *store.EventSeqError
	if !errors.As(err, &se) || se.Seq != 2 || se.After != 3 {
		t.Errorf("seq detail: %#v", err)
	}

	_, err = db.CreateChain(ctx, &chain.Chain{}, "", true)
	want("nameless chain", err, store.EINVALID, store.ErrInvalid)
	_, _, err = db.ListRuns(ctx, store.RunFilter{Before: "!!"})
	want("bad cursor", err, store.EINVALID, store.ErrInvalid)
	_, err = db.PruneRuns(ctx, store.Retention{})
	want("prune without a limit", err, store.EINVALID, store.ErrInvalid)
	_, err = db.NameVersion(ctx, ch.ID, 0, " ")
	want("unnamed version", err, store.EINVALID, store.ErrInvalid)
}

// testRunInfo: GetRunInfo is the run without its node results and outputs;
// GetRunNode is one node's result; both agree with GetRun.
func testRunInfo(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	const id = "info"
	if _, err := db.CreateRun(ctx, store.Run{ID: id, ChainName: "cp chain", Kind: store.KindA2E, Input: map[string]any{"q": "x"}}); err != nil {
		t.Fatal(err)
	}
	for _, b := range CheckpointLog(id) {
		if err := db.Append(ctx, id, b); err != nil {
			t.Fatal(err)
		}
	}
	full, err := db.GetRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	info, err := db.GetRunInfo(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if info.Nodes != nil || info.Outputs != nil {
		t.Fatalf("run info carries nodes or outputs: %+v", info)
	}
	if info.ID != id || info.Kind != store.KindA2E || info.Status != chain.StatusFailed || info.NodesRun != full.NodesRun ||
		!info.Started.Equal(full.Started) || !info.Ended.Equal(full.Ended) || info.Error == nil || info.Error.NodeID != "n2" {
		t.Fatalf("run info %+v, run %+v", info, full)
	}
	JSONEqual(t, info.Input, full.Input)
	JSONEqual(t, info.FinalOutput, full.FinalOutput)
	for _, n := range full.Nodes {
		one, err := db.GetRunNode(ctx, id, n.NodeID)
		if err != nil || one == nil {
			t.Fatalf("node %s: %v", n.NodeID, err)
		}
		JSONEqual(t, one, n)
	}
	if one, err := db.GetRunNode(ctx, id, "never"); err != nil || one != nil {
		t.Fatalf("a node that never ran: %+v %v", one, err)
	}
}
