package views

import "context"

// Viewer is who is looking at a page: the header names them,
// and pages leave out the actions their role cannot use (the server refuses
// those anyway).
type Viewer struct {
	Name, Role string
	Local      bool // the open local studio: no sign-in, no sign-out
	Session    bool // signed in with the form: the header offers Sign out
	CanEdit    bool // edit chains, start and cancel runs
	CanAnswer  bool // answer paused runs
	CanAdmin   bool // manage users
}

type viewerKey struct{}

// WithViewer returns ctx carrying v for the page templates.
func WithViewer(ctx context.Context, v Viewer) context.Context {
	return context.WithValue(ctx, viewerKey{}, v)
}

// ViewerOf returns the viewer of a page; the zero Viewer (who may do
// nothing) when none was set.
func ViewerOf(ctx context.Context) Viewer {
	v, _ := ctx.Value(viewerKey{}).(Viewer)
	return v
}
