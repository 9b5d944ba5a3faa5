package expr

import (
	"sort"
	"strings"
)

// Function is one JMESPath function the evaluator offers, for completion.
type Function struct {
	Name      string `json:"name"`
	Signature string `json:"signature"` // e.g. "length(array|string|object) → number"
}

// fnResults is what each function returns, for its signature.
var fnResults = map[string]string{
	"abs": "number", "avg": "number", "ceil": "number", "contains": "boolean", "ends_with": "boolean",
	"floor": "number", "join": "string", "keys": "array", "length": "number", "map": "array",
	"max": "number|string", "max_by": "any", "merge": "object", "min": "number|string", "min_by": "any",
	"not_null": "any", "reverse": "array|string", "sort": "array", "sort_by": "array",
	"starts_with": "boolean", "sum": "number", "to_array": "array", "to_number": "number",
	"to_string": "string", "type": "string", "values": "array",
}

var argShort = map[argKind]string{
	kAny: "any", kArray: "array", kArrayNumber: "array[number]", kArrayString: "array[string]",
	kString: "string", kNumber: "number", kObject: "object", kExpref: "&expr",
}

// Functions lists the JMESPath functions with their signatures, by name.
func Functions() []Function {
	out := make([]Function, 0, len(jmesSigs))
	for name, sig := range jmesSigs {
		args := make([]string, len(sig.args))
		for i, ks := range sig.args {
			alts := make([]string, len(ks))
			for j, k := range ks {
				alts[j] = argShort[k]
			}
			args[i] = strings.Join(alts, "|")
		}
		if sig.variadic && len(args) > 0 {
			args[len(args)-1] += ", …"
		}
		out = append(out, Function{Name: name, Signature: name + "(" + strings.Join(args, ", ") + ") → " + fnResults[name]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// FunctionNames lists the JMESPath function names, sorted.
func FunctionNames() []string {
	out := make([]string, 0, len(jmesSigs))
	for n := range jmesSigs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// maxSuggestLen bounds the words Suggest compares (the distance is
// quadratic); names longer than this are not typos worth guessing at.
const maxSuggestLen = 64

// Suggest returns the candidate closest to word by edit distance
// (insertions, deletions, substitutions, adjacent swaps), or "" when none is
// close enough to be a likely typo: at most 1 edit for words up to 4
// characters, 2 up to 8, 3 beyond. Ties go to the earlier candidate.
func Suggest(word string, cands []string) string {
	if word == "" || len(word) > maxSuggestLen {
		return ""
	}
	limit := 1
	switch {
	case len(word) > 8:
		limit = 3
	case len(word) > 4:
		limit = 2
	}
	best, bestD := "", limit+1
	lw := strings.ToLower(word)
	for _, c := range cands {
		if c == word || c == "" || len(c) > maxSuggestLen {
			continue
		}
		if d := lenDiff(len(c), len(word)); d >= bestD {
			continue
		}
		if d := editDistance(lw, strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func lenDiff(a, b int) int {
	if a > b {
		return a - b
	}
	return b - a
}

// editDistance is the optimal-string-alignment distance between a and b
// (bytes; names are ASCII identifiers).
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
