package sqlstore

import (
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
)

// Queryer runs a query: *sql.Tx, *sql.DB, or a backend's wrapper of them.
type Queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// runNodes feeds a run's checkpoint rows to the engine's fold
// (engine.NodeResultFold), which owns what they mean. node limits the fold to
// one node ("" for all).
func runNodes(ctx context.Context, tx Queryer, runID, node string) ([]engine.NodeResult, error) {
	q := `SELECT n, kind, body FROM checkpoints WHERE run_id = ? AND kind IN ('node', 'pause', 'end', 'resume') ORDER BY n`
	args := []any{runID}
	if node != "" {
		q = `SELECT n, kind, body FROM checkpoints WHERE run_id = ? AND (node_id = ? OR kind IN ('end', 'resume')) ORDER BY n`
		args = append(args, node)
	}
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	f := engine.NodeResultFold{Only: node}
	var body []byte
	for rows.Next() {
		var n int64
		var kind string
		if err := rows.Scan(&n, &kind, &body); err != nil {
			return nil, err
		}
		var cp struct { // the parts the fold reads
			Time  time.Time           `json:"time"`
			Node  *engine.NodeRecord  `json:"node"`
			Pause *engine.PauseRecord `json:"pause"`
			// of an end, only the nodes it left unfinished: its final
			// output (megabytes, maybe) is the run row's
			End *struct {
				Unfinished []engine.UnfinishedNode `json:"unfinished"`
			} `json:"end"`
		}
		if err := jsonv2.Unmarshal(body, &cp); err != nil {
			return nil, fmt.Errorf("checkpoint %d is corrupt: %w", n, err)
		}
		var end *engine.EndRecord
		if cp.End != nil {
			end = &engine.EndRecord{Unfinished: cp.End.Unfinished}
		}
		if err := f.Add(&engine.Checkpoint{Kind: kind, Time: cp.Time, Node: cp.Node, Pause: cp.Pause, End: end}); err != nil {
			return nil, fmt.Errorf("checkpoint %d: %w", n, err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return f.Results(), nil
}

// encodeCursor makes an opaque keyset cursor from a run's (started_at, id).
func encodeCursor(started int64, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(started, 10) + ":" + id))
}

// decodeCursor reads a cursor EncodeCursor made; a bad one is store.ErrInvalid.
func decodeCursor(c string) (int64, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", fmt.Errorf("%w: bad cursor", store.ErrInvalid)
	}
	ts, id, ok := strings.Cut(string(b), ":")
	started, err := strconv.ParseInt(ts, 10, 64)
	if !ok || err != nil {
		return 0, "", fmt.Errorf("%w: bad cursor", store.ErrInvalid)
	}
	return started, id, nil
}

// reachedNode is the condition on runs (the table named runs) that keeps
// those whose checkpoint log has a pause entry, or a node entry other than a
// skip, of the node given as its one argument: the runs that got to the
// node. Each run's entries are found by the primary key's run_id prefix; only
// the node's own entries are decoded, by the backend's nodeStatus
// expression (the "status" of a node entry's "node" in c.body).
func reachedNode(nodeStatus string) string {
	return `EXISTS (SELECT 1 FROM checkpoints c WHERE c.run_id = runs.id AND c.node_id = ? AND ` +
		`(c.kind = 'pause' OR (c.kind = 'node' AND ` + nodeStatus + ` <> 'skip')))`
}
