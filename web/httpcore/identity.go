package httpcore

import (
	"fmt"
	"strings"
	"time"

	"github.com/chainstudio/studio/store"
	"github.com/labstack/echo/v4"
)

// Identity is who sent a request: a named user, the legacy
// --token (an admin named "token"), or on a studio with neither users nor a
// token, the local single user (an admin named "local").
type Identity struct {
	Name string `json:"name"`
	Role string `json:"role"`
	// Via says how the request proved it: "token" (the --token),
	// "user" (a user's bearer token or session), "local" (open studio).
	Via string `json:"via"`
	// Created is when the user was created (zero for the others): a
	// session keeps it, so a removed user's sessions do not pass to a new
	// user of the same name.
	Created time.Time `json:"-"`
}

// identityKey is where SetCaller keeps the caller in the echo context.
const identityKey = "studio.identity"

// CallerOf returns who sent the request. Routes that need no sign-in
// (healthz, login, static files) have no caller: the zero Identity.
func CallerOf(c echo.Context) Identity {
	id, _ := c.Get(identityKey).(Identity)
	return id
}

// SetCaller records the caller for CallerOf (the sign-in middleware calls
// it once it knows who asks).
func SetCaller(c echo.Context, id Identity) { c.Set(identityKey, id) }

// Action is what a route does, as far as roles are concerned.
type Action string

const (
	ActPublic Action = "public" // no sign-in: health check, sign-in page, static files
	ActRead   Action = "read"   // look at chains, runs, agents; evaluate without saving
	ActEdit   Action = "edit"   // change chains, start, rerun and cancel runs
	ActAnswer Action = "answer" // answer a paused run (resume)
	ActAdmin  Action = "admin"  // manage users
	// ActPublish is publishing a chain that is exposed, triggered or uses
	// a chain-limited credential, and running a draft that uses such a
	// credential: the review gate editors do not pass (publishGate).
	ActPublish Action = "publish"
	// ActResume is POST …/runs/{id}/resume, which does two things: on a
	// paused run it answers the pause (ActAnswer), on a failed or cancelled
	// one it runs the rest again (ActEdit). The route lets in both; the
	// handler asks for the one the run's status needs (requireResumeRole).
	ActResume Action = "resume"
)

// roleActions: roles are sets, not a ladder (docs/design.md "People and
// roles"): an approver answers pauses but cannot edit chains, and an editor
// cannot answer the pauses of the runs it starts (the approval is the check
// on whoever changes a chain). An admin may do everything.
var roleActions = map[string][]Action{
	store.RoleViewer:    {ActRead},
	store.RoleEditor:    {ActRead, ActEdit},
	store.RolePublisher: {ActRead, ActEdit, ActPublish},
	store.RoleApprover:  {ActRead, ActAnswer},
	store.RoleAdmin:     {ActRead, ActEdit, ActAnswer, ActAdmin, ActPublish},
}

// RoleAllows reports whether role may do a.
func RoleAllows(role string, a Action) bool {
	switch a {
	case ActPublic:
		return true
	case ActResume:
		return RoleAllows(role, ActAnswer) || RoleAllows(role, ActEdit)
	}
	for _, x := range roleActions[role] {
		if x == a {
			return true
		}
	}
	return false
}

// RolesFor lists the roles that may do a, for refusal messages.
func RolesFor(a Action) []string {
	var out []string
	for _, r := range store.Roles {
		if RoleAllows(r, a) {
			out = append(out, r)
		}
	}
	return out
}

// RefuseRole is the 403 of a caller whose role does not allow a.
func RefuseRole(id Identity, a Action) error {
	need := RolesFor(a)
	return Error(EFORBIDDEN, "role_required",
		fmt.Sprintf("this needs the role %s; %s is %s", strings.Join(need, " or "), id.Name, Article(id.Role)),
		map[string]any{"needs": need, "role": id.Role, "user": id.Name})
}

// Article names a role with its article: "a viewer", "an editor".
func Article(role string) string {
	if role == "" {
		return "not signed in"
	}
	if strings.ContainsRune("aeiou", rune(role[0])) {
		return "an " + role
	}
	return "a " + role
}
