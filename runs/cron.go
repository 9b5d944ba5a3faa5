package runs

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/robfig/cron/v3"
)

// CronError is a schedule that cannot be used: Field is "cron" or
// "time_zone"; Position is the 1-based column in the cron expression where
// the faulty field starts (0 for the time zone or the whole expression).
type CronError struct {
	Field    string
	Position int
	Message  string
}

func (e *CronError) Error() string {
	if e.Position > 0 {
		return fmt.Sprintf("%s, column %d: %s", e.Field, e.Position, e.Message)
	}
	return e.Field + ": " + e.Message
}

// CronSpec is a parsed cron expression in its time zone.
type CronSpec struct {
	sched *cron.SpecSchedule
	loc   *time.Location
}

// Next returns the first tick after t (zero when there is none within five
// years, which ParseCron refuses).
func (c *CronSpec) Next(t time.Time) time.Time {
	n := c.sched.Next(t.In(c.loc))
	if n.IsZero() {
		return n
	}
	return n.UTC()
}

// MaxCronLength bounds a cron expression.
const MaxCronLength = 200

// cronFields names the five fields of a standard cron expression.
var cronFields = []string{"minute", "hour", "day of month", "month", "day of week"}

var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseCron checks a cron expression (five fields: minute hour day-of-month
// month day-of-week, or a descriptor: @yearly, @monthly, @weekly, @daily,
// @hourly) and a time zone (an IANA name; "" is UTC), robfig/cron's syntax.
// A bad expression is a *CronError naming the field and its column.
func ParseCron(expr, zone string) (*CronSpec, error) {
	loc, err := loadZone(zone)
	if err != nil {
		return nil, err
	}
	if len(expr) > MaxCronLength {
		return nil, &CronError{Field: "cron", Message: fmt.Sprintf("the expression is %d characters long, more than %d", len(expr), MaxCronLength)}
	}
	if strings.TrimSpace(expr) == "" {
		return nil, &CronError{Field: "cron", Message: "the expression is empty: give five fields (minute hour day-of-month month day-of-week), e.g. \"0 9 * * 1-5\""}
	}
	fields, cols := splitFields(expr)
	switch first := fields[0]; {
	case strings.HasPrefix(first, "TZ=") || strings.HasPrefix(first, "CRON_TZ="):
		return nil, &CronError{Field: "cron", Position: cols[0], Message: "a time zone inside the expression is not taken: set time_zone instead"}
	case strings.HasPrefix(first, "@every"):
		return nil, &CronError{Field: "cron", Position: cols[0], Message: "@every is not taken (its ticks depend on when the studio started): use a cron expression such as \"*/5 * * * *\""}
	case strings.HasPrefix(first, "@"):
		if len(fields) > 1 {
			return nil, &CronError{Field: "cron", Position: cols[1], Message: "unexpected text after the descriptor " + first}
		}
	case len(fields) != 5:
		pos := 0
		if len(fields) > 5 {
			pos = cols[5]
		}
		return nil, &CronError{Field: "cron", Position: pos,
			Message: fmt.Sprintf("expected 5 fields (minute hour day-of-month month day-of-week), found %d", len(fields))}
	default:
		// robfig's errors do not say which field failed: each field is
		// parsed alone, the others stars, to name it and its column.
		for i, f := range fields {
			probe := []string{"*", "*", "*", "*", "*"}
			probe[i] = f
			if _, err := cronParser.Parse(strings.Join(probe, " ")); err != nil {
				return nil, &CronError{Field: "cron", Position: cols[i],
					Message: fmt.Sprintf("%s field %q: %v", cronFields[i], f, err)}
			}
		}
	}
	s, err := cronParser.Parse(strings.Join(fields, " "))
	if err != nil {
		return nil, &CronError{Field: "cron", Position: cols[0], Message: err.Error()}
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, &CronError{Field: "cron", Position: cols[0], Message: "unsupported expression"}
	}
	spec.Location = loc
	c := &CronSpec{sched: spec, loc: loc}
	if c.Next(time.Now()).IsZero() {
		return nil, &CronError{Field: "cron", Position: cols[0], Message: "the expression never matches a date (e.g. 30 February)"}
	}
	return c, nil
}

// loadZone resolves an IANA zone name; "" is UTC. "Local" is refused: a
// schedule must not change meaning with the server's settings.
func loadZone(zone string) (*time.Location, error) {
	if zone == "" || zone == "UTC" {
		return time.UTC, nil
	}
	if zone == "Local" || len(zone) > 64 {
		return nil, &CronError{Field: "time_zone", Message: fmt.Sprintf("unknown time zone %q: use an IANA name such as \"Europe/Paris\" or \"UTC\"", zone)}
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, &CronError{Field: "time_zone", Message: fmt.Sprintf("unknown time zone %q: use an IANA name such as \"Europe/Paris\" or \"UTC\"", zone)}
	}
	return loc, nil
}

// splitFields splits on blanks and returns each field's 1-based column.
func splitFields(s string) (fields []string, cols []int) {
	start := -1
	for i, r := range s + " " {
		blank := unicode.IsSpace(r)
		switch {
		case !blank && start < 0:
			start = i
		case blank && start >= 0:
			fields = append(fields, s[start:i])
			cols = append(cols, start+1)
			start = -1
		}
	}
	return fields, cols
}
