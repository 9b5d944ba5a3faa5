// Package inspect answers questions about chains and runs without running
// anything: what changed between two chain documents (Diff), how two runs
// differ node by node (CompareRuns), and why a node of a run went the way
// it did, read from the run's checkpoint log (Why).
package inspect
