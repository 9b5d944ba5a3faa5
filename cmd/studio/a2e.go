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
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/a2e"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
)

// maxA2ELine bounds one chain/req line (the document limit).
var maxA2ELine = chain.DefaultLimits.MaxDocumentBytes

// cmdA2E is the A2E chain host over stdin/stdout: one chain/req JSON per
// input line; for each, the chain/event messages (when streaming) and the
// closing chain/resp, one JSON per output line.
func cmdA2E(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runA2E(ctx, args, os.Stdin, stdout, stderr)
}

func runA2E(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("a2e", flag.ContinueOnError)
	fs.SetOutput(stderr)
	codeOpts := registerCode(fs)
	workspace := fs.String("workspace", "", "let read_file/write_file use the folder `DIR` (default: file access disabled)")
	var allowProc listFlag
	fs.Var(&allowProc, "allow-proc", "let proc nodes run the executable `NAME` (repeatable; default: none)")
	allowPrivate := fs.Bool("http-allow-private", false, "let the http tool reach loopback and private addresses")
	chains := fs.String("chains", "", "the folder `DIR` of saved chains (*.json) that skill nodes call by name (default: none)")
	parallel := fs.Int("max-parallel", a2e.DefaultMaxParallel, "run at most `N` chain/req messages at once; more wait (the handshake's max_parallel)")
	queued := fs.Int("max-queued", a2e.DefaultMaxQueued, "let at most `N` chain/req messages wait for a run slot (and 32 MiB of them); past that, reading input waits for room")
	fs.Usage = func() {
		printUsage(fs, "studio a2e [flags] < requests.ndjson",
			"The A2E chain host on stdin/stdout: reads one A2E message per line (handshake/req, ping,\n"+
				"chain/req, shutdown) and writes NDJSON: handshake/resp, pong, and for each chain/req its\n"+
				"chain/event messages (unless streaming is false), then its chain/resp. Requests run\n"+
				"concurrently, answered by req_id; ping and shutdown never wait behind them. A line\n"+
				"that is not a message gets a chain/resp with success false and error code chain_decode.\n"+
				"shutdown, or the end of input, waits for running chains, then exits.")
	}
	args, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if !wantArgs(fs, args) {
		return exitUsage
	}
	if *parallel < 1 || *parallel > maxParallel {
		fmt.Fprintf(stderr, "studio a2e: --max-parallel must be between 1 and %d\n", maxParallel)
		return exitUsage
	}
	if *queued < 1 || *queued > maxQueued {
		fmt.Fprintf(stderr, "studio a2e: --max-queued must be between 1 and %d\n", maxQueued)
		return exitUsage
	}
	if err := codeOpts.check(); err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitUsage
	}
	codeRunner, closeCode, err := codeOpts.runner(false)
	if err != nil {
		fmt.Fprintf(stderr, "studio: %v\n", err)
		return exitFailed
	}
	defer closeCode()
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{Workspace: *workspace, ProcAllow: allowProc, HTTPAllowPrivate: *allowPrivate, Code: codeRunner}))
	reg.SetScoped(builtin.Scoped...)
	reg.SetContained(builtin.Contained...)
	for n, c := range builtin.Checks(builtin.Options{HTTPAllowPrivate: *allowPrivate}) {
		reg.SetCheck(n, c)
	}
	reg.SetInline(builtin.Inline...)
	for _, t := range builtin.Catalog() { // the input_schema rule, as the server checks it
		reg.SetInputSchema(t.Name, t.InputSchema)
	}
	opts := engine.Options{Registry: reg}
	var resolve func(string) (*chain.Chain, bool)
	if *chains != "" {
		resolve = folderResolver(filepath.Join(*chains, "x"))
		opts.Chains = func(_ context.Context, name string) (*chain.Chain, error) {
			if c, ok := resolve(name); ok {
				return c, nil
			}
			return nil, fmt.Errorf("no chain named %q in %s", name, *chains)
		}
	}
	env := newLocalEnv(reg, chain.Limits{}, resolve)
	opts.Compile = env.compile
	eng := engine.New(opts)
	out := &ndjsonWriter{w: bufio.NewWriter(stdout)}
	sess := a2e.NewSession(ctx, a2e.SessionOptions{
		MaxParallel: *parallel,
		MaxQueued:   *queued,
		WaitForRoom: true, // a file of requests runs whole: reading waits for room
		Send:        out.write,
		Run: func(ctx context.Context, req *chain.Request, c *chain.Chain, sink engine.EventSink) (*engine.Result, error) {
			input := req.InitialInput
			if input == nil {
				input = map[string]any{}
			}
			plan, _ := env.compile(ctx, c) // a chain with errors runs as refused
			return eng.Run(ctx, plan, input, engine.RunOptions{Sink: sink})
		},
	})

	in := bufio.NewReaderSize(stdin, 64<<10)
	for {
		line, over, err := readLine(in, maxA2ELine)
		switch {
		case over:
			resp := a2e.NewResponseMessage(nil, nil)
			resp.Error = &a2e.WireError{Code: chain.CodeDecode, Message: fmt.Sprintf("the line is over the limit of %d bytes", maxA2ELine)}
			out.write(resp)
		case len(bytes.TrimSpace(line)) > 0:
			if shutdown, drain := sess.Handle(ctx, line); shutdown {
				// The agent says goodbye: finish what runs (within its
				// timeout), then exit.
				sess.Drain(drain)
				return exitOK
			}
		}
		if err != nil {
			// End of input: every request read is answered before exiting.
			sess.Drain(maxDrain)
			if errors.Is(err, io.EOF) {
				return exitOK
			}
			fmt.Fprintf(stderr, "studio a2e: %v\n", err)
			return exitFailed
		}
		if ctx.Err() != nil {
			sess.Close()
			return exitStopped
		}
	}
}

// maxParallel bounds --max-parallel: each running chain holds goroutines
// and its events.
const maxParallel = 256

// maxQueued bounds --max-queued: each waiting chain/req holds its decoded
// chain (and all of them at most a2e.DefaultMaxQueuedBytes of messages).
const maxQueued = 4096

// maxDrain bounds the wait for running chains at the end of input (a chain's
// own timeout normally ends it sooner).
const maxDrain = 24 * time.Hour

// readLine reads one line (without the newline) of at most max bytes; a
// longer line is consumed and reported with over set.
func readLine(r *bufio.Reader, max int) (line []byte, over bool, err error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if !over {
			if len(buf)+len(chunk) > max+1 {
				over = true
				buf = nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if over {
			return nil, true, err
		}
		return bytes.TrimRight(buf, "\r\n"), false, err
	}
}

// ndjsonWriter writes one JSON value per line and flushes, safely from
// several goroutines.
type ndjsonWriter struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (o *ndjsonWriter) write(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"type": a2e.TypeResponse, "success": false,
			"error": a2e.WireError{Code: "host_error", Message: "message is not JSON: " + err.Error()}})
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.w.Write(b)
	o.w.WriteByte('\n')
	o.w.Flush()
}
