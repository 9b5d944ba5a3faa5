package pricing

import (
	"strings"
	"testing"
)

// TestParsePrices: a price table names each model's two prices; anything
// else is refused with the model and field.
func TestParsePrices(t *testing.T) {
	p, err := Parse([]byte("gpt-4o-mini: {input: 0.15, output: 0.6}\nllama3: {input: 0, output: 0}\n"))
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
		if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", doc, err, want)
		}
	}
}

// TestPriceTotals: calls sum their tokens; with a table, the priced calls their
// cost and the others count as unpriced.
func TestPriceTotals(t *testing.T) {
	var none Totals
	none.Add(nil, "m", 2, 10, 20, 1)
	if none.Calls != 2 || none.InputTokens != 10 || none.OutputTokens != 20 || none.Unreported != 1 || none.Cost != nil {
		t.Fatalf("without prices: %+v", none)
	}
	p, err := Parse([]byte("m: {input: 1, output: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var tt Totals
	tt.Add(p, "m", 1, 1_000_000, 1_000_000, 0)
	tt.Add(p, "other", 3, 5, 5, 0)
	if tt.Cost == nil || *tt.Cost != 3 || tt.Unpriced != 3 || tt.Calls != 4 {
		t.Fatalf("with prices: %+v (cost %v)", tt, tt.Cost)
	}
}
