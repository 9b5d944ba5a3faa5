package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/sandbox"
)

// codeFlags are the code node's sandbox settings, shared by serve, worker
// and run.
type codeFlags struct {
	workers, memoryMB, cpuSeconds *int
	runConcurrency, runCPUSeconds *int
}

func registerCode(fs *flag.FlagSet) *codeFlags {
	return &codeFlags{
		workers:        fs.Int("code-workers", sandbox.DefaultWorkers, "sandbox processes that run code nodes' scripts at once (`N`, 1 to 64); more calls wait in a bounded queue"),
		memoryMB:       fs.Int("code-memory-mb", sandbox.DefaultMemoryMB, "memory a code node's script may use, in `MiB` (16 to 16384); over it the node fails"),
		cpuSeconds:     fs.Int("code-cpu-seconds", sandbox.DefaultCPUSeconds, "CPU time one code node's script may use, in `SECONDS` (1 to 3600); over it the node fails"),
		runConcurrency: fs.Int("code-run-concurrency", sandbox.DefaultRunConcurrency, "code calls one run may have in the sandbox at once (`N`, 1 to 1024; one a worker while its calls take long); runs take turns for the rest"),
		runCPUSeconds:  fs.Int("code-run-cpu-seconds", sandbox.DefaultRunCPUSeconds, "CPU time all of one run's code calls may use, in `SECONDS` (1 to 86400, or 0 for no budget); past it the run's further code calls fail"),
	}
}

func (c *codeFlags) check() error {
	switch {
	case *c.workers < 1 || *c.workers > 64:
		return fmt.Errorf("--code-workers must be 1 to 64, got %d", *c.workers)
	case *c.memoryMB < 16 || *c.memoryMB > 16384:
		return fmt.Errorf("--code-memory-mb must be 16 to 16384, got %d", *c.memoryMB)
	case *c.cpuSeconds < 1 || *c.cpuSeconds > 3600:
		return fmt.Errorf("--code-cpu-seconds must be 1 to 3600, got %d", *c.cpuSeconds)
	case *c.runConcurrency < 1 || *c.runConcurrency > 1024:
		return fmt.Errorf("--code-run-concurrency must be 1 to 1024, got %d", *c.runConcurrency)
	case *c.runCPUSeconds < 0 || *c.runCPUSeconds > 86400:
		return fmt.Errorf("--code-run-cpu-seconds must be 0 (no budget) to 86400, got %d", *c.runCPUSeconds)
	}
	return nil
}

// runner starts the pool and returns it with its closer. With warm (a
// long-lived server or worker), one child starts now in the background, so
// the first code node does not wait for a process to start; otherwise
// children start on first use. A child that cannot start is reported by
// the first call. Where the sandbox cannot run, the runner is nil: code
// nodes are refused with the reason, and nothing else changes.
func (c *codeFlags) runner(warm bool) (builtin.CodeRunner, func(), error) {
	if !sandbox.Supported {
		return nil, func() {}, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("code sandbox: find the studio's executable: %w", err)
	}
	runCPU := *c.runCPUSeconds
	if runCPU == 0 {
		runCPU = -1 // the flag's 0 is no budget; the pool's is its default
	}
	p, err := sandbox.NewPool(exe, sandbox.Limits{Workers: *c.workers, MemoryMB: *c.memoryMB, CPUSeconds: *c.cpuSeconds,
		RunConcurrency: *c.runConcurrency, RunCPUSeconds: runCPU})
	if err != nil {
		return nil, nil, err
	}
	if warm {
		go func() { _ = p.Warm(1) }()
	}
	return p, func() { p.Close() }, nil
}
