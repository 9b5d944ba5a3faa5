package views

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/store"
)

func TestGroupVersions(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	var vs []store.ChainVersion
	add := func(kind store.VersionKind, at time.Duration, msg string) {
		vs = append([]store.ChainVersion{{Version: len(vs) + 1, Kind: kind, Created: t0.Add(at), Message: msg}}, vs...)
	}
	add(store.VersionSave, 0, "created")
	for i := 0; i < 12; i++ { // v2..v13: 12 edits over 3 minutes
		add(store.VersionAutosave, time.Minute+time.Duration(i)*time.Minute*3/11, "edited in the designer")
	}
	add(store.VersionNamed, 5*time.Minute, "Ready for review") // v14
	add(store.VersionAutosave, 6*time.Minute, "")              // v15
	add(store.VersionAutosave, 7*time.Minute, "")              // v16
	add(store.VersionAutosave, 40*time.Minute, "")             // v17: after a pause, alone
	rows := GroupVersions(vs, BurstGap)
	var got []string
	for _, r := range rows {
		if len(r.Burst) > 0 {
			got = append(got, "burst v"+itoa(r.oldest().Version)+"-v"+itoa(r.newest().Version)+": "+r.BurstSummary())
		} else {
			got = append(got, "v"+itoa(r.Version.Version)+" "+string(r.Version.Kind))
		}
	}
	want := []string{
		"v17 autosave",
		"burst v15-v16: 2 edits, 1 min",
		"v14 named",
		"burst v2-v13: 12 edits, 3 min",
		"v1 save",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !rows[3].contains(7) || rows[3].contains(14) {
		t.Fatal("contains")
	}
}

func TestDiffValue(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		`"input.x > 1 && y"`: "input.x > 1 && y",
		`{"b":1,"a":"<x>"}`:  "{\n  \"a\": \"<x>\",\n  \"b\": 1\n}",
		`3`:                  "3",
		``:                   "",
	} {
		if got := diffValue(json.RawMessage(raw)); got != want {
			t.Errorf("diffValue(%s) = %q, want %q", raw, got, want)
		}
	}
}
