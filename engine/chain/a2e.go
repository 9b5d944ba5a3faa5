package chain

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// The A2E request type and protocol version (docs/chain-format.md, "A2E
// compatibility"); engine/a2e holds the messages a host answers with.
const (
	TypeRequest = "chain/req"
	WireVersion = "1.0"
)

// Request is an A2E chain/req message.
type Request struct {
	Type          string            `json:"type"`
	ID            string            `json:"id"`
	Version       string            `json:"version"`
	Ts            float64           `json:"ts"`
	SessionID     string            `json:"session_id"`
	ChainID       string            `json:"chain_id,omitempty"`
	Nodes         []json.RawMessage `json:"nodes"`
	EntryNode     string            `json:"entry_node"`
	InitialInput  map[string]any    `json:"initial_input,omitempty"`
	CorrelationID string            `json:"correlation_id,omitempty"`
	Streaming     *bool             `json:"streaming,omitempty"`
	Timeout       *float64          `json:"timeout,omitempty"`
}

// IsStreaming reports whether the agent asked for chain/event messages (default true).
func (r *Request) IsStreaming() bool { return r.Streaming == nil || *r.Streaming }

func decodeRequest(data []byte, lim Limits) (*Request, error) {
	var r Request
	if err := strictUnmarshalAt("", data, &r); err != nil {
		return nil, err
	}
	if r.Version != "" && r.Version != WireVersion {
		return nil, &DecodeError{Path: "version", Msg: fmt.Sprintf("unsupported protocol version %q (this host speaks %q)", r.Version, WireVersion)}
	}
	if r.ID == "" {
		r.ID = uuid.NewString()
	}
	if r.Version == "" {
		r.Version = WireVersion
	}
	if r.Ts == 0 {
		r.Ts = float64(time.Now().UnixNano()) / 1e9
	}
	if r.ChainID == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		r.ChainID = hex.EncodeToString(b[:])
	}
	if len(r.EntryNode) > lim.MaxIDLength {
		return nil, &DecodeError{Path: "entry_node", Msg: fmt.Sprintf("names a node id of %d bytes, over the limit of %d", len(r.EntryNode), lim.MaxIDLength)}
	}
	if r.Timeout != nil && *r.Timeout < 0 {
		return nil, &DecodeError{Path: "timeout", Msg: "must be a number of seconds ≥ 0"}
	}
	if len(r.Nodes) == 0 {
		return nil, &DecodeError{Path: "nodes", Msg: "a chain/req needs at least one node"}
	}
	return &r, nil
}

// Chain builds the chain the request describes.
func (r *Request) Chain(lim Limits) (*Chain, error) {
	lim = lim.WithDefaults()
	nodes, err := decodeNodes(r.Nodes, lim)
	if err != nil {
		return nil, err
	}
	c := &Chain{Name: r.ChainID, EntryNode: r.EntryNode, Nodes: nodes}
	if r.Timeout != nil {
		c.Timeout = *r.Timeout
	}
	if err := Normalize(c); err != nil {
		return nil, err
	}
	return c, nil
}
