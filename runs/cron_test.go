package runs

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A bad cron expression names the field and the column it starts at; a bad
// zone names the zone.
func TestParseCronErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		expr, zone string
		field      string
		pos        int
		want       string
	}{
		{"0 9 32 * *", "", "cron", 5, "day of month field \"32\""},
		{"*/5 25 * * *", "", "cron", 5, "hour field \"25\""},
		{"0  9 * 13 *", "", "cron", 8, "month field \"13\""},
		{"0 9 * * mon-xyz", "", "cron", 9, "day of week field"},
		{"x 9 * * *", "", "cron", 1, "minute field \"x\""},
		{"0 9 * *", "", "cron", 0, "expected 5 fields"},
		{"0 9 * * * 2026", "", "cron", 11, "expected 5 fields"},
		{"", "", "cron", 0, "empty"},
		{"@every 5m", "", "cron", 1, "@every is not taken"},
		{"@sometimes", "", "cron", 1, "unrecognized descriptor"},
		{"TZ=Europe/Paris 0 9 * * *", "", "cron", 1, "time_zone"},
		{"0 0 30 2 *", "", "cron", 1, "never matches"},
		{"0 9 * * *", "Mars/Olympus_Mons", "time_zone", 0, `unknown time zone "Mars/Olympus_Mons"`},
		{"0 9 * * *", "Local", "time_zone", 0, `unknown time zone "Local"`},
	} {
		_, err := ParseCron(c.expr, c.zone)
		var ce *CronError
		if !errors.As(err, &ce) {
			t.Errorf("%q %q: %v, want a *CronError", c.expr, c.zone, err)
			continue
		}
		if ce.Field != c.field || ce.Position != c.pos || !strings.Contains(ce.Message, c.want) {
			t.Errorf("%q %q: field %s position %d %q; want %s %d containing %q", c.expr, c.zone, ce.Field, ce.Position, ce.Message, c.field, c.pos, c.want)
		}
	}
}

// Ticks follow the zone, daylight saving time included.
func TestCronNextInZone(t *testing.T) {
	t.Parallel()
	spec, err := ParseCron("0 9 * * 1-5", "Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	// Friday 27 March 2026, 12:00 UTC → Monday 30 March 09:00 CEST (07:00 UTC; DST began on the 29th).
	got := spec.Next(time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC))
	if want := time.Date(2026, 3, 30, 7, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("next: %v, want %v", got, want)
	}
	daily, err := ParseCron("@daily", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := daily.Next(time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC)); !got.Equal(time.Date(2026, 3, 28, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("@daily in UTC: %v", got)
	}
}
