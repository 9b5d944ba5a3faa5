// Package a2e is the studio's A2E protocol host: the session that speaks the
// base protocol (handshake, ping, shutdown) and runs chain/req messages
// through an engine, the chain/event and chain/resp messages built from a
// run's events and result, and the export of a chain as a chain/req. The
// request itself (chain.Request) is one of the documents the engine
// decodes; this package only answers it.
package a2e
