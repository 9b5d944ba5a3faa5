package builtin

// Inline lists the built-in tools that are pure and quick (no I/O, no
// blocking): a host may let the scheduler call them on its own goroutine
// with engine.Registry.SetInline(builtin.Inline...).
var Inline = []string{"echo", "transform", "template"}
