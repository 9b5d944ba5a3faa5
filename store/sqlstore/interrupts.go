package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
)

// Writer runs a write statement: *sql.Tx or a backend's wrapper of it.
type Writer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// insertPause is the statement and arguments that record a pause entry (log
// entry n, written at t µs) as a pending interrupt of runID. node_id keeps
// the pause id (the node id for a top-level interrupt), so each pause of a
// node is listed and claimed on its own.
func insertPause(runID string, n, t int64, rec *engine.PauseRecord) (string, []any, error) {
	var prompt, approval, deadline, notifyAt any
	esc := ""
	if rec.Prompt != nil {
		b, err := json.Marshal(rec.Prompt)
		if err != nil {
			return "", nil, fmt.Errorf("encode prompt: %w", err)
		}
		prompt = string(b)
	}
	if a := rec.Approval; a != nil {
		b, err := json.Marshal(a)
		if err != nil {
			return "", nil, fmt.Errorf("encode approval: %w", err)
		}
		approval = string(b)
		if !a.Deadline.IsZero() {
			deadline = a.Deadline.UnixMicro()
			if a.Escalation != "" && a.NotifyBefore > 0 {
				notifyAt = a.Deadline.Add(-time.Duration(a.NotifyBefore * float64(time.Second))).UnixMicro()
			}
		}
		esc = a.Escalation
	}
	return `INSERT INTO run_interrupts (run_id, n, node_id, created_at, prompt, approval, deadline, escalation, notify_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		[]any{runID, n, rec.ID(), t, prompt, approval, deadline, esc, notifyAt}, nil
}

const interruptCols = `i.run_id, i.n, i.node_id, COALESCE(r.chain_id, ''), r.chain_name, i.prompt, i.approval, i.created_at, i.deadline`

// pendingFrom joins pending interrupts with their paused runs.
const pendingFrom = ` FROM run_interrupts i JOIN runs r ON r.id = i.run_id WHERE i.claimed_at IS NULL AND r.status = 'paused'`

// likePattern turns a substring into a LIKE pattern with '\' escaping.
func likePattern(q string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(strings.ToLower(q)) + "%"
}

// listInterrupts lists pending interrupts by f (store.InterruptStore).
func listInterrupts(ctx context.Context, q Queryer, f store.InterruptFilter) ([]store.Interrupt, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	f.Limit = min(f.Limit, store.MaxInterruptsPage)
	where, args := "", []any{}
	if f.ChainID != "" {
		where += ` AND r.chain_id = ?`
		args = append(args, f.ChainID)
	}
	if f.RunID != "" {
		where += ` AND i.run_id = ?`
		args = append(args, f.RunID)
	}
	if f.Text != "" {
		p := likePattern(f.Text)
		where += ` AND (LOWER(COALESCE(i.prompt, '')) LIKE ? ESCAPE '\' OR LOWER(r.chain_name) LIKE ? ESCAPE '\' OR LOWER(i.node_id) LIKE ? ESCAPE '\')`
		args = append(args, p, p, p)
	}
	order := ` ORDER BY i.created_at, i.run_id, i.n`
	switch f.Sort {
	case "", store.SortWaiting:
	case store.SortDeadline:
		order = ` ORDER BY CASE WHEN i.deadline IS NULL THEN 1 ELSE 0 END, i.deadline, i.created_at, i.run_id, i.n`
	default:
		return nil, fmt.Errorf("%w: sort must be %s or %s, got %q", store.ErrInvalid, store.SortWaiting, store.SortDeadline, f.Sort)
	}
	return scanInterrupts(ctx, q, `SELECT `+interruptCols+pendingFrom+where+order+` LIMIT ?`, append(args, f.Limit)...)
}

// dueInterrupts lists pending interrupts whose deadline passed.
func dueInterrupts(ctx context.Context, q Queryer, now time.Time, limit int) ([]store.Interrupt, error) {
	return scanInterrupts(ctx, q, `SELECT `+interruptCols+pendingFrom+` AND i.deadline IS NOT NULL AND i.deadline <= ?
ORDER BY i.deadline, i.run_id, i.n LIMIT ?`, now.UnixMicro(), limit)
}

// dueEscalations lists the escalation notifications due at now.
func dueEscalations(ctx context.Context, q Queryer, now time.Time, limit int) ([]store.Escalation, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+interruptCols+`, i.escalation,
  CASE WHEN i.escalated_at IS NULL THEN 'paused' ELSE 'deadline_near' END`+pendingFrom+` AND i.escalation <> ''
  AND (i.escalated_at IS NULL OR (i.warned_at IS NULL AND i.notify_at IS NOT NULL AND i.notify_at <= ?))
ORDER BY i.created_at, i.run_id, i.n LIMIT ?`, now.UnixMicro(), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Escalation
	for rows.Next() {
		var e store.Escalation
		st := &interruptRow{}
		if err := rows.Scan(append(st.dest(&e.Interrupt), &e.URL, &e.Stage)...); err != nil {
			return nil, err
		}
		if err := st.apply(&e.Interrupt); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// claimEscalation marks one notification of an interrupt sent, once.
func claimEscalation(ctx context.Context, x Writer, runID string, n int64, stage string, now time.Time) (bool, error) {
	col := "escalated_at"
	switch stage {
	case store.EscalationPaused:
	case store.EscalationDeadlineNear:
		col = "warned_at"
	default:
		return false, fmt.Errorf("%w: unknown escalation stage %q", store.ErrInvalid, stage)
	}
	res, err := x.ExecContext(ctx, `UPDATE run_interrupts SET `+col+` = ? WHERE run_id = ? AND n = ? AND claimed_at IS NULL AND `+col+` IS NULL`,
		now.UnixMicro(), runID, n)
	if err != nil {
		return false, err
	}
	k, err := res.RowsAffected()
	return k == 1, err
}

// interruptRow holds the columns of one interrupt row that need decoding.
type interruptRow struct {
	prompt, approval sql.NullString
	created          int64
	deadline         sql.NullInt64
}

// dest returns the scan targets of interruptCols.
func (st *interruptRow) dest(it *store.Interrupt) []any {
	return []any{&it.RunID, &it.N, &it.NodeID, &it.ChainID, &it.ChainName, &st.prompt, &st.approval, &st.created, &st.deadline}
}

func (st *interruptRow) apply(it *store.Interrupt) error {
	it.Since = time.UnixMicro(st.created).UTC()
	if st.deadline.Valid {
		it.Deadline = time.UnixMicro(st.deadline.Int64).UTC()
	}
	if st.prompt.Valid {
		if err := json.Unmarshal([]byte(st.prompt.String), &it.Prompt); err != nil {
			return fmt.Errorf("decode prompt of run %s: %w", it.RunID, err)
		}
	}
	if st.approval.Valid {
		it.Approval = &engine.ApprovalInfo{}
		if err := json.Unmarshal([]byte(st.approval.String), it.Approval); err != nil {
			return fmt.Errorf("decode approval of run %s: %w", it.RunID, err)
		}
	}
	return nil
}

func scanInterrupts(ctx context.Context, q Queryer, query string, args ...any) ([]store.Interrupt, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []store.Interrupt{}
	for rows.Next() {
		var it store.Interrupt
		st := &interruptRow{}
		if err := rows.Scan(st.dest(&it)...); err != nil {
			return nil, err
		}
		if err := st.apply(&it); err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, rows.Err()
}

// maxAnswers bounds the audit entries one read returns (a run that loops
// through an approval thousands of times shows the first ones).
const maxAnswers = 1000

// answers reads the resume entries with a value of runID's log.
func answers(ctx context.Context, q Queryer, runID string) ([]engine.ResumeRecord, error) {
	rows, err := q.QueryContext(ctx, `SELECT n, body FROM checkpoints WHERE run_id = ? AND kind = 'resume' ORDER BY n LIMIT ?`, runID, maxAnswers)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []engine.ResumeRecord{}
	var body []byte
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n, &body); err != nil {
			return nil, err
		}
		var cp struct {
			Resume *engine.ResumeRecord `json:"resume"`
		}
		if err := json.Unmarshal(body, &cp); err != nil {
			return nil, fmt.Errorf("checkpoint %d is corrupt: %w", n, err)
		}
		if cp.Resume != nil && cp.Resume.HasValue {
			out = append(out, *cp.Resume)
		}
	}
	return out, rows.Err()
}

// ListInterrupts lists the pending interrupts of paused runs (the inbox).
func (s *Store) ListInterrupts(ctx context.Context, f store.InterruptFilter) ([]store.Interrupt, error) {
	var out []store.Interrupt
	err := s.readTx(ctx, func(tx *Tx) (err error) {
		out, err = listInterrupts(ctx, tx, f)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: list interrupts: %w", err)
	}
	return out, nil
}

// DueInterrupts lists pending interrupts whose deadline passed by now.
func (s *Store) DueInterrupts(ctx context.Context, now time.Time, limit int) ([]store.Interrupt, error) {
	var out []store.Interrupt
	err := s.readTx(ctx, func(tx *Tx) (err error) {
		out, err = dueInterrupts(ctx, tx, now, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: due interrupts: %w", err)
	}
	return out, nil
}

// DueEscalations lists the escalation notifications due at now.
func (s *Store) DueEscalations(ctx context.Context, now time.Time, limit int) ([]store.Escalation, error) {
	var out []store.Escalation
	err := s.readTx(ctx, func(tx *Tx) (err error) {
		out, err = dueEscalations(ctx, tx, now, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: due escalations: %w", err)
	}
	return out, nil
}

// ClaimEscalation marks a notification sent; false: it was already.
func (s *Store) ClaimEscalation(ctx context.Context, runID string, n int64, stage string, now time.Time) (bool, error) {
	var ok bool
	err := s.writeTx(ctx, func(tx *Tx) (err error) {
		ok, err = claimEscalation(ctx, tx, runID, n, stage, now)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("store: claim escalation of run %s: %w", runID, err)
	}
	return ok, nil
}

// Answers returns the audit entries of runID's answered interrupts.
func (s *Store) Answers(ctx context.Context, runID string) ([]engine.ResumeRecord, error) {
	var out []engine.ResumeRecord
	err := s.readTx(ctx, func(tx *Tx) (err error) {
		out, err = answers(ctx, tx, runID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: answers of run %s: %w", runID, err)
	}
	return out, nil
}
