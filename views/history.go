package views

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/chainstudio/studio/store"
)

// BurstGap is the longest pause between two autosaves of one burst: edits
// closer together than this are one sitting and one row of the history.
const BurstGap = 10 * time.Minute

// VersionRow is one row of the history: a single version, or a burst of
// consecutive autosaves (newest first) shown as "12 edits, 3 min".
type VersionRow struct {
	Version store.ChainVersion   // a single version (Burst empty)
	Burst   []store.ChainVersion // two or more autosaves, newest first
}

// GroupVersions folds the runs of consecutive autosaves in vs (newest
// first, as ListVersions returns them) into bursts. A burst ends at any other
// version (a named one, a restore, an API save) and at a pause of BurstGap or
// more; a lone autosave stays a row of its own.
func GroupVersions(vs []store.ChainVersion, gap time.Duration) []VersionRow {
	var rows []VersionRow
	var burst []store.ChainVersion
	flush := func() {
		switch len(burst) {
		case 0:
		case 1:
			rows = append(rows, VersionRow{Version: burst[0]})
		default:
			rows = append(rows, VersionRow{Burst: burst})
		}
		burst = nil
	}
	for _, v := range vs {
		if v.Kind != store.VersionAutosave {
			flush()
			rows = append(rows, VersionRow{Version: v})
			continue
		}
		if len(burst) > 0 && burst[len(burst)-1].Created.Sub(v.Created) >= gap {
			flush()
		}
		burst = append(burst, v)
	}
	flush()
	return rows
}

func (r VersionRow) newest() store.ChainVersion { return r.Burst[0] }
func (r VersionRow) oldest() store.ChainVersion { return r.Burst[len(r.Burst)-1] }

// contains reports whether version v is in the burst.
func (r VersionRow) contains(v int) bool {
	return len(r.Burst) > 0 && v <= r.newest().Version && v >= r.oldest().Version
}

// BurstSummary is the burst's row text: "12 edits, 3 min".
func (r VersionRow) BurstSummary() string {
	return fmt.Sprintf("%d edits, %s", len(r.Burst), span(r.newest().Created.Sub(r.oldest().Created)))
}

// span is a burst's length in words.
func span(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "under a minute"
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Round(time.Minute).Minutes()))
	}
	h := int(d.Hours())
	m := int((d - time.Duration(h)*time.Hour).Minutes())
	if m == 0 {
		return fmt.Sprintf("%d h", h)
	}
	return fmt.Sprintf("%d h %d min", h, m)
}

// versionWhat is a single version's row text.
func versionWhat(v store.ChainVersion) string {
	switch {
	case v.Message != "":
		return v.Message
	case v.Version == 1:
		return "created"
	}
	return "saved"
}

// diffValue shows one side of a changed value: a string as it is (an
// expression reads as written), anything else as indented JSON; "" when
// the value is absent.
func diffValue(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	if s, ok := v.(string); ok {
		return s
	}
	return pretty(v)
}
