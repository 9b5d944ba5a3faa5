package web

import (
	"fmt"
	"io"
	"os"

	"github.com/chainstudio/studio/engine/pricing"
)

// maxPricesFile bounds the price table file.
const maxPricesFile = 1 << 20

// LoadPrices reads the price table file --prices names (pricing.Parse says
// its form).
func LoadPrices(path string) (*pricing.Prices, error) {
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
	p, err := pricing.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("prices %s: %w", path, err)
	}
	return p, nil
}
