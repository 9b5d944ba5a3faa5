package engine

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/expr"
)

// Decision records: for every routing decision that evaluated something or
// applied a rule, what the engine evaluated (an edge condition, a guard, a
// branch condition, a condition node's case), the values the expression
// read, the result, and the rule that decided. They ride on the node's
// checkpoint record (so a resume replays them and the why answer of a
// resumed run includes what was decided before the pause) and on its event
// (so `studio run --json` and the live run page carry them).
//
// What is not recorded can be derived from the log and the chain, and costs
// nothing to run: an unconditional edge of a node that routed fired
// (unconditional); the edges of a skipped node were pruned
// (pruned_upstream_skipped); a node all of whose inputs were pruned was
// skipped (join_all_inputs_pruned). Why (why.go) fills those in.

// Rules: what decided an edge (or a router's handle). One place, used by the
// engine, the why answer, the API and the run page.
const (
	RuleFirstMatch            = "first_match"             // routing first (or a router): the first true condition wins; the others are not taken
	RuleAllMatches            = "all_matches"             // routing all: every true guard fires
	RuleDefaultNoMatch        = "default_no_match"        // nothing matched: the default (or fallback) edge fires
	RulePrunedUpstreamSkipped = "pruned_upstream_skipped" // the source was skipped, so its edges were pruned
	RuleJoinAllInputsPruned   = "join_all_inputs_pruned"  // every input edge of the node was pruned, so it was skipped
	RuleLoopCapReached        = "loop_cap_reached"        // a loop edge reached max_iterations
	RuleUnconditional         = "unconditional"           // an edge without a condition fires when its source routes
	RuleUpstreamFailed        = "upstream_failed"         // the source failed: its edges were pruned (a handler ran instead, or the run stopped)
	RuleNotNeeded             = "not_needed"              // an error handler nobody needed, or a node that opted out
)

// Rules lists every rule, for documents and tests.
var Rules = []string{RuleFirstMatch, RuleAllMatches, RuleDefaultNoMatch, RulePrunedUpstreamSkipped,
	RuleJoinAllInputsPruned, RuleLoopCapReached, RuleUnconditional, RuleUpstreamFailed, RuleNotNeeded}

// What a decision evaluated.
const (
	DecideEdgeCondition = "edge_condition"   // an edge's condition under routing first
	DecideGuard         = "guard"            // an edge's guard under routing all (an agent chain's links)
	DecideBranch        = "branch_condition" // a branch node's condition
	DecideCase          = "case"             // one case of a condition node
	DecideEdge          = "edge"             // an edge chosen without an expression of its own (a label, the default, a fallback)
	DecideJoin          = "join"             // a node whose every input was pruned (why answers only)
	DecideNode          = "node"             // a node skipped for a reason of its own (why answers only)
)

// Results of a decision's evaluation.
const (
	ResultTrue         = "true"
	ResultFalse        = "false"
	ResultError        = "error"
	ResultNotEvaluated = "not_evaluated" // an earlier edge or case matched first
)

// Outcomes: what happened to the decided edge.
const (
	OutcomeFired    = "fired"
	OutcomePruned   = "pruned"
	OutcomeFailed   = "failed"   // the guard failed: the target fails without running
	OutcomeDeferred = "deferred" // a default held until the fan-out finishes; an edges entry fires it
	OutcomeHeld     = "held"     // a loop went round: the edge waits for the next pass
)

// Decision is one routing decision. Node is empty in records and events (the
// record's or event's node is the one deciding); why answers fill it in.
type Decision struct {
	Node    string `json:"node,omitempty"`
	Edge    string `json:"edge,omitempty"`   // the edge decided; "" for a router's own test
	Kind    string `json:"kind"`             // DecideEdgeCondition …
	Handle  string `json:"handle,omitempty"` // a case's handle; a branch's "true"/"false"
	Expr    string `json:"expr,omitempty"`
	Reads   []Read `json:"reads,omitempty"`
	Result  string `json:"result,omitempty"` // ResultTrue …; "" when nothing was evaluated
	Error   string `json:"error,omitempty"`
	Rule    string `json:"rule"`
	Outcome string `json:"outcome,omitempty"` // OutcomeFired …; "" for a router's own test
}

// Read is one path an expression read and its value: JSON, cut to
// MaxReadBytes (Truncated then says so, and Value ends with "…").
type Read struct {
	Path      string `json:"path"`
	Value     string `json:"value,omitempty"` // JSON; empty when the path does not exist
	Missing   bool   `json:"missing,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

// MaxReadBytes bounds the JSON kept of one value read.
const MaxReadBytes = 300

// MaxReads bounds the paths kept for one decision; past it a last entry
// with path "…" says how many more were read.
const MaxReads = 20

// truncMark ends a value cut at MaxReadBytes.
const truncMark = "…"

// toReads converts an evaluation's reads to their recorded form.
// scratch is a buffer the encoder may reuse (nil: its own).
func toReads(rs []expr.Read, scratch *[]byte) []Read {
	if len(rs) == 0 {
		return nil
	}
	more := 0
	if len(rs) > MaxReads {
		rs, more = rs[:MaxReads], len(rs)-MaxReads
	}
	out := make([]Read, len(rs), len(rs)+min(more, 1))
	for k, r := range rs {
		out[k].Path = r.Path
		if !r.Found {
			out[k].Missing = true
			continue
		}
		out[k].Value, out[k].Truncated = boundedJSONBuf(r.Value, MaxReadBytes, scratch)
	}
	if more > 0 {
		out = append(out, Read{Path: truncMark, Value: strconv.Itoa(more) + " more paths", Truncated: true})
	}
	return out
}

// BoundedJSON is v's JSON (object keys sorted), cut after about limit bytes
// and marked "…" when cut, as decisions record the values they read.
func BoundedJSON(v any, limit int) (string, bool) { return boundedJSON(v, limit) }

// boundedJSON is v's JSON (object keys sorted), cut after about limit bytes:
// the encoder stops as soon as it has that much, so a huge value costs no
// more than a small one.
func boundedJSON(v any, limit int) (string, bool) {
	var scratch []byte
	return boundedJSONBuf(v, limit, &scratch)
}

// boundedJSONBuf is boundedJSON writing into *scratch (kept for the next call).
func boundedJSONBuf(v any, limit int, scratch *[]byte) (string, bool) {
	if scratch == nil {
		scratch = new([]byte)
	}
	w := jsonWriter{buf: (*scratch)[:0], limit: limit}
	defer func() {
		if cap(w.buf) <= 4*limit { // a huge single string is not kept
			*scratch = w.buf[:0]
		}
	}()
	w.value(v, 0)
	if !w.full {
		return string(w.buf), false
	}
	b := w.buf[:min(limit, len(w.buf))]
	if i := lastRuneStart(b); i >= 0 && !utf8.FullRune(b[i:]) { // never cut a character in two
		b = b[:i]
	}
	return string(b) + truncMark, true
}

// lastRuneStart is the index of the start of b's last character (-1: b is empty).
func lastRuneStart(b []byte) int {
	i := len(b) - 1
	for i > 0 && !utf8.RuneStart(b[i]) {
		i--
	}
	return i
}

type jsonWriter struct {
	buf   []byte
	limit int
	full  bool
}

func (w *jsonWriter) value(v any, depth int) {
	if w.full {
		return
	}
	if len(w.buf) > w.limit || depth > 64 {
		w.full = true
		return
	}
	switch x := v.(type) {
	case nil:
		w.buf = append(w.buf, "null"...)
	case bool:
		w.buf = strconv.AppendBool(w.buf, x)
	case float64:
		w.float(x)
	case int:
		w.buf = strconv.AppendInt(w.buf, int64(x), 10)
	case int64:
		w.buf = strconv.AppendInt(w.buf, x, 10)
	case json.Number:
		w.buf = append(w.buf, x...)
	case string:
		w.str(x)
	case []any:
		w.buf = append(w.buf, '[')
		for k, e := range x {
			if k > 0 {
				w.buf = append(w.buf, ',')
			}
			w.value(e, depth+1)
			if w.full {
				return
			}
		}
		w.buf = append(w.buf, ']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		w.buf = append(w.buf, '{')
		for k, key := range keys {
			if k > 0 {
				w.buf = append(w.buf, ',')
			}
			w.str(key)
			w.buf = append(w.buf, ':')
			w.value(x[key], depth+1)
			if w.full {
				return
			}
		}
		w.buf = append(w.buf, '}')
	default: // not a JSON-safe value (records hold only those); say what it is
		b, err := json.Marshal(x)
		if err != nil {
			b = strconv.AppendQuote(nil, "unencodable "+err.Error())
		}
		w.buf = append(w.buf, b...)
	}
	if len(w.buf) > w.limit {
		w.full = true
	}
}

func (w *jsonWriter) float(f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		w.buf = append(w.buf, "null"...)
		return
	}
	// as encoding/json writes numbers
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	w.buf = strconv.AppendFloat(w.buf, f, format, -1, 64)
	if n := len(w.buf); format == 'e' && n >= 4 && w.buf[n-4] == 'e' && w.buf[n-3] == '-' && w.buf[n-2] == '0' {
		w.buf[n-2] = w.buf[n-1] // e-07 → e-7
		w.buf = w.buf[:n-1]
	}
}

const hexDigits = "0123456789abcdef"

func (w *jsonWriter) str(s string) {
	w.buf = append(w.buf, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			w.buf = append(w.buf, '\\', c)
		case c == '\n':
			w.buf = append(w.buf, '\\', 'n')
		case c == '\t':
			w.buf = append(w.buf, '\\', 't')
		case c == '\r':
			w.buf = append(w.buf, '\\', 'r')
		case c < 0x20:
			w.buf = append(w.buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		case c < utf8.RuneSelf:
			w.buf = append(w.buf, c)
		default: // as encoding/json: invalid UTF-8 becomes U+FFFD; U+2028 and U+2029 are escaped
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				w.buf = append(w.buf, `\ufffd`...)
			case r == '\u2028' || r == '\u2029':
				w.buf = append(w.buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			default:
				w.buf = append(w.buf, s[i:i+size]...)
			}
			i += size - 1
		}
		if len(w.buf)-8 > w.limit { // a long string stops early too
			w.full = true
			return
		}
	}
	w.buf = append(w.buf, '"')
}

func resultOf(ok bool) string {
	if ok {
		return ResultTrue
	}
	return ResultFalse
}

func outcomeOf(fired bool) string {
	if fired {
		return OutcomeFired
	}
	return OutcomePruned
}

// capDecision: loop edge e is at max_iterations. err set: on_max_reached
// "error" fails the run; otherwise the edge is passed over.
func capDecision(e *chain.Edge, kind string, err error) Decision {
	d := Decision{Edge: e.ID, Kind: kind, Expr: e.Condition, Rule: RuleLoopCapReached, Outcome: OutcomePruned}
	if err != nil {
		d.Result, d.Error = ResultError, err.Error()
	}
	return d
}

// failedRouting is a routing that fails the run, keeping what was decided
// up to the failure and the decision that failed.
func failedRouting(err error, decided []Decision, last Decision) routing {
	rt := noRouting(err)
	rt.decisions = append(decided, last)
	return rt
}

// setOutcome changes the recorded outcome of edge id.
func (rt *routing) setOutcome(id, outcome string) {
	for k := range rt.decisions {
		if rt.decisions[k].Edge == id {
			rt.decisions[k].Outcome = outcome
		}
	}
}

// routerTests are the router's own tests among a record's decisions (a
// re-run that reuses a router's output keeps why it chose its handle).
func routerTests(ds []Decision) []Decision {
	var out []Decision
	for _, d := range ds {
		if d.Edge == "" {
			out = append(out, d)
		}
	}
	return out
}
