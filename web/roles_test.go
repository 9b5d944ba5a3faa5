package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/internal/testutil"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
)

// roleTokens adds one user per role to the server's store and returns
// their bearer headers by role.
func roleTokens(t *testing.T, srv *Server) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, role := range store.Roles {
		tok := "tok-" + role + "-0123456789abcdef"
		if _, err := srv.DB.AddUser(context.Background(), role+"1", role, httpcore.TokenHash(tok)); err != nil {
			t.Fatal(err)
		}
		out[role] = []string{"Authorization", "Bearer " + tok}
	}
	srv.forgetOpen()
	return out
}

// Every registered route declares its role, and every route × role gets
// what the table says: refused roles a 403 naming the roles needed, allowed
// roles whatever the handler answers but never that refusal. A route added
// to routes.go without a line in routeActions fails here.
func TestEveryRouteEveryRole(t *testing.T) {
	t.Parallel()
	const legacy = "legacy-token-0123456789"
	srv, ts := newTestServerWith(t, Config{Token: legacy}, testRegistry())
	hdrs := roleTokens(t, srv)
	hdrs["token"] = []string{"Authorization", "Bearer " + legacy}
	roleOf := map[string]string{"token": store.RoleAdmin}
	for _, r := range store.Roles {
		roleOf[r] = r
	}

	routes := srv.echo.Routes()
	checked := 0
	for _, rt := range routes {
		key := routeKey(rt.Method, rt.Path)
		act, ok := routeActions[key]
		if !ok {
			t.Errorf("%s declares no role: add it to routeActions in web/roles.go", key)
			continue
		}
		p := concretePath(rt.Path)
		for who, h := range hdrs {
			r := do(t, ts, rt.Method, p, `{}`, append([]string{"Accept", "application/json"}, h...)...)
			refused := r.status == http.StatusForbidden && strings.Contains(string(r.body), `"role_required"`)
			want := httpcore.RoleAllows(roleOf[who], act)
			switch {
			case want && (refused || r.status == http.StatusUnauthorized):
				t.Errorf("%s as %s: %d %s, want it allowed (%s)", key, who, r.status, r.body, act)
			case !want && !refused:
				t.Errorf("%s as %s: %d %.200s, want 403 role_required (%s)", key, who, r.status, r.body, act)
			case !want:
				msg := r.json(t)["error"].(map[string]any)["message"].(string)
				for _, need := range httpcore.RolesFor(act) {
					if !strings.Contains(msg, need) {
						t.Errorf("%s as %s: the refusal %q does not name the role %s", key, who, msg, need)
					}
				}
			}
			checked++
		}
	}
	// Every declared route exists: a stale line would hide a typo.
	registered := map[string]bool{}
	for _, rt := range routes {
		registered[routeKey(rt.Method, rt.Path)] = true
	}
	for key := range routeActions {
		if !registered[key] {
			t.Errorf("routeActions declares %s, which is not a route", key)
		}
	}
	if len(routes) < 80 || checked < 5*70 {
		t.Fatalf("only %d routes, %d checks", len(routes), checked)
	}
	t.Logf("%d routes × %d identities checked", len(routes), len(hdrs))
}

// A registered route that routeActions does not name is refused to
// everyone, admin included.
func TestUndeclaredRouteIsRefused(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServerWith(t, Config{Token: "legacy-token-0123456789"}, testRegistry())
	srv.echo.GET("/v1/not-declared", func(c echo.Context) error { return c.String(200, "open") })
	srv.registered[routeKey("GET", "/v1/not-declared")] = true
	r := do(t, ts, "GET", "/v1/not-declared", nil, "Authorization", "Bearer legacy-token-0123456789")
	if r.status != http.StatusForbidden || r.errCode(t) != "role_undeclared" {
		t.Fatalf("undeclared route: %d %s", r.status, r.body)
	}
}

// What each role may do, on real chains and runs: a refused write changes
// nothing; editors edit and run but do not answer pauses; approvers answer
// but do not edit; only admins manage users.
func TestRolesOnRealResources(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServerWith(t, Config{}, testRegistry())
	h := roleTokens(t, srv)

	r := do(t, ts, "POST", "/v1/chains", approvalDoc, h["viewer"]...)
	if r.status != 403 || r.errCode(t) != "role_required" {
		t.Fatalf("viewer creates a chain: %d %s", r.status, r.body)
	}
	if !strings.Contains(string(r.body), "this needs the role editor or publisher or admin; viewer1 is a viewer") {
		t.Fatalf("refusal wording: %s", r.body)
	}
	r = do(t, ts, "POST", "/v1/chains", approvalDoc, h["editor"]...)
	wantStatus(t, r, http.StatusCreated)
	id := r.json(t)["id"].(string)

	// Viewer and approver cannot save or run it; nothing changes.
	for _, who := range []string{"viewer", "approver"} {
		wantStatus(t, do(t, ts, "PUT", "/v1/chains/"+id, approvalDoc, h[who]...), 403)
		wantStatus(t, do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{"x":1}}`, h[who]...), 403)
		wantStatus(t, do(t, ts, "DELETE", "/v1/chains/"+id, nil, h[who]...), 403)
	}
	if m := do(t, ts, "GET", "/v1/chains/"+id, nil, h["viewer"]...).json(t); m["version"].(float64) != 1 {
		t.Fatalf("refused writes changed the chain: %v", m["version"])
	}
	if rs := do(t, ts, "GET", "/v1/runs", nil, h["viewer"]...).json(t)["runs"].([]any); len(rs) != 0 {
		t.Fatalf("refused runs started: %v", rs)
	}

	// The editor runs it to the pause, but cannot answer it; the approver can.
	r = do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{"x":1}}`, h["editor"]...)
	wantStatus(t, r, http.StatusAccepted)
	run := r.json(t)["run_id"].(string)
	waitStatus(t, ts, run, "paused", h["viewer"])
	r = do(t, ts, "POST", "/v1/runs/"+run+"/resume", `{"resume_value":"yes"}`, h["editor"]...)
	if r.status != 403 || !strings.Contains(string(r.body), "approver or admin") {
		t.Fatalf("editor answers a pause: %d %s", r.status, r.body)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/runs/"+run+"/resume", `{"resume_value":"yes"}`, h["approver"]...), http.StatusOK)
	waitStatus(t, ts, run, "completed", h["viewer"])

	// Users: admins only; the token is answered once and works at once.
	for _, who := range []string{"viewer", "editor", "approver"} {
		wantStatus(t, do(t, ts, "GET", "/v1/users", nil, h[who]...), 403)
		wantStatus(t, do(t, ts, "POST", "/v1/users", `{"name":"eve","role":"admin"}`, h[who]...), 403)
	}
	r = do(t, ts, "POST", "/v1/users", `{"name":"dana","role":"viewer"}`, h["admin"]...)
	wantStatus(t, r, http.StatusCreated)
	tok, _ := r.json(t)["token"].(string)
	if !strings.HasPrefix(tok, "stu_") || len(tok) != 4+64 {
		t.Fatalf("new token %q", tok)
	}
	me := do(t, ts, "GET", "/v1/me", nil, "Authorization", "Bearer "+tok).json(t)
	if me["name"] != "dana" || me["role"] != "viewer" {
		t.Fatalf("me: %v", me)
	}
	list := do(t, ts, "GET", "/v1/users", nil, h["admin"]...)
	if strings.Contains(string(list.body), tok) || strings.Contains(string(list.body), "token") {
		t.Fatalf("the list shows a token: %s", list.body)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/users", `{"name":"dana","role":"viewer"}`, h["admin"]...), http.StatusConflict)
	r = do(t, ts, "POST", "/v1/users", `{"name":"x y","role":"boss"}`, h["admin"]...)
	if r.status != 422 || !strings.Contains(string(r.body), "letters, digits") {
		t.Fatalf("bad user: %d %s", r.status, r.body)
	}
	r = do(t, ts, "PUT", "/v1/users/dana", `{"role":"editor"}`, h["admin"]...)
	if r.status != 200 || r.json(t)["role"] != "editor" {
		t.Fatalf("set role: %d %s", r.status, r.body)
	}
	if me := do(t, ts, "GET", "/v1/me", nil, "Authorization", "Bearer "+tok).json(t); me["role"] != "editor" {
		t.Fatalf("new role not applied: %v", me)
	}
	// An admin cannot demote or remove itself.
	wantStatus(t, do(t, ts, "PUT", "/v1/users/admin1", `{"role":"viewer"}`, h["admin"]...), http.StatusConflict)
	wantStatus(t, do(t, ts, "DELETE", "/v1/users/admin1", nil, h["admin"]...), http.StatusConflict)
	wantStatus(t, do(t, ts, "DELETE", "/v1/users/dana", nil, h["admin"]...), http.StatusNoContent)
	wantStatus(t, do(t, ts, "GET", "/v1/me", nil, "Authorization", "Bearer "+tok), http.StatusUnauthorized)
	wantStatus(t, do(t, ts, "DELETE", "/v1/users/dana", nil, h["admin"]...), http.StatusNotFound)
}

func waitStatus(t *testing.T, ts *httptest.Server, run, status string, auth []string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := do(t, ts, "GET", "/v1/runs/"+run, nil, auth...).json(t); m["status"] == status {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("run %s never %s", run, status)
}

// Browsers: any user's token signs in; the session carries the identity,
// follows role changes, and ends when the user is removed. Pages name the
// user and leave out what the role cannot use.
func TestSessionsCarryTheUser(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServerWith(t, Config{}, testRegistry())
	roleTokens(t, srv)
	ck := signIn(t, ts, "tok-viewer-0123456789abcdef")
	page := func(path string) resp {
		return do(t, ts, "GET", path, nil, "Cookie", ck.String(), "Accept", "text/html")
	}
	r := page("/")
	if r.status != 200 || !strings.Contains(string(r.body), `id="whoami-name">viewer1<`) || !strings.Contains(string(r.body), `data-can-edit="no"`) {
		t.Fatalf("viewer's page: %d", r.status)
	}
	if strings.Contains(string(r.body), `href="/users"`) {
		t.Fatal("a viewer sees the Users link")
	}
	if r := page("/users"); r.status != 403 || !strings.Contains(string(r.body), "admin") {
		t.Fatalf("viewer opens /users: %d %s", r.status, r.body)
	}
	// The role changes under the session.
	if _, err := srv.DB.SetUserRole(context.Background(), "viewer1", store.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	if r := page("/users"); r.status != 200 || !strings.Contains(string(r.body), "editor1") {
		t.Fatalf("after promotion: %d", r.status)
	}
	// Removed, then another user takes the name: the session is over.
	if err := srv.DB.RemoveUser(context.Background(), "viewer1"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.DB.AddUser(context.Background(), "viewer1", store.RoleAdmin, httpcore.TokenHash("another-token-0123456789")); err != nil {
		t.Fatal(err)
	}
	if r := page("/"); !strings.Contains(string(r.body), `action="/login"`) { // the client follows the redirect
		t.Fatalf("removed user's session: %d, not the sign-in page", r.status)
	}
	// A wrong token is refused like before.
	res := postForm(t, ts, "/login", url.Values{"token": {"tok-nobody-0123456789abc"}, "next": {"/"}})
	if res.StatusCode != 200 || len(res.Cookies()) != 0 {
		t.Fatalf("wrong token: %d %v", res.StatusCode, res.Cookies())
	}
}

// The open local studio: no token and no users on loopback is the local
// admin, who must add an admin first; once a user exists everyone needs a
// token.
func TestOpenStudioUntilTheFirstUser(t *testing.T) {
	t.Parallel()
	_, ts := newTestServerWith(t, Config{}, testRegistry())
	me := do(t, ts, "GET", "/v1/me", nil).json(t)
	if me["name"] != "local" || me["role"] != "admin" {
		t.Fatalf("open studio: %v", me)
	}
	r := do(t, ts, "POST", "/v1/users", `{"name":"ann","role":"editor"}`)
	if r.status != 409 || r.errCode(t) != "first_user_admin" {
		t.Fatalf("first user an editor: %d %s", r.status, r.body)
	}
	r = do(t, ts, "POST", "/v1/users", `{"name":"ann","role":"admin"}`)
	wantStatus(t, r, 201)
	tok := r.json(t)["token"].(string)
	wantStatus(t, do(t, ts, "GET", "/v1/chains", nil), 401)
	if me := do(t, ts, "GET", "/v1/me", nil, "Authorization", "Bearer "+tok).json(t); me["name"] != "ann" {
		t.Fatalf("ann: %v", me)
	}
}

// Off loopback the studio needs an admin: the --token, or an admin user.
func TestExposureNeedsAnAdmin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, _ := newTestServer(t)
	db := srv.DB
	cfg := Config{Addr: "0.0.0.0:8080"}
	err := checkExposure(ctx, cfg, db)
	if err == nil || !strings.Contains(err.Error(), "studio users add NAME --role admin") {
		t.Fatalf("no users: %v", err)
	}
	if _, err := db.AddUser(ctx, "vic", store.RoleEditor, httpcore.TokenHash("vic-token-0123456789ab")); err != nil {
		t.Fatal(err)
	}
	if err := checkExposure(ctx, cfg, db); err == nil {
		t.Fatal("an editor is not an admin")
	}
	for _, c := range []Config{{Addr: "0.0.0.0:8080", Token: "legacy-token-0123456789"}, {Addr: "0.0.0.0:8080", Insecure: true}, {Addr: "127.0.0.1:0"}} {
		if err := checkExposure(ctx, c, db); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if _, err := db.AddUser(ctx, "ada", store.RoleAdmin, httpcore.TokenHash("ada-token-0123456789ab")); err != nil {
		t.Fatal(err)
	}
	if err := checkExposure(ctx, cfg, db); err != nil {
		t.Fatalf("with an admin: %v", err)
	}
}

// openapi.json lists, on every API operation, the roles that may call it
// (x-roles) as routeActions declares them, and its 403.
func TestOpenAPIRolesMatchTheTable(t *testing.T) {
	t.Parallel()
	srv, _ := newTestServer(t)
	var spec struct {
		Paths map[string]map[string]struct {
			Roles     []string       `json:"x-roles"`
			Responses map[string]any `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openAPISpec, &spec); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, rt := range srv.echo.Routes() {
		act := routeActions[routeKey(rt.Method, rt.Path)]
		if !strings.HasPrefix(rt.Path, "/v1/") || act == httpcore.ActPublic {
			continue
		}
		p := regexp.MustCompile(`:(\w+)`).ReplaceAllString(rt.Path, "{$1}")
		op := spec.Paths[p][strings.ToLower(rt.Method)]
		if !slices.Equal(op.Roles, httpcore.RolesFor(act)) {
			t.Errorf("%s %s: x-roles %v, routeActions says %v", rt.Method, p, op.Roles, httpcore.RolesFor(act))
		}
		if op.Responses["403"] == nil {
			t.Errorf("%s %s: no 403 response", rt.Method, p)
		}
		n++
	}
	if n < 40 {
		t.Fatalf("only %d operations", n)
	}
}

// Resuming a failed run runs it again: editors may, approvers may not
// (they answer pauses only).
func TestResumeOfAFailedRunIsAnEdit(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServerWith(t, Config{}, testRegistry())
	h := roleTokens(t, srv)
	r := do(t, ts, "POST", "/v1/chains", `{"name":"flaky","nodes":[{"node_id":"b","kind":"tool","name":"fail","input":{"message":"down"}}]}`, h["editor"]...)
	wantStatus(t, r, http.StatusCreated)
	id := r.json(t)["id"].(string)
	r = do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{}`, h["editor"]...)
	wantStatus(t, r, http.StatusAccepted)
	run := r.json(t)["run_id"].(string)
	waitStatus(t, ts, run, "failed", h["viewer"])
	r = do(t, ts, "POST", "/v1/runs/"+run+"/resume", `{}`, h["approver"]...)
	if r.status != 403 || !strings.Contains(string(r.body), "editor or publisher or admin") {
		t.Fatalf("approver resumes a failed run: %d %s", r.status, r.body)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/runs/"+run+"/resume", `{}`, h["editor"]...), http.StatusOK)
}

// What finding the caller costs per request: the --token (a compare) and a
// user's token (a SHA-256 and an indexed read of the users table), on
// GET /v1/me.
func BenchmarkAuthenticate(b *testing.B) {
	const legacy = "legacy-token-0123456789"
	srv, ts := newTestServerWith(b, Config{Token: legacy}, testRegistry())
	if _, err := srv.DB.AddUser(context.Background(), "bo", store.RoleViewer, httpcore.TokenHash("bench-user-token-0123456789")); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, token string }{{"legacy-token", legacy}, {"user-token", "bench-user-token-0123456789"}} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if r := do(b, ts, "GET", "/v1/me", nil, "Authorization", "Bearer "+bc.token); r.status != 200 {
					b.Fatalf("%d %s", r.status, r.body)
				}
			}
		})
	}
}

// pausedWhileRunning starts doc (an interrupt beside a long delay) as the
// editor and waits until its pause is in the log while the run still runs.
func pausedWhileRunning(t *testing.T, srv *Server, ts *httptest.Server, doc string, editor []string) string {
	t.Helper()
	r := do(t, ts, "POST", "/v1/chains", doc, editor...)
	wantStatus(t, r, http.StatusCreated)
	r = do(t, ts, "POST", "/v1/chains/"+r.json(t)["id"].(string)+"/runs", `{"input":{}}`, editor...)
	wantStatus(t, r, http.StatusAccepted)
	run := r.json(t)["run_id"].(string)
	t.Cleanup(func() { srv.Runs.Cancel(run) })
	testutil.Eventually(t, 10*time.Second, func() error {
		log, err := srv.DB.Load(context.Background(), run)
		if err != nil || len(engine.PendingPauses(log)) != 1 {
			return fmt.Errorf("run %s has not paused at ask (%v)", run, err)
		}
		return nil
	})
	if m := do(t, ts, "GET", "/v1/runs/"+run, nil, editor...).json(t); m["status"] != "running" {
		t.Fatalf("the run should still run beside its pause: %v", m["status"])
	}
	return run
}

func runningPauseDoc(name, approvers string) string {
	return `{"name":"` + name + `","nodes":[
	{"node_id":"start","kind":"tool","name":"echo"},
	{"node_id":"ask","kind":"interrupt","config":{"prompt":"ok?"` + approvers + `}},
	{"node_id":"wait","kind":"tool","name":"delay","input":{"ms":60000}}],
	"edges":[{"source":"start","target":"ask"},{"source":"start","target":"wait"}]}`
}

// Answering a pause needs the answer right whatever the run's status: a
// running run's pause (here an interrupt beside a long step) is refused to
// the editor on the API and on the page form, and nothing is claimed; the
// approver's answer goes in and is audited.
func TestAnsweringARunningRunsPauseNeedsTheAnswerRole(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServerWith(t, Config{}, testRegistry())
	h := roleTokens(t, srv)
	run := pausedWhileRunning(t, srv, ts, runningPauseDoc("running-pause", ""), h["editor"])

	r := do(t, ts, "POST", "/v1/runs/"+run+"/resume", `{"action":"approve","pause_id":"ask"}`, h["editor"]...)
	if r.status != 403 || r.errCode(t) != "role_required" || !strings.Contains(string(r.body), "approver or admin") {
		t.Fatalf("editor answers a running run's pause through the API: %d %s", r.status, r.body)
	}
	code, body := pageForm(t, ts, "/runs/"+run+"/resume", url.Values{"decision": {"approve"}, "pause_id": {"ask"}}, h["editor"]...)
	if code != 403 || !strings.Contains(body, "this needs the role approver or admin") {
		t.Fatalf("editor answers a running run's pause from the page: %d %s", code, body)
	}
	if a, _ := do(t, ts, "GET", "/v1/runs/"+run, nil, h["viewer"]...).json(t)["answers"].([]any); len(a) != 0 {
		t.Fatalf("a refused answer was recorded: %v", a)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/runs/"+run+"/resume", `{"action":"approve","pause_id":"ask"}`, h["approver"]...), http.StatusOK)
	testutil.Eventually(t, 10*time.Second, func() error {
		a, _ := do(t, ts, "GET", "/v1/runs/"+run, nil, h["viewer"]...).json(t)["answers"].([]any)
		if len(a) != 1 || a[0].(map[string]any)["by"] != "approver1" || a[0].(map[string]any)["action"] != "approve" {
			return fmt.Errorf("audit: %v", a)
		}
		return nil
	})
}
