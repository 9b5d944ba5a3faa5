package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

// `studio mcp` is a bridge: it speaks MCP on stdin/stdout (one JSON-RPC
// message per line, as MCP's stdio transport) and forwards every message to
// a running studio's /v1/mcp (the streamable HTTP transport), writing back
// what the studio answers. The runs are that studio's: recorded, shown on
// its run pages, under its roles and bounds. It connects to the one URL it
// is given and follows no redirect.

// Bounds of the bridge.
const (
	mcpBridgeLine = 1 << 20 // a message from the client; the studio refuses larger bodies
	// mcpBridgeRetry is the wait before the server's stream is opened again
	// after it ended (the studio restarted, a proxy cut it).
	mcpBridgeRetry = time.Second
)

func cmdMCP(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runMCPBridge(ctx, args, os.Stdin, stdout, stderr)
}

func runMCPBridge(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("url", "http://127.0.0.1:8080", "the running studio's `URL`; its /v1/mcp is the only address the bridge connects to")
	token := fs.String("token", os.Getenv("STUDIO_TOKEN"), "the bearer `TOKEN` sent to the studio (default $STUDIO_TOKEN; none for an open loopback studio)")
	fs.Usage = func() {
		printUsage(fs, "studio mcp [--url URL] [--token TOKEN]",
			"The studio's MCP server on stdin/stdout, for MCP clients that start a command: a bridge\n"+
				"to a running studio's /v1/mcp. Each tool is a chain an admin exposed there; each call is\n"+
				"a run of that studio, recorded and shown on its run page. The token's role must allow\n"+
				"starting runs (editor or admin).")
	}
	args, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if !wantArgs(fs, args) {
		return exitUsage
	}
	u, err := url.Parse(*base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		fmt.Fprintf(stderr, "studio mcp: --url must be an http or https URL of a studio, like http://127.0.0.1:8080; got %q\n", *base)
		return exitUsage
	}
	b := &mcpBridge{
		endpoint: strings.TrimRight(u.String(), "/") + "/v1/mcp",
		token:    *token,
		out:      stdout,
		log:      stderr,
		client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("the studio answered with a redirect; the bridge connects only to --url")
		}},
	}
	return b.run(ctx, stdin)
}

type mcpBridge struct {
	endpoint string
	token    string
	client   *http.Client
	log      io.Writer

	outMu sync.Mutex
	out   io.Writer

	mu       sync.Mutex
	session  string // Mcp-Session-Id, once initialize answered
	protocol string // the negotiated version, sent on every request after
	stream   bool   // the server's stream is being read
}

// run forwards stdin's messages until its end or ctx, then closes the
// session (which cancels the calls still running: their runs stop).
func (b *mcpBridge) run(ctx context.Context, stdin io.Reader) int {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
		b.closeSession()
	}()
	in := bufio.NewReaderSize(stdin, 64<<10)
	for {
		line, err := readBridgeLine(in, mcpBridgeLine)
		if len(bytes.TrimSpace(line)) > 0 {
			var head struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if jerr := json.Unmarshal(line, &head); jerr != nil {
				b.write(rpcError(nil, -32700, "parse error: "+jerr.Error()))
			} else if head.Method == "initialize" {
				// The session id comes with its answer: everything after
				// waits for it.
				b.forward(ctx, line, head.ID, true)
			} else {
				wg.Add(1)
				go func() {
					defer wg.Done()
					b.forward(ctx, line, head.ID, false)
				}()
			}
		}
		if errors.Is(err, errLineTooLong) {
			b.write(rpcError(nil, -32600, fmt.Sprintf("a message is over %d bytes", mcpBridgeLine)))
			continue
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				fmt.Fprintf(b.log, "studio mcp: reading stdin: %v\n", err)
			}
			return exitOK
		}
		if ctx.Err() != nil {
			return exitOK
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readBridgeLine reads one line of at most max bytes; a longer one is skipped to
// its end and answered errLineTooLong.
func readBridgeLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, err
	}
}

// forward POSTs one message and writes what the studio answers: nothing
// (202), one message, or a stream of them (progress, elicitation requests,
// then the response).
func (b *mcpBridge) forward(ctx context.Context, msg, id json.RawMessage, initialize bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.endpoint, bytes.NewReader(msg))
	if err != nil {
		b.fail(id, err.Error())
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	b.headers(req)
	res, err := b.client.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			b.fail(id, fmt.Sprintf("the studio at %s did not answer: %v", b.endpoint, err))
		}
		return
	}
	defer res.Body.Close()
	if res.StatusCode >= 300 {
		b.refused(res, id)
		return
	}
	if initialize {
		b.mu.Lock()
		b.session = res.Header.Get("Mcp-Session-Id")
		b.mu.Unlock()
	}
	b.relay(res, initialize)
	if initialize {
		b.openStream(ctx)
	}
}

func (b *mcpBridge) headers(req *http.Request) {
	if b.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.session != "" {
		req.Header.Set("Mcp-Session-Id", b.session)
	}
	if b.protocol != "" {
		req.Header.Set("Mcp-Protocol-Version", b.protocol)
	}
}

// relay writes the messages of an answer, JSON or server-sent events.
func (b *mcpBridge) relay(res *http.Response, initialize bool) {
	ct := res.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "text/event-stream"):
		readSSE(res.Body, func(data []byte) {
			b.note(data, initialize)
			b.write(data)
		})
	case strings.HasPrefix(ct, "application/json"):
		body, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
		if err == nil && len(bytes.TrimSpace(body)) > 0 {
			b.note(body, initialize)
			b.write(body)
		}
	}
}

// note keeps the protocol version initialize negotiated.
func (b *mcpBridge) note(msg []byte, initialize bool) {
	if !initialize {
		return
	}
	var r struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if json.Unmarshal(msg, &r) == nil && r.Result.ProtocolVersion != "" {
		b.mu.Lock()
		b.protocol = r.Result.ProtocolVersion
		b.mu.Unlock()
	}
}

// refused answers a request the studio refused: its JSON-RPC error with the
// request's id, else an error saying the status and what the studio said.
func (b *mcpBridge) refused(res *http.Response, id json.RawMessage) {
	body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	var e struct {
		Error *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data,omitempty"`
		} `json:"error"`
	}
	msg := strings.TrimSpace(string(body))
	code := -32000
	var data json.RawMessage
	if json.Unmarshal(body, &e) == nil && e.Error != nil && e.Error.Message != "" {
		msg, code, data = e.Error.Message, e.Error.Code, e.Error.Data
	}
	msg = fmt.Sprintf("the studio refused (%s): %s", res.Status, msg)
	if len(id) == 0 || string(id) == "null" {
		fmt.Fprintln(b.log, "studio mcp:", msg)
		return
	}
	out := map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}}
	if len(data) > 0 {
		out["error"].(map[string]any)["data"] = data
	}
	j, _ := json.Marshal(out)
	b.write(j)
}

// fail answers a request that could not reach the studio.
func (b *mcpBridge) fail(id json.RawMessage, msg string) {
	if len(id) == 0 || string(id) == "null" {
		fmt.Fprintln(b.log, "studio mcp:", msg)
		return
	}
	b.write(rpcError(id, -32000, msg))
}

func rpcError(id json.RawMessage, code int, msg string) []byte {
	var idv any = id
	if len(id) == 0 {
		idv = nil
	}
	j, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": idv, "error": map[string]any{"code": code, "message": msg}})
	return j
}

// write puts one message on stdout, on one line.
func (b *mcpBridge) write(msg []byte) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, msg); err != nil {
		fmt.Fprintf(b.log, "studio mcp: the studio sent a message that is not JSON: %v\n", err)
		return
	}
	buf.WriteByte('\n')
	b.outMu.Lock()
	defer b.outMu.Unlock()
	_, _ = b.out.Write(buf.Bytes())
}

// openStream reads the session's stream of server messages (tools/list
// changes, …) until the session ends; it is opened again after it ends.
func (b *mcpBridge) openStream(ctx context.Context) {
	b.mu.Lock()
	if b.stream || b.session == "" {
		b.mu.Unlock()
		return
	}
	b.stream = true
	b.mu.Unlock()
	go func() {
		for ctx.Err() == nil {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.endpoint, nil)
			if err != nil {
				return
			}
			req.Header.Set("Accept", "text/event-stream")
			b.headers(req)
			res, err := b.client.Do(req)
			if err == nil {
				ok := res.StatusCode == http.StatusOK
				if ok {
					b.relay(res, false)
				}
				res.Body.Close()
				if !ok && res.StatusCode != http.StatusServiceUnavailable && res.StatusCode != http.StatusTooManyRequests {
					return // no stream offered, or the session is gone
				}
			}
			t := time.NewTimer(mcpBridgeRetry)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}()
}

// closeSession ends the studio's session (DELETE), which cancels the calls
// still running.
func (b *mcpBridge) closeSession() {
	b.mu.Lock()
	sid := b.session
	b.mu.Unlock()
	if sid == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, b.endpoint, nil)
	if err != nil {
		return
	}
	b.headers(req)
	if res, err := b.client.Do(req); err == nil {
		res.Body.Close()
	}
}

// readSSE calls fn with the data of each server-sent event (data lines
// joined; events without data, like a stream's priming event, skipped).
func readSSE(r io.Reader, fn func([]byte)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if len(bytes.TrimSpace(data)) > 0 {
				fn(data)
			}
			data = nil
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[5:], []byte(" "))
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
	}
	if len(bytes.TrimSpace(data)) > 0 {
		fn(data)
	}
}
