package builtin

import "sort"

// OutputSchemas describes the output of the built-in tools whose output has
// a fixed shape, in the small JSON-Schema form chain.CheckShape reads. A
// host declares them with engine.Registry.SetOutputSchema so that a chain
// test's mock of such a tool is checked against what the tool really returns.
// echo, transform, delay and interrupt return whatever they are given, so
// they have none.
func OutputSchemas() map[string]map[string]any {
	obj := func(props map[string]any) map[string]any {
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys) // the first missing field named is always the same
		req := make([]any, len(keys))
		for i, k := range keys {
			req[i] = k
		}
		return map[string]any{"type": "object", "properties": props, "required": req}
	}
	t := func(name string) map[string]any { return map[string]any{"type": name} }
	return map[string]map[string]any{
		"template":   obj(map[string]any{"text": t("string")}),
		"http":       obj(map[string]any{"status": t("integer"), "headers": t("object"), "body": t("any")}),
		"fail":       obj(map[string]any{"attempt": t("integer"), "ok": t("boolean")}),
		"read_file":  obj(map[string]any{"path": t("string"), "content": t("string"), "size": t("integer")}),
		"write_file": obj(map[string]any{"path": t("string"), "size": t("integer")}),
		"proc":       obj(map[string]any{"stdout": t("string"), "stderr": t("string"), "exit_code": t("integer")}),
	}
}
