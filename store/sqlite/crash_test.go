package sqlite

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/internal/testutil"
	"github.com/chainstudio/studio/store"
)

const (
	crashEnvDB  = "STUDIO_STORE_CRASH_DB"
	crashRunID  = "crash-run"
	crashNodes  = 200
	crashNodeMS = 10
)

// TestCrashChild is the process the crash test kills. It does nothing unless
// started by TestCrashRecovery.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnvDB)
	if path == "" {
		t.Skip("only runs as TestCrashRecovery's child process")
	}
	ctx := context.Background()
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	doc := linearChain("crash chain", "delay", crashNodes, func(i int) map[string]any {
		return map[string]any{"ms": float64(crashNodeMS), "i": float64(i)}
	})
	ch, err := db.CreateChain(ctx, doc, "v1", true)
	if err != nil {
		t.Fatal(err)
	}
	doc.Description = "second save"
	if ch, err = db.SaveChain(ctx, ch.ID, 1, doc, "v2"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateRun(ctx, store.Run{ID: crashRunID, ChainID: ch.ID, ChainVersion: ch.Version}); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("CHAIN %s\n", ch.ID)
	w := NewEventWriter(db, store.EventWriterOptions{})
	eng := newPersistentEngine(db, w, nil)
	// The parent kills us long before this finishes.
	res, err := eng.Run(ctx, enginetest.PlanOf(eng, ch.Doc), map[string]any{"from": "child"}, engine.RunOptions{RunID: crashRunID})
	fmt.Printf("child run finished: %v %v\n", res.Status, err)
}

// TestCrashRecovery runs a long chain in a child process, kills it with
// SIGKILL mid-run, and checks that everything committed survived, that
// recovery marks the run interrupted, and that a resume completes it keeping
// the outputs produced before the crash.
func TestCrashRecovery(t *testing.T) {
	if os.Getenv(crashEnvDB) != "" {
		t.Skip("child process")
	}
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "crash.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v")
	cmd.Env = append(os.Environ(), crashEnvDB+"="+path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	var chainID string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "CHAIN "); ok {
			chainID = id
			break
		}
	}
	if chainID == "" {
		t.Fatal("child did not start its run")
	}
	go func() {
		for sc.Scan() {
		}
	}()

	// Watch the database (as another process would) until the run has made
	// some progress, then snapshot what is committed and kill the child.
	watch, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, func() error {
		n, err := watch.MaxSeq(ctx, crashRunID)
		if err != nil {
			return err
		}
		if n < 60 {
			return fmt.Errorf("the child made too little progress: max seq %d, want 60", n)
		}
		return nil
	})
	before, err := watch.EventsAfter(ctx, crashRunID, 0, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	runBefore, err := watch.GetRun(ctx, crashRunID)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	cmd.Wait()
	killed = true
	watch.Close()

	// Restart.
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	integrityCheck(t, db)
	ch, err := db.GetChain(ctx, chainID)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Version != 2 || ch.Doc.Description != "second save" || len(ch.Doc.Nodes) != crashNodes {
		t.Fatalf("chain after crash: v%d %q %d nodes", ch.Version, ch.Doc.Description, len(ch.Doc.Nodes))
	}
	if vs, _ := db.ListVersions(ctx, chainID); len(vs) != 2 {
		t.Fatalf("%d versions after crash", len(vs))
	}
	after, err := db.EventsAfter(ctx, crashRunID, 0, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) < len(before) {
		t.Fatalf("committed events lost: %d before the kill, %d after", len(before), len(after))
	}
	jsonEqual(t, after[:len(before)], before)
	for i, e := range after {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
	maxSeq := after[len(after)-1].Seq

	n, err := db.RecoverInterrupted(ctx)
	if err != nil || n != 1 {
		t.Fatalf("recovered %d runs: %v", n, err)
	}
	r, err := db.GetRun(ctx, crashRunID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != chain.StatusFailed || r.Error == nil || r.Error.Code != store.CodeInterruptedByRestart {
		t.Fatalf("run after recovery: %s %+v", r.Status, r.Error)
	}
	// Outputs of nodes that finished before the crash (from the child).
	doneBefore := map[string]any{}
	for _, nr := range r.Nodes {
		if nr.Status == engine.PhaseDone {
			doneBefore[nr.NodeID] = nr.Output
		}
	}
	if len(doneBefore) < len(runBefore.Nodes) || len(doneBefore) == 0 {
		t.Fatalf("%d nodes done after restart, %d seen before the kill", len(doneBefore), len(runBefore.Nodes))
	}
	t.Logf("killed after %d committed events, %d nodes done; %d events survived", len(before), len(doneBefore), len(after))

	w := NewEventWriter(db, store.EventWriterOptions{})
	defer w.Close()
	eng := newPersistentEngine(db, w, nil)
	res, err := eng.Resume(ctx, crashRunID, nil, nil, engine.ResumeOptions{NextSeq: maxSeq + 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != chain.StatusCompleted {
		t.Fatalf("resumed run: %s %+v", res.Status, res.Error)
	}
	r, err = db.GetRun(ctx, crashRunID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != chain.StatusCompleted || len(r.Nodes) != crashNodes {
		t.Fatalf("stored run after resume: %s, %d nodes", r.Status, len(r.Nodes))
	}
	for id, out := range doneBefore {
		jsonEqual(t, r.Outputs[id], out)
		if pid := out.(map[string]any)["pid"]; pid == float64(os.Getpid()) {
			t.Fatalf("node %s was re-run by the resume", id)
		}
	}
	final, _ := db.EventsAfter(ctx, crashRunID, 0, 1_000_000)
	for i, e := range final {
		if e.Seq != int64(i+1) {
			t.Fatalf("after resume: event %d has seq %d", i, e.Seq)
		}
	}
	integrityCheck(t, db)
}
