package web

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/runs"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the studio's Prometheus metrics, served at GET /metrics in the
// text exposition format (behind the token like every other route). Each
// server has its own registry, so tests can run several servers at once.
//
// Metrics is the run service's observer (runs.Observer): the service reports
// runs, node events and store latencies to it, and the server measures HTTP.
type Metrics struct {
	reg     *prometheus.Registry
	watched bool // the run service's gauges are registered

	runsStarted  *prometheus.CounterVec   // kind
	runsFinished *prometheus.CounterVec   // status
	nodes        *prometheus.CounterVec   // phase: done, error, skip
	nodeSeconds  *prometheus.HistogramVec // phase
	httpSeconds  *prometheus.HistogramVec // method, route, code class
	storeSeconds *prometheus.HistogramVec // op
	modelTokens  *prometheus.CounterVec   // model, type (input, output)
	modelCalls   *prometheus.CounterVec   // model

	// models are the model label values in use: at most maxModelLabels,
	// later ones count as "other", so a stream of model names cannot grow
	// the label set without bound.
	modelMu sync.Mutex
	models  map[string]bool

	// Start time of every node attempt in flight, per run, so that the
	// terminal event can observe the duration. A run's entries are dropped
	// when it stops (runFinished), so cancelled nodes do not accumulate.
	mu     sync.Mutex
	starts map[string]map[nodeKey]time.Time
}

type nodeKey struct {
	node string
	item int // map item index, -1 outside map bodies
}

// maxTrackedStarts bounds the start-time table: sub-chain runs (which the
// run service does not see end) could otherwise leave entries behind forever.
const maxTrackedStarts = 200_000

var _ runs.Observer = (*Metrics)(nil)

// NewMetrics returns a fresh set of metrics on its own registry.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), starts: map[string]map[nodeKey]time.Time{}}
	m.runsStarted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "studio_runs_started_total", Help: "Runs started (kind: run, resume, rerun, node, a2e).",
	}, []string{"kind"})
	m.runsFinished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "studio_runs_finished_total", Help: "Runs that stopped, by final status (paused included; host_error when the run could not execute).",
	}, []string{"status"})
	m.nodes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "studio_node_executions_total", Help: "Node executions that ended, by phase (done, error, skip).",
	}, []string{"phase"})
	m.nodeSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "studio_node_duration_seconds", Help: "Wall time of node executions, from the first start event to the terminal event (retries included).",
		Buckets: []float64{.0001, .0005, .001, .005, .01, .05, .1, .5, 1, 5, 30, 120, 600},
	}, []string{"phase"})
	m.httpSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "studio_http_request_duration_seconds", Help: "HTTP request latency by route (store reads and writes included); event streams are observed when they close.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10},
	}, []string{"method", "route", "code"})
	m.storeSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "studio_store_duration_seconds", Help: "Latency of store calls: the engine's checkpoint append/load/claim, run creation, and the event-writer flush before a resume.",
		Buckets: []float64{.0001, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1, 5},
	}, []string{"op"})
	m.modelTokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "studio_model_tokens_total", Help: "Tokens model servers reported for agents' model calls, by model and type (input, output); at most 50 models, the rest as other.",
	}, []string{"model", "type"})
	m.modelCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "studio_model_calls_total", Help: "Agents' model calls that answered, by model (at most 50, the rest as other).",
	}, []string{"model"})
	m.models = map[string]bool{}
	m.reg.MustRegister(m.runsStarted, m.runsFinished, m.nodes, m.nodeSeconds, m.httpSeconds, m.storeSeconds, m.modelTokens, m.modelCalls,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// gauged is what the metrics read of the run service (runs.Service).
type gauged interface {
	Watchers() int
	ActiveCount() int
	QueueStats() runs.QueueStats
	EventsDropped() uint64
}

// watch registers the gauges read from the run service. One set of metrics
// serves one run service.
func (m *Metrics) watch(svc gauged) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.watched {
		return errors.New("web: these metrics already watch a run service")
	}
	m.watched = true
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "studio_sse_watchers", Help: "Live event-stream subscriptions (SSE watchers of runs).",
		}, func() float64 { return float64(svc.Watchers()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "studio_runs_active", Help: "Runs executing in this process.",
		}, func() float64 { return float64(svc.ActiveCount()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "studio_runs_queued", Help: "Runs waiting for a free slot (--max-running-runs).",
		}, func() float64 { return float64(svc.QueueStats().Waiting) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "studio_events_dropped_total", Help: "Events the event writer could not store after retries.",
		}, func() float64 { return float64(svc.EventsDropped()) }),
	} {
		if err := m.reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Emit implements engine.EventSink: node counts and durations.
func (m *Metrics) Emit(ev engine.Event) {
	key := nodeKey{node: ev.NodeID, item: -1}
	if ev.Item != nil {
		key.item = *ev.Item
	}
	switch ev.Phase {
	case engine.PhaseProgress:
		if u, ok := engine.UsageOf(&ev); ok {
			model := m.modelLabel(u.Model)
			m.modelCalls.WithLabelValues(model).Inc()
			m.modelTokens.WithLabelValues(model, "input").Add(float64(u.InputTokens))
			m.modelTokens.WithLabelValues(model, "output").Add(float64(u.OutputTokens))
		}
	case engine.PhaseStart:
		m.mu.Lock()
		run := m.starts[ev.RunID]
		if run == nil {
			if len(m.starts) >= maxTrackedStarts {
				clear(m.starts)
			}
			run = map[nodeKey]time.Time{}
			m.starts[ev.RunID] = run
		}
		if _, ok := run[key]; !ok { // a retry keeps the first attempt's start
			run[key] = ev.Time
		}
		m.mu.Unlock()
	case engine.PhaseDone, engine.PhaseError, engine.PhaseSkip:
		// An error followed by a retry, or by the skip its on_error chose,
		// does not end the node: the event after it does.
		if ev.Reason == engine.ReasonRetrying || ev.Phase == engine.PhaseError && ev.Reason == engine.ReasonOnErrorSkip {
			return
		}
		m.mu.Lock()
		started, ok := m.starts[ev.RunID][key]
		if ok {
			delete(m.starts[ev.RunID], key)
		}
		m.mu.Unlock()
		phase := string(ev.Phase)
		m.nodes.WithLabelValues(phase).Inc()
		if ok {
			m.nodeSeconds.WithLabelValues(phase).Observe(ev.Time.Sub(started).Seconds())
		}
	}
}

// maxModelLabels bounds the model label values of the token counters.
const maxModelLabels = 50

// modelLabel is the label value of model: itself while there is room.
func (m *Metrics) modelLabel(model string) string {
	m.modelMu.Lock()
	defer m.modelMu.Unlock()
	if m.models[model] {
		return model
	}
	if len(m.models) >= maxModelLabels || model == "" || len(model) > 128 {
		return "other"
	}
	m.models[model] = true
	return model
}

// RunStarted implements runs.Observer.
func (m *Metrics) RunStarted(kind string) { m.runsStarted.WithLabelValues(kind).Inc() }

// RunFinished implements runs.Observer.
func (m *Metrics) RunFinished(id string, res *engine.Result, err error) {
	status := "host_error"
	if err == nil && res != nil {
		status = string(res.Status)
	}
	m.runsFinished.WithLabelValues(status).Inc()
	m.mu.Lock()
	delete(m.starts, id)
	m.mu.Unlock()
}

// StoreCall implements runs.Observer.
func (m *Metrics) StoreCall(op string, took time.Duration) {
	m.storeSeconds.WithLabelValues(op).Observe(took.Seconds())
}

// middleware observes every request's latency by route pattern (never the
// raw path, so ids do not explode the label set). status is the status the
// error handler answers a returned error with.
func (m *Metrics) middleware(status func(error) int) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			route := c.Path()
			if route == "" {
				route = "unmatched"
			}
			code := c.Response().Status
			if err != nil && !c.Response().Committed {
				code = status(err)
			}
			m.httpSeconds.WithLabelValues(c.Request().Method, route, strconv.Itoa(code/100)+"xx").Observe(time.Since(start).Seconds())
			return err
		}
	}
}

// handler serves the registry in the Prometheus text format.
func (m *Metrics) handler() echo.HandlerFunc {
	h := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return echo.WrapHandler(h)
}

// Registry returns the server's metrics registry (for embedding hosts and tests).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }
