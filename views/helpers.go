// Package views holds the designer's HTML: templ components for pages and the
// htmx fragments the pages swap in. Output is always escaped by templ; user
// data never goes through templ.Raw.
package views

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/a-h/templ"
	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
)

// AssetVersion is a path segment of static asset URLs (/static/v/<version>/…)
// so that they can be cached for a year; web sets it to a hash of the
// embedded files. It is in the path, not the query, because a module's
// relative imports resolve against its URL: every module then imports its
// peers at the same version, and each loads once.
var AssetVersion = "dev"

// Asset returns the URL of a file under static/.
func Asset(path string) string { return "/static/v/" + AssetVersion + "/" + path }

func assetURL(path string) templ.SafeURL { return templ.SafeURL(Asset(path)) }

func u(format string, args ...any) templ.SafeURL {
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = pathEscape(s)
		}
	}
	return templ.SafeURL(fmt.Sprintf(format, args...))
}

// pathEscape escapes one path segment.
func pathEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func itoa(n int) string     { return strconv.Itoa(n) }
func i64toa(n int64) string { return strconv.FormatInt(n, 10) }

// ago formats a time relative to now ("3 min ago"), with the exact time as
// the title.
func ago(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	case d < 30*24*time.Hour:
		return fmt.Sprintf("%d days ago", int(d.Hours()/24))
	}
	return t.Local().Format("2006-01-02")
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func clock(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format("15:04:05.000")
}

// duration is the one formatter of a duration for people, in
// milliseconds: "—" when unknown (negative), "< 1 ms" under a millisecond (a
// run that took no measurable time took some), then 12 ms, 1.4 s,
// 2 min 3 s, 1 h 5 min. static/js/common.js (Studio.duration) writes the same.
func duration(ms float64) string {
	switch {
	case ms < 0 || math.IsNaN(ms):
		return "—"
	case ms < 1:
		return "< 1 ms"
	case ms < 999.5:
		return fmt.Sprintf("%d ms", int64(math.Round(ms)))
	case ms < 60_000:
		return fmt.Sprintf("%.1f s", ms/1000)
	}
	n := int64(ms)
	if n < 3_600_000 { // for people: 2 min 3 s, 1 h 5 min
		return fmt.Sprintf("%d min %d s", n/60_000, n/1000%60)
	}
	return fmt.Sprintf("%d h %d min", n/3_600_000, n/60_000%60)
}

// durationBetween is the time from a to b, "—" when either is unknown.
func durationBetween(a, b time.Time) string {
	if a.IsZero() || b.IsZero() {
		return "—"
	}
	return duration(float64(b.Sub(a).Microseconds()) / 1000)
}

// pretty renders a JSON value indented; strings stay JSON-quoted so that the
// type is visible.
// LargeValueBytes is the size (about, as JSON) over which the run page and
// the API's run answer show a value's size and a link instead of the value.
const LargeValueBytes = 64 << 10

func largeValue(v any) bool {
	return v != nil && engine.ValueSize(v, LargeValueBytes+1) > LargeValueBytes
}

// sizeText is about how large v is as JSON, for people.
func sizeText(v any) string {
	n := engine.ValueSize(v, math.MaxInt64)
	switch {
	case n >= 10<<20:
		return fmt.Sprintf("%d MB", n/1_000_000)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%d KB", n/1000)
}

func pretty(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // templ escapes; keep <, > and & readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// jsonText renders a value for an input field: strings as they are, other
// values as compact JSON.
func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if v == nil {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func num(f float64) string {
	if f == 0 {
		return ""
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func numInt(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// KV is one key → value row of an object field.
type KV struct{ Key, Value string }

func sortedKV[V any](m map[string]V, text func(V) string) []KV {
	out := make([]KV, 0, len(m))
	for k, v := range m {
		out = append(out, KV{k, text(v)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func strKV(m map[string]string) []KV { return sortedKV(m, func(s string) string { return s }) }
func anyKV(m map[string]any) []KV    { return sortedKV(m, jsonText) }

func configJSON(n *chain.Node) string {
	if len(n.Config) == 0 {
		return ""
	}
	return pretty(n.Config)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// caretLine returns spaces up to the rune column of byte offset pos in src
// (the caret goes under that column).
func caretLine(src string, pos int) string {
	if pos < 0 {
		pos = 0
	}
	if pos > len(src) {
		pos = len(src)
	}
	line := src[:pos]
	if i := strings.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	return strings.Repeat(" ", utf8.RuneCountInString(line)) + "^"
}

// caretSource returns the line of src that holds byte offset pos.
func caretSource(src string, pos int) string {
	if pos < 0 {
		pos = 0
	}
	if pos > len(src) {
		pos = len(src)
	}
	start := strings.LastIndexByte(src[:pos], '\n') + 1
	end := strings.IndexByte(src[pos:], '\n')
	if end < 0 {
		return src[start:]
	}
	return src[start : pos+end]
}

func statusClass(s string) string {
	if s == "" {
		return "status status-none"
	}
	return "status status-" + s
}

func statusText(s string) string {
	if s == "" {
		return "never run"
	}
	return strings.ReplaceAll(s, "_", " ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// chainFields is the chain without its nodes and edges: what the chain's
// property panel edits.
func chainFields(c *chain.Chain) chain.Chain {
	if c == nil {
		return chain.Chain{}
	}
	cp := *c
	cp.Nodes, cp.Edges = nil, nil
	return cp
}

// nodeIDs lists the chain's node ids in document order.
func nodeIDs(c *chain.Chain) []string {
	if c == nil {
		return nil
	}
	ids := make([]string, len(c.Nodes))
	for i := range c.Nodes {
		ids[i] = c.Nodes[i].ID
	}
	return ids
}

// budgetLimits are a chain budget's run and day limits (nil: none).
func budgetLimits(b *chain.ModelBudget) (run, day *chain.BudgetLimit) {
	if b == nil {
		return nil, nil
	}
	return b.Run, b.Day
}

// limitTokens and limitCost are a budget field as the chain panel shows it
// ("": no limit).
func limitTokens(l *chain.BudgetLimit) string {
	t, _ := l.Limit()
	if t == 0 {
		return ""
	}
	return strconv.FormatInt(t, 10)
}

func limitCost(l *chain.BudgetLimit) string {
	_, c := l.Limit()
	return num(c)
}
