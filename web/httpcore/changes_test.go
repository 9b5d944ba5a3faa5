package httpcore

import (
	"context"
	"slices"
	"testing"
)

// Every subscriber hears every change, in the order it subscribed, before
// Publish returns; a nil Changes is silent.
func TestChangesReachEverySubscriberInOrder(t *testing.T) {
	t.Parallel()
	var n Changes
	var heard []string
	n.Subscribe(func(_ context.Context, ch ChainChange) { heard = append(heard, "a:"+ch.ChainID+":"+string(ch.Kind)) })
	n.Publish(context.Background(), ChainChange{ChainID: "c1", Kind: ChainDeleted})
	n.Subscribe(func(_ context.Context, ch ChainChange) { heard = append(heard, "b:"+ch.ChainID+":"+string(ch.Kind)) })
	n.Publish(context.Background(), ChainChange{ChainID: "c2", Kind: ChainPublished, MCPExposed: true})
	want := []string{"a:c1:deleted", "a:c2:published", "b:c2:published"}
	if !slices.Equal(heard, want) {
		t.Fatalf("heard %v, want %v", heard, want)
	}
	var none *Changes
	none.Publish(context.Background(), ChainChange{ChainID: "c3", Kind: ChainExposure})
}
