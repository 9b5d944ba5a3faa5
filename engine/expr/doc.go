// Package expr parses and evaluates the expressions used across a chain:
// edge conditions, input_map values, items_path, set_state and agent guards.
//
// An expression is parsed once (Parse) and evaluated many times (Expr.Eval,
// Expr.Test); a parsed *Expr is immutable and safe for concurrent use.
// Syntax errors are *SyntaxError values carrying the 0-based byte offset of
// the problem.
//
// # Three spellings of one language
//
// The spelling is chosen by the shape of the (trimmed) source:
//
//   - Guard (value template): the whole source is exactly one {{ ... }},
//     e.g. {{ output.data.score > 7 }} or {{ output.answer }}. The inside is
//     a small Jinja-like language: literals (numbers, 'single' or "double"
//     quoted strings with backslash escapes, true/false/True/False,
//     none/None/null), paths (a.b.c, a['x-y'], a["k"], a[0], a[-1]; an
//     identifier may contain '-' after its first character, so
//     node_results.email-composer.x is a path), comparisons
//     == != < <= > >=, in / not in, and, or, not, parentheses and the
//     filters |length |lower |upper |int |float |string. The expression
//     evaluates to its value, so {{ output.answer }} yields the answer
//     itself. and / or / not yield booleans (using Truthy).
//
//   - Comparison: the source contains {{ but is not a single template:
//     <operand> <op> <operand>, where an operand is {{ guard-expression }}
//     or a literal — 'quoted' or "quoted" text, a number, true/false/null or a
//     bare word (a string, e.g. billing). The operators are == != < <= > >=
//     contains startswith; comparisons chain with and / or (and binds
//     tighter). A lone operand is tested for truthiness.
//
//   - JMESPath: everything else, evaluated by github.com/jmespath/go-jmespath,
//     e.g. length(output.items) > `0` or "email-composer".output.answer.
//     Unknown function names are rejected at parse time. go-jmespath only
//     treats float64 as a number, so data handed to JMESPath expressions
//     should hold JSON-decoded values (the guard and comparison spellings
//     also accept Go int types).
//
// In the guard and comparison spellings numbers compare as numbers: values
// that are numbers, or strings read from data (or bare literals) that parse
// as numbers, compare numerically when both sides are numeric. A quoted
// literal is always text and is never converted, so {{ zip }} == "02134"
// compares strings. == and != are deep equality on JSON values (1 == 1.0);
// ordering between incompatible types is false, never an error.
//
// # Truthiness
//
// Truthy(v) is true for: true; a non-zero number; the text "true", "1" or
// "yes" (case-insensitive, surrounding space ignored); a non-empty list or
// object. Everything else — false, nil, 0, "", "no", any other text, empty
// containers — is false.
//
// # Strict mode
//
// With strict=true a path that does not exist is a *MissingPathError naming
// the path as written; a key that exists with the value null is not missing.
// Without strict mode a missing path is nil.
//
// # Files, by stage
//
// As in text/template/parse: lex.go turns the inside of {{ ... }} into
// tokens; parse.go (the guard spelling) and parse_comparison.go (the
// comparison spelling) build the tree declared in node.go; eval.go evaluates
// it. jmes.go parses and analyses the JMESPath spelling with go-jmespath's
// parser, jmeseval.go evaluates its tree under a budget and jmeserr.go words
// its type errors; expr.go is the public API (Parse, Expr), template.go the
// text templates, lint.go the checks validation runs.
package expr
