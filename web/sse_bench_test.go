package web

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Performance benchmarks (docs/benchmarks.md; loopback only, bounded in count and
// time). Run them with:
//
//	go test ./web -run '^$' -bench 'SSEFanout|GetChain' -benchtime 1x
//
// STUDIO_SSE_WATCHERS and STUDIO_SSE_NODES change the fan-out's size
// (default 500 watchers of a 1,000-node run).

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p)
	return sorted[i]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// eventTime pulls the "time" field out of an event's JSON without decoding
// the whole event (the watchers must stay cheap next to the server).
func eventTime(data []byte) (time.Time, bool) {
	key := []byte(`"time":"`)
	i := bytes.LastIndex(data, key)
	if i < 0 {
		return time.Time{}, false
	}
	rest := data[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(rest[:j]))
	return t, err == nil
}

type watcherStats struct {
	events  int
	lastSeq int64
	inOrder bool
	gotRun  bool
	delays  []time.Duration
	err     error
}

// watch reads one event stream to its end, checking order and measuring
// the delay from each event's engine time to its receipt.
func watch(ctx context.Context, client *http.Client, url string, connected *sync.WaitGroup) watcherStats {
	st := watcherStats{inOrder: true}
	res, err := openSSE(ctx, client, url)
	connected.Done()
	if err != nil {
		st.err = err
		return st
	}
	defer res.Body.Close()
	br := bufio.NewReaderSize(res.Body, 64<<10)
	var seq int64
	var isRun bool
	for {
		raw, err := br.ReadSlice('\n')
		if err != nil {
			if err == bufio.ErrBufferFull {
				if isRun && bytes.HasPrefix(raw, []byte("data: ")) {
					st.gotRun = true // the run event's data is long
				}
				for err == bufio.ErrBufferFull { // a long data line: only its tail matters
					_, err = br.ReadSlice('\n')
				}
				if err == nil {
					continue
				}
			}
			if err != io.EOF {
				st.err = err
			}
			return st
		}
		now := time.Now()
		line := raw[:len(raw)-1]
		switch {
		case bytes.HasPrefix(line, []byte("id: ")):
			seq, _ = strconv.ParseInt(string(line[4:]), 10, 64)
		case bytes.HasPrefix(line, []byte("event: ")):
			isRun = string(line[7:]) == "run"
		case bytes.HasPrefix(line, []byte("data: ")):
			if isRun {
				st.gotRun = true
				continue
			}
			if seq != st.lastSeq+1 {
				st.inOrder = false
			}
			st.lastSeq = seq
			st.events++
			if t, ok := eventTime(line[6:]); ok {
				st.delays = append(st.delays, now.Sub(t))
			}
		}
	}
}

// BenchmarkSSEFanout: 500 watchers of one 1,000-node run all receive every
// event in order; reports the p50/p99 delay from Event.Time to receipt.
func BenchmarkSSEFanout(b *testing.B) {
	watchers := envInt("STUDIO_SSE_WATCHERS", 500)
	nodes := envInt("STUDIO_SSE_NODES", 1000)
	for it := 0; it < b.N; it++ {
		b.StopTimer()
		_, ts := newTestServer(b)
		// A gate node gives every watcher time to connect; then nodes delay
		// nodes of 1 ms each spread the events over time.
		var nb, eb strings.Builder
		fmt.Fprintf(&nb, `{"node_id":"gate","kind":"tool","name":"delay","input":{"ms":%d}}`, 1500+watchers*4)
		prev := "gate"
		for i := 0; i < nodes; i++ {
			fmt.Fprintf(&nb, `,{"node_id":"n%d","kind":"tool","name":"delay","input":{"ms":1}}`, i)
			if i > 0 {
				eb.WriteByte(',')
			}
			fmt.Fprintf(&eb, `{"source":%q,"target":"n%d"}`, prev, i)
			prev = fmt.Sprintf("n%d", i)
		}
		doc := `{"name":"fanout","nodes":[` + nb.String() + `],"edges":[` + eb.String() + `]}`
		runID := startChainRun(b, ts, doc)

		transport := &http.Transport{MaxIdleConnsPerHost: watchers, MaxConnsPerHost: 0}
		client := &http.Client{Transport: transport}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		var connected, done sync.WaitGroup
		connected.Add(watchers)
		done.Add(watchers)
		stats := make([]watcherStats, watchers)
		b.StartTimer()
		start := time.Now()
		for w := 0; w < watchers; w++ {
			go func(w int) {
				defer done.Done()
				stats[w] = watch(ctx, client, ts.URL+"/v1/runs/"+runID+"/events", &connected)
			}(w)
		}
		connected.Wait()
		connectedIn := time.Since(start)
		done.Wait()
		total := time.Since(start)
		b.StopTimer()
		cancel()
		transport.CloseIdleConnections()

		want := int64(2 * (nodes + 1))
		var all []time.Duration
		bad := 0
		for w, st := range stats {
			if st.err != nil || !st.inOrder || st.lastSeq != want || st.events != int(want) || !st.gotRun {
				bad++
				if bad <= 3 {
					b.Errorf("watcher %d: %d events, last seq %d (want %d), in order %v, run event %v, err %v",
						w, st.events, st.lastSeq, want, st.inOrder, st.gotRun, st.err)
				}
			}
			// The gate's start event was emitted before the watchers
			// connected: it is a replay, not a live delivery.
			if len(st.delays) > 1 {
				all = append(all, st.delays[1:]...)
			}
		}
		sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
		b.ReportMetric(ms(percentile(all, 0.50)), "p50-ms")
		b.ReportMetric(ms(percentile(all, 0.99)), "p99-ms")
		b.ReportMetric(ms(all[len(all)-1]), "max-ms")
		b.ReportMetric(float64(len(all)), "deliveries")
		b.Logf("%d watchers × %d events (%d-node run): %d deliveries, %d watchers incomplete; connected in %v, all done in %v; delay p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms",
			watchers, want, nodes, len(all), bad, connectedIn.Round(time.Millisecond), total.Round(time.Millisecond),
			ms(percentile(all, 0.5)), ms(percentile(all, 0.9)), ms(percentile(all, 0.99)), ms(all[len(all)-1]))
	}
}

// BenchmarkGetChain500Nodes: GET /v1/chains/{id} of a 500-node chain,
// requests paced at 200/s for 3 s; reports the latency distribution.
func BenchmarkGetChain500Nodes(b *testing.B) {
	const nodes, rate, seconds = 500, 200, 3
	for it := 0; it < b.N; it++ {
		b.StopTimer()
		_, ts := newTestServer(b)
		var nb, eb strings.Builder
		for i := 0; i < nodes; i++ {
			if i > 0 {
				nb.WriteByte(',')
				eb.WriteByte(',')
				fmt.Fprintf(&eb, `{"source":"n%d","target":"n%d"}`, i-1, i)
			}
			fmt.Fprintf(&nb, `{"node_id":"n%d","kind":"tool","name":"echo","label":"Step %d","input_map":{"x":"input.x"},"position":{"x":%d,"y":%d}}`, i, i, i*10, i%7*40)
		}
		id := createChain(b, ts, `{"name":"big","nodes":[`+nb.String()+`],"edges":[`+strings.TrimPrefix(eb.String(), ",")+`]}`)
		client := ts.Client()
		get := func() (time.Duration, int, error) {
			t0 := time.Now()
			res, err := client.Get(ts.URL + "/v1/chains/" + id)
			if err != nil {
				return 0, 0, err
			}
			n, err := io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != 200 {
				return 0, 0, fmt.Errorf("status %d", res.StatusCode)
			}
			return time.Since(t0), int(n), err
		}
		for i := 0; i < 20; i++ { // warm the connection and the doc cache
			if _, _, err := get(); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		var lat []time.Duration
		size := 0
		tick := time.NewTicker(time.Second / rate)
		for i := 0; i < rate*seconds; i++ {
			<-tick.C
			d, n, err := get()
			if err != nil {
				b.Fatal(err)
			}
			lat = append(lat, d)
			size = n
		}
		tick.Stop()
		b.StopTimer()
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		b.ReportMetric(ms(percentile(lat, 0.50)), "p50-ms")
		b.ReportMetric(ms(percentile(lat, 0.99)), "p99-ms")
		b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
		b.Logf("%d GETs of a %d-node chain (%d bytes) at %d/s: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms",
			len(lat), nodes, size, rate, ms(percentile(lat, 0.5)), ms(percentile(lat, 0.9)), ms(percentile(lat, 0.99)), ms(lat[len(lat)-1]))
	}
}
