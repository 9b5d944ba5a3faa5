package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
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
	// created is when the user was created (zero for the others): a
	// session keeps it, so a removed user's sessions do not pass to a new
	// user of the same name.
	created time.Time
}

// The identities that are not users; store.CheckUser keeps these names
// for them.
var (
	legacyTokenIdentity = Identity{Name: "token", Role: store.RoleAdmin, Via: "token"}
	localIdentity       = Identity{Name: "local", Role: store.RoleAdmin, Via: "local"}
)

// identityKey is where authenticate keeps the caller in the echo context.
const identityKey = "studio.identity"

// callerOf returns who sent the request. Routes that need no sign-in
// (healthz, login, static files) have no caller: the zero Identity.
func callerOf(c echo.Context) Identity {
	id, _ := c.Get(identityKey).(Identity)
	return id
}

// setCaller records the caller for handlers (callerOf) and for the pages,
// which show who is signed in and hide what the role cannot do.
func setCaller(c echo.Context, id Identity, session bool) {
	c.Set(identityKey, id)
	v := views.Viewer{Name: id.Name, Role: id.Role, Local: id.Via == "local", Session: session,
		CanEdit: roleAllows(id.Role, actEdit), CanAnswer: roleAllows(id.Role, actAnswer), CanAdmin: roleAllows(id.Role, actAdmin)}
	req := c.Request()
	c.SetRequest(req.WithContext(views.WithViewer(req.Context(), v)))
}

// Actions are what a route does, as far as roles are concerned.
type action string

const (
	actPublic action = "public" // no sign-in: health check, sign-in page, static files
	actRead   action = "read"   // look at chains, runs, agents; evaluate without saving
	actEdit   action = "edit"   // change chains, start, rerun and cancel runs
	actAnswer action = "answer" // answer a paused run (resume)
	actAdmin  action = "admin"  // manage users
	// actResume is POST …/runs/{id}/resume, which does two things: on a
	// paused run it answers the pause (actAnswer), on a failed or cancelled
	// one it runs the rest again (actEdit). The route lets in both; the
	// handler asks for the one the run's status needs (requireResumeRole).
	actResume action = "resume"
)

// roleActions: roles are sets, not a ladder (docs/design.md "People and
// roles"): an approver answers pauses but cannot edit chains, and an editor
// cannot answer the pauses of the runs it starts (the approval is the check
// on whoever changes a chain). An admin may do everything.
var roleActions = map[string][]action{
	store.RoleViewer:   {actRead},
	store.RoleEditor:   {actRead, actEdit},
	store.RoleApprover: {actRead, actAnswer},
	store.RoleAdmin:    {actRead, actEdit, actAnswer, actAdmin},
}

func roleAllows(role string, a action) bool {
	switch a {
	case actPublic:
		return true
	case actResume:
		return roleAllows(role, actAnswer) || roleAllows(role, actEdit)
	}
	for _, x := range roleActions[role] {
		if x == a {
			return true
		}
	}
	return false
}

// rolesFor lists the roles that may do a, for refusal messages.
func rolesFor(a action) []string {
	var out []string
	for _, r := range store.Roles {
		if roleAllows(r, a) {
			out = append(out, r)
		}
	}
	return out
}

// NewUserToken returns a new user token (256 random bits, hex, with a
// "stu_" prefix that secret scanners and people can recognise) and the
// SHA-256 the store keeps instead of it.
func NewUserToken() (token string, hash []byte, err error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", nil, fmt.Errorf("make a token: %w", err)
	}
	token = "stu_" + hex.EncodeToString(b[:])
	return token, TokenHash(token), nil
}

// TokenHash is the SHA-256 of a token, the form the store keeps and looks
// tokens up by. A plain hash suffices: the tokens are random and long, so
// there is nothing to guess from it (a password would need a slow hash).
func TokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// identityOf looks the token up among the users; the --token comes first.
// ok is false when no one has this token.
func (s *Server) identityOf(ctx context.Context, token string) (Identity, bool, error) {
	if s.tokenMatches(token) {
		return legacyTokenIdentity, true, nil
	}
	if len(token) < MinTokenLength {
		return Identity{}, false, nil
	}
	u, err := s.db.UserByTokenHash(ctx, TokenHash(token))
	if err != nil {
		if store.ErrorCode(err) == store.ENOTFOUND {
			return Identity{}, false, nil
		}
		return Identity{}, false, err
	}
	return Identity{Name: u.Name, Role: u.Role, Via: "user", created: u.Created}, true, nil
}

// refuseRole is the 403 of a caller whose role does not allow a.
func refuseRole(id Identity, a action) error {
	need := rolesFor(a)
	return apiError(EFORBIDDEN, "role_required",
		fmt.Sprintf("this needs the role %s; %s is %s", strings.Join(need, " or "), id.Name, article(id.Role)),
		map[string]any{"needs": need, "role": id.Role, "user": id.Name})
}

// requireResumeRole: answering a pause needs actAnswer whatever the run's
// status (a running run holds pauses too: map items, branches, sub-chains
// answered while the rest runs); resuming a failed or cancelled run with
// no answer (running it again) needs actEdit. An answer to a pause whose
// interrupt names approvers must come from one of them (requireApprover).
func (s *Server) requireResumeRole(c echo.Context, runID, pauseID string, answering bool) error {
	id := callerOf(c)
	if !answering {
		// An unknown run, or a paused one (which needs an answer), is left
		// to the resume itself to report.
		r, err := s.db.GetRunInfo(c.Request().Context(), runID)
		if err != nil || r.Status == engine.StatusPaused {
			return nil
		}
		if !roleAllows(id.Role, actEdit) {
			return refuseRole(id, actEdit)
		}
		return nil
	}
	if !roleAllows(id.Role, actAnswer) {
		return refuseRole(id, actAnswer)
	}
	return s.requireApprover(c.Request().Context(), id, runID, pauseID)
}

// maxApproverDepth bounds how deep requireApprover follows a pause into
// sub-chains (skills nest at most engine's depth limit; deeper is unusual).
const maxApproverDepth = 16

// requireApprover refuses an answer to a pause whose interrupt node lists
// approvers (config.approvers: names or roles) from a caller who is none of
// them: 403 not_an_approver naming who may. On a studio without users or a
// token (the local single user) there is no one else to be, so it passes.
// An unknown run or pause is left to the resume itself to report.
func (s *Server) requireApprover(ctx context.Context, id Identity, runID, pauseID string) error {
	if id.Via == "local" {
		return nil
	}
	// A pause inside a sub-chain ("<skill>/<inner id>", "<map>[k]/<inner
	// id>") is the sub-chain run's own pause: its interrupt's approvers are
	// in that run's log (a bounded walk down the nesting).
	var p engine.Pending
	var a *engine.ApprovalInfo
	for depth := 0; depth < maxApproverDepth; depth++ {
		log, err := s.db.Load(ctx, runID)
		if err != nil {
			return nil
		}
		inner, err := engine.PauseToAnswer(runID, pauseID, log)
		if err != nil {
			return nil
		}
		if depth == 0 {
			p = inner
		}
		if a = inner.Approval(); a != nil || inner.SubRun() == "" {
			break
		}
		_, rest, ok := strings.Cut(inner.PauseID, "/")
		if !ok {
			break
		}
		runID, pauseID = inner.SubRun(), rest
	}
	if a == nil || len(a.Approvers) == 0 || slices.Contains(a.Approvers, id.Name) || slices.Contains(a.Approvers, id.Role) {
		return nil
	}
	return apiError(EFORBIDDEN, "not_an_approver",
		fmt.Sprintf("pause %q may be answered only by %s; %s (%s) is not one of them", p.PauseID, strings.Join(a.Approvers, ", "), id.Name, id.Role),
		map[string]any{"approvers": a.Approvers, "pause_id": p.PauseID, "node_id": p.NodeID, "user": id.Name, "role": id.Role})
}
