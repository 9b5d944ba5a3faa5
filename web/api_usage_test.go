package web

import (
	"strings"
	"testing"
)

// TestParsePrices: a price table names each model's two prices; anything
// else is refused with the model and field.
func TestParsePrices(t *testing.T) {
	p, err := ParsePrices([]byte("gpt-4o-mini: {input: 0.15, output: 0.6}\nllama3: {input: 0, output: 0}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := p.Cost("gpt-4o-mini", 1_000_000, 2_000_000); !ok || c != 0.15+1.2 {
		t.Fatalf("cost %v %v", c, ok)
	}
	if _, ok := p.Cost("unknown", 1, 1); ok {
		t.Fatal("an unknown model is priced")
	}
	if _, ok := (*Prices)(nil).Cost("gpt-4o-mini", 1, 1); ok {
		t.Fatal("no table prices something")
	}
	for doc, want := range map[string]string{
		"m: {input: 1}\n":                       `model "m": output is missing`,
		"m: {input: -1, output: 1}\n":           `model "m": input must be a price of at least 0`,
		"m: {input: 1, output: 1, cached: 2}\n": "field cached not found",
		"m:\n":                                  `model "m": give input and output`,
		"":                                      "the price table is empty",
		"- m\n":                                 "cannot unmarshal",
	} {
		if _, err := ParsePrices([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", doc, err, want)
		}
	}
}

// TestUsageAPIParameters: bad parameters are a 400 naming the parameter;
// an unknown run is a 404; an empty studio sums to nothing.
func TestUsageAPIParameters(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	for q, param := range map[string]string{
		"by=model":        "by",
		"bucket=month":    "bucket",
		"since=yesterday": "since",
		"until=2026-01-01T00:00:00Z&since=2026-02-01T00:00:00Z": "since",
		"since=2020-01-01T00:00:00Z&until=2026-01-01T00:00:00Z": "since",
		"limit=0": "limit",
	} {
		r := do(t, ts, "GET", "/v1/usage?"+q, nil)
		wantStatus(t, r, 400)
		if r.errCode(t) != "bad_parameter" || r.errDetails(t)["parameter"] != param {
			t.Errorf("%s: %s", q, r.body)
		}
	}
	r := do(t, ts, "GET", "/v1/usage?by=agent", nil)
	wantStatus(t, r, 200)
	m := r.json(t)
	if rows, _ := m["rows"].([]any); len(rows) != 0 || m["priced"] != false || m["total"].(map[string]any)["cost"] != nil {
		t.Fatalf("empty usage %s", r.body)
	}
	r = do(t, ts, "GET", "/v1/runs/nope/usage", nil)
	wantStatus(t, r, 404)
}
