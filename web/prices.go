package web

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"

	yaml "go.yaml.in/yaml/v3"
)

// Prices turn model tokens into cost: per model, the price of a million
// input and of a million output tokens (--prices FILE). The zero value and
// nil price nothing: tokens are shown without cost.
type Prices struct {
	models map[string]Price
}

// Price is what a million tokens of one model cost, in the table's currency.
type Price struct {
	Input  float64 `yaml:"input" json:"input"`
	Output float64 `yaml:"output" json:"output"`
}

// maxPricesFile bounds the price table file.
const maxPricesFile = 1 << 20

// LoadPrices reads a price table: a YAML mapping of model name to
// {input, output}, the prices of a million tokens:
//
//	gpt-4o-mini: {input: 0.15, output: 0.60}
//	llama3:      {input: 0, output: 0}
func LoadPrices(path string) (*Prices, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("prices: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPricesFile+1))
	if err != nil {
		return nil, fmt.Errorf("prices %s: %w", path, err)
	}
	if len(b) > maxPricesFile {
		return nil, fmt.Errorf("prices %s: the file is over %d bytes", path, maxPricesFile)
	}
	p, err := ParsePrices(b)
	if err != nil {
		return nil, fmt.Errorf("prices %s: %w", path, err)
	}
	return p, nil
}

// ParsePrices reads a price table from YAML (see LoadPrices). Every model
// needs both prices, finite and not negative; unknown fields are refused.
func ParsePrices(b []byte) (*Prices, error) {
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
