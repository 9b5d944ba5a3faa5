package web

import "testing"

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
