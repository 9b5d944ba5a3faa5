package httpcore

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// summaryEvery is how often a LogSummary writes the count of the warnings
// it held back.
const summaryEvery = time.Minute

// LogSummary writes the first of a stream of alike warnings (refused
// webhook calls, failed readiness pings) in full, then, while more keep
// coming, one line per period with how many came and of which codes: a
// thousand bad calls write two lines, not a thousand. Once a period passes
// with none, the next one is written in full again.
type LogSummary struct {
	log   *slog.Logger
	msg   string
	Every time.Duration // the period of a summary line; NewLogSummary sets summaryEvery

	mu      sync.Mutex
	timer   *time.Timer // nil: quiet, the next warning is written in full
	count   int
	codes   map[string]int
	stopped bool
}

func NewLogSummary(log *slog.Logger, msg string) *LogSummary {
	return &LogSummary{log: log, msg: msg, Every: summaryEvery, codes: map[string]int{}}
}

// warn reports one warning of kind code; attrs are written with the first.
func (l *LogSummary) Warn(code string, attrs ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer == nil {
		l.log.Warn(l.msg, append([]any{"code", code}, attrs...)...)
		if !l.stopped {
			l.timer = time.AfterFunc(l.Every, l.Flush)
		}
		return
	}
	l.count++
	l.codes[code]++
}

// flush writes the summary of the warnings held back since the last line,
// if any, and starts the next period; with none it goes quiet.
func (l *LogSummary) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == 0 {
		if l.timer != nil {
			l.timer.Stop()
		}
		l.timer = nil
		return
	}
	var codes []string
	for _, k := range slices.Sorted(maps.Keys(l.codes)) {
		codes = append(codes, fmt.Sprintf("%s=%d", k, l.codes[k]))
	}
	l.log.Warn(l.msg, "summary", true, "count", l.count, "codes", strings.Join(codes, " "), "period", l.Every.String())
	l.count = 0
	clear(l.codes)
	if l.stopped {
		l.timer = nil
	} else {
		l.timer.Reset(l.Every)
	}
}

// stop writes what is held back and stops the timer (the server shuts
// down); later warnings are written in full.
func (l *LogSummary) Stop() {
	l.mu.Lock()
	l.stopped = true
	if l.timer != nil {
		l.timer.Stop()
	}
	l.mu.Unlock()
	l.Flush()
}
