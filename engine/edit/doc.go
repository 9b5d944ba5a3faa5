// Package edit rewrites chain documents as the designer asks: Extract moves
// a selection of nodes into a new chain and calls it from where they were,
// refusing any selection whose behaviour the rewrite would change.
package edit
