// Package pricing turns the tokens of model calls into cost: a price table
// (per model, the price of a million input and of a million output tokens)
// and the sums of calls, tokens and cost the usage answers show.
package pricing

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"

	yaml "go.yaml.in/yaml/v3"
)

// Prices turn model tokens into cost: per model, the price of a million
// input and of a million output tokens. The zero value and nil price
// nothing: tokens are shown without cost.
type Prices struct {
	models map[string]Price
}

// Price is what a million tokens of one model cost, in the table's currency.
type Price struct {
	Input  float64 `yaml:"input" json:"input"`
	Output float64 `yaml:"output" json:"output"`
}

// Parse reads a price table: a YAML mapping of model name to {input,
// output}, the prices of a million tokens:
//
//	gpt-4o-mini: {input: 0.15, output: 0.60}
//	llama3:      {input: 0, output: 0}
//
// Every model needs both prices, finite and not negative; unknown fields
// are refused.
func Parse(b []byte) (*Prices, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var raw map[string]*Price
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the price table is empty")
		}
		return nil, err
	}
	var node yaml.Node // both prices must be written: a missing one is a mistake, not free
	if err := yaml.Unmarshal(b, &node); err != nil {
		return nil, err
	}
	p := &Prices{models: make(map[string]Price, len(raw))}
	for model, pr := range raw {
		if pr == nil {
			return nil, fmt.Errorf("model %q: give input and output, the prices of a million tokens", model)
		}
		if missing := missingPrice(&node, model); missing != "" {
			return nil, fmt.Errorf("model %q: %s is missing (the price of a million %s tokens)", model, missing, missing)
		}
		for field, v := range map[string]float64{"input": pr.Input, "output": pr.Output} {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("model %q: %s must be a price of at least 0, got %v", model, field, v)
			}
		}
		p.models[model] = *pr
	}
	return p, nil
}

// missingPrice names the price field model's entry lacks, "" when both are
// there.
func missingPrice(doc *yaml.Node, model string) string {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return ""
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != model {
			continue
		}
		entry, have := m.Content[i+1], map[string]bool{}
		for j := 0; j+1 < len(entry.Content); j += 2 {
			have[entry.Content[j].Value] = true
		}
		for _, f := range []string{"input", "output"} {
			if !have[f] {
				return f
			}
		}
	}
	return ""
}

// Cost is what the tokens cost with model's price, and whether the table
// prices it.
func (p *Prices) Cost(model string, in, out int64) (float64, bool) {
	if p == nil {
		return 0, false
	}
	pr, ok := p.models[model]
	if !ok {
		return 0, false
	}
	return (float64(in)*pr.Input + float64(out)*pr.Output) / 1e6, true
}

// Len is how many models the table prices.
func (p *Prices) Len() int {
	if p == nil {
		return 0
	}
	return len(p.models)
}

// Models lists the priced models by name.
func (p *Prices) Models() []string {
	if p == nil {
		return nil
	}
	out := make([]string, 0, len(p.models))
	for m := range p.models {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// Totals are the summed tokens (and cost) of some model calls. Cost is
// null without a price table; Unpriced counts the calls to models the table
// does not price (left out of Cost).
type Totals struct {
	Calls        int64    `json:"calls"`
	InputTokens  int64    `json:"input_tokens"`
	OutputTokens int64    `json:"output_tokens"`
	Cost         *float64 `json:"cost"`
	Unpriced     int64    `json:"unpriced_calls,omitempty"`
	Unreported   int64    `json:"unreported_calls,omitempty"` // the server reported no usage
}

// Add sums calls model calls to model; p may be nil.
func (t *Totals) Add(p *Prices, model string, calls, in, out, unreported int64) {
	t.Calls += calls
	t.InputTokens += in
	t.OutputTokens += out
	t.Unreported += unreported
	if p == nil {
		return
	}
	if t.Cost == nil {
		t.Cost = new(float64)
	}
	if c, ok := p.Cost(model, in, out); ok {
		*t.Cost += c
	} else {
		t.Unpriced += calls
	}
}
