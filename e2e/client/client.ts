// A client generated from web/openapi.json (openapi-typescript + openapi-fetch)
// driving every operation of the API, with no casts: e2e/openapi.test.mjs
// type-checks it with `tsc --strict` and runs it against a live studio, so a
// document that does not say what the server answers fails to compile or to
// run. Every call's answer is read through its generated type.
import createClient from "openapi-fetch";
import type { components, paths } from "./generated/openapi.js";

type Schemas = components["schemas"];
type Client = ReturnType<typeof createClient<paths>>;

/** The data of a 2xx answer, or an error naming the call, status and body. */
function must<T>(r: { data?: T; error?: unknown; response: Response }, what: string): T {
  if (r.data === undefined) {
    throw new Error(`${what}: ${r.response.status} ${JSON.stringify(r.error)}`);
  }
  return r.data;
}

/** The typed error body of a non-2xx answer with the status expected. */
function mustFail<E>(r: { data?: unknown; error?: E; response: Response }, status: number, what: string): E {
  if (r.error === undefined || r.response.status !== status) {
    throw new Error(`${what}: want ${status}, got ${r.response.status} ${JSON.stringify(r.data ?? r.error)}`);
  }
  return r.error;
}

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(what);
}

const linear = (name: string): Schemas["ChainDocument"] => ({
  name,
  description: "made by the typed client",
  nodes: [
    { node_id: "a", kind: "tool", name: "echo", input_map: { x: "input.x" } },
    { node_id: "b", kind: "tool", name: "echo" },
  ],
  edges: [{ source: "a", target: "b" }],
});

const approval = (name: string): Schemas["ChainDocument"] => ({
  name,
  nodes: [
    { node_id: "ask", kind: "interrupt", config: { prompt: "ok?" } },
    { node_id: "after", kind: "tool", name: "echo" },
  ],
  edges: [{ source: "ask", target: "after" }],
});

type A2EFrame = Schemas["A2EHandshakeFrame"] | Schemas["A2EPongFrame"] | Schemas["A2EEventFrame"] | Schemas["A2ERespFrame"];

// A frame of GET /v1/a2e/stream read the way the document says: its event names its data's type.
function isA2EFrame(f: { event: string; data: unknown }): f is A2EFrame {
  const d = f.data;
  return ["handshake/resp", "pong", "chain/event", "chain/resp"].includes(f.event) &&
    typeof d === "object" && d !== null && "type" in d && d.type === f.event && "req_id" in d && typeof d.req_id === "string";
}

/** The SSE frames of a stream, one at a time (comments skipped). */
async function* sseFrames(body: ReadableStream<Uint8Array>): AsyncGenerator<{ event: string; data: unknown }> {
  const reader = body.getReader();
  const text = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += text.decode(value, { stream: true });
    let end: number;
    while ((end = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      let event = "message";
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length > 0) {
        const parsed: unknown = JSON.parse(data.join("\n"));
        yield { event, data: parsed };
      }
    }
  }
}

/** The next A2E frame of a stream, or an error when it ends first. */
async function nextFrame(frames: AsyncGenerator<{ event: string; data: unknown }>): Promise<A2EFrame> {
  const { value, done } = await frames.next();
  if (done === true) throw new Error("the A2E stream ended");
  if (!isA2EFrame(value)) throw new Error(`not an A2E frame of the document: ${JSON.stringify(value)}`);
  return value;
}

/** X-Studio-Signature of a webhook call: t=<unix s>,v1=<hex HMAC-SHA256 of "t.body">. */
async function signHook(secret: string, body: string): Promise<string> {
  const t = Math.floor(Date.now() / 1000).toString();
  const enc = new TextEncoder();
  const key = await crypto.subtle.importKey("raw", enc.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, enc.encode(t + "." + body)));
  return `t=${t},v1=${[...mac].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

const a2eMessage = (type: string, id: string, fields: Record<string, unknown> = {}): string =>
  JSON.stringify({ type, id, version: "1.0", ts: Date.now() / 1000, ...fields });

async function settle(c: Client, id: string): Promise<Schemas["Run"]> {
  for (let i = 0; i < 200; i++) {
    const run = must(await c.GET("/v1/runs/{id}", { params: { path: { id } } }), "get run");
    if (!run.active && run.status !== "queued" && run.status !== "running") return run;
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error(`run ${id} did not settle`);
}

/**
 * Runs every operation once; returns the operations it called. The chains it
 * made are deleted even when a check fails, so a failed run does not leave
 * them in the shared studio.
 */
export async function exercise(baseUrl: string, suffix: string): Promise<string[]> {
  const c = createClient<paths>({ baseUrl });
  const made: string[] = [];
  try {
    return await drive(c, suffix, made);
  } finally {
    for (const id of made) await c.DELETE("/v1/chains/{id}", { params: { path: { id } } }); // 404 when drive deleted it
  }
}

async function drive(c: Client, suffix: string, made: string[]): Promise<string[]> {
  const called: string[] = [];
  const note = (op: string) => called.push(op);

  // Service
  note("GET /healthz");
  check(must(await c.GET("/healthz"), "healthz").status === "ok", "healthz status");
  note("GET /livez");
  check(must(await c.GET("/livez"), "livez").status === "ok", "livez status");
  note("GET /readyz");
  check(must(await c.GET("/readyz"), "readyz").status === "ok", "readyz status");
  note("GET /v1/openapi.json");
  const spec = must(await c.GET("/v1/openapi.json"), "openapi");
  check(typeof spec === "object", "openapi document");
  note("GET /metrics");
  const metrics = must(await c.GET("/metrics", { parseAs: "text" }), "metrics");
  check(metrics.includes("# TYPE"), "metrics text");
  note("GET /login");
  const loginPage = await c.GET("/login", { params: { query: { next: "/" } }, parseAs: "text" });
  check(loginPage.response.ok, "login page (no token: on to next)");
  note("POST /login");
  const login = await c.POST("/login", {
    body: { token: "none configured", next: "/" },
    bodySerializer: (b) => new URLSearchParams({ token: b.token, next: b.next ?? "/" }).toString(),
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    parseAs: "text",
  });
  check(login.response.ok, "login without a token configured goes on to next");
  note("POST /logout");
  const logout = await c.POST("/logout", { parseAs: "text" });
  check(logout.response.ok || logout.response.status === 303, "logout");

  // People: who the caller is, and the users. The suite runs against an open
  // loopback studio (caller: the admin "local"); adding a user would end the
  // open mode for every test file sharing the studio (they carry no token), and
  // an admin cannot remove itself, so here the users operations are called only
  // in ways that change nothing: the refusals the document lists. Adding,
  // changing and removing users for real is covered by the Go tests
  // (web/roles_test.go: TestRolesOnRealResources, TestOpenStudioUntilTheFirstUser),
  // whose answers web/openapi_check_test.go checks against this document too.
  note("GET /v1/me");
  const me = must(await c.GET("/v1/me"), "me");
  check(me.role !== undefined && (me.can ?? []).includes("read"), "me: a role that may read");
  const open = me.via === "local";
  check(!open || (me.name === "local" && me.role === "admin" && (me.can ?? []).includes("admin")), "open studio: the admin local");
  note("GET /v1/users");
  const users = must(await c.GET("/v1/users"), "users");
  check(!open || (users.users ?? []).length === 0, "an open studio has no users");
  if (open) {
    note("POST /v1/users");
    const badName = await c.POST("/v1/users", { body: { name: "no spaces " + suffix, role: "admin" } });
    check(mustFail(badName, 422, "add a user with a bad name").error.code === "invalid_user", "bad user name refused");
    const firstViewer = await c.POST("/v1/users", { body: { name: "typed-" + suffix, role: "viewer" } });
    check(mustFail(firstViewer, 409, "a first user who is not an admin").error.code === "first_user_admin", "first user must be an admin");
    check((must(await c.GET("/v1/me"), "me after").via === "local"), "the studio is still open");
    note("PUT /v1/users/{name}");
    const setRole = await c.PUT("/v1/users/{name}", { params: { path: { name: "typed-" + suffix } }, body: { role: "editor" } });
    check(mustFail(setRole, 404, "set the role of an unknown user").error.code === "not_found", "unknown user's role");
    // A role the type does not allow, sent anyway: the server names the refusal.
    const badRole = await c.PUT("/v1/users/{name}", {
      params: { path: { name: "typed-" + suffix } }, body: { role: "viewer" }, bodySerializer: () => JSON.stringify({ role: "boss" }),
    });
    check(mustFail(badRole, 422, "an unknown role").error.code === "invalid_role", "unknown role refused");
    note("DELETE /v1/users/{name}");
    const remove = await c.DELETE("/v1/users/{name}", { params: { path: { name: "typed-" + suffix } } });
    check(mustFail(remove, 404, "remove an unknown user").error.code === "not_found", "unknown user removed");
  }

  // Credentials: added, read, changed and removed; no answer carries a value.
  const secret = "typed-client-secret-" + suffix;
  const credName = "typed-" + suffix;
  note("GET /v1/credential-types");
  const types = must(await c.GET("/v1/credential-types"), "credential types");
  check(types.types.some((t) => t.name === "bearer" && t.use === "http"), "bearer is a credential type");
  note("POST /v1/credentials");
  const added = must(await c.POST("/v1/credentials", { body: { name: credName, type: "bearer", fields: { token: secret } } }), "add a credential");
  check(added.name === credName && (added.set ?? []).includes("token"), "the credential says its token is set");
  const badCred = await c.POST("/v1/credentials", { body: { name: "no spaces " + suffix, type: "bearer", fields: { token: "x" } } });
  check(mustFail(badCred, 422, "a credential with a bad name").error.code === "invalid_credential", "bad credential name refused");
  note("GET /v1/credentials");
  const creds = must(await c.GET("/v1/credentials"), "credentials");
  check(creds.credentials.some((x) => x.name === credName), "the credential is listed");
  note("GET /v1/credentials/{name}");
  const oneCred = must(await c.GET("/v1/credentials/{name}", { params: { path: { name: credName } } }), "a credential");
  check(oneCred.type === "bearer", "the credential's type");
  note("PATCH /v1/credentials/{name}");
  const changed = must(await c.PATCH("/v1/credentials/{name}", { params: { path: { name: credName } }, body: { chains: ["some-chain-id"] } }), "change a credential");
  check(changed.all_chains === false && (changed.chains ?? []).includes("some-chain-id"), "the credential is limited to a chain");
  check(![added, creds, oneCred, changed].some((x) => JSON.stringify(x).includes(secret)), "no answer holds the value");
  note("DELETE /v1/credentials/{name}");
  const removed = await c.DELETE("/v1/credentials/{name}", { params: { path: { name: credName } } });
  check(removed.response.status === 204, "the credential is removed");

  // Tools and validation
  note("GET /v1/tools");
  const tools = must(await c.GET("/v1/tools"), "tools");
  check(tools.tools.some((t) => t.name === "echo"), "echo is a tool");
  note("POST /v1/validate");
  const v = must(await c.POST("/v1/validate", { body: linear("v" + suffix) }), "validate");
  check(v.valid && v.issues.length === 0 && v.format === "studio", "validate answer");

  // Chains
  note("POST /v1/chains");
  const created = must(await c.POST("/v1/chains", { body: linear("typed-client " + suffix), params: { query: { message: "first" } } }), "create");
  const id: string = created.id;
  made.push(id);
  check(created.version === 1 && created.valid && created.issues.length === 0, "created chain");
  note("GET /v1/chains");
  const list = must(await c.GET("/v1/chains", { params: { query: { q: "typed-client " + suffix, limit: 10 } } }), "list chains");
  check(list.chains.length === 1 && list.next_url === null && list.next === "", "chain list page");
  const byName = must(await c.GET("/v1/chains", { params: { query: { name: "typed-client " + suffix } } }), "list chains by name");
  check(byName.chains.length === 1 && byName.chains[0]?.id === id, "a chain found by its exact name");
  const noName = must(await c.GET("/v1/chains", { params: { query: { name: "typed-client " + suffix + " (none)" } } }), "list chains by a name no chain has");
  check(noName.chains.length === 0 && noName.total === 0, "a name no chain has is an empty list");
  note("GET /v1/chains/{id}");
  const got = must(await c.GET("/v1/chains/{id}", { params: { path: { id } } }), "get chain");
  check(got.doc.nodes.length === 2 && got.valid, "got chain");
  note("PUT /v1/chains/{id}");
  const edited = linear("typed-client " + suffix);
  edited.description = "edited";
  const updated = must(
    await c.PUT("/v1/chains/{id}", { params: { path: { id }, header: { "If-Match": '"v1"' } }, body: edited }),
    "update",
  );
  check(updated.version === 2, "updated version");

  // Versions
  note("GET /v1/chains/{id}/versions");
  const versions = must(await c.GET("/v1/chains/{id}/versions", { params: { path: { id } } }), "versions");
  check(versions.versions.length === 2 && versions.versions[0]?.version === 2, "version list");
  note("POST /v1/chains/{id}/versions");
  const named = must(await c.POST("/v1/chains/{id}/versions", { params: { path: { id } }, body: { message: "named", version: 2 } }), "name version");
  check(named.version === 3, "named version");
  note("POST /v1/chains/{id}/publish");
  check(named.published.version === 1 && named.unpublished_changes === true, "edits are a draft until published");
  const published = must(await c.POST("/v1/chains/{id}/publish", { params: { path: { id }, header: { "If-Match": '"v3"' } }, body: { message: "ready" } }), "publish");
  check(published.published.version === 3 && published.published.message === "ready" && published.unpublished_changes === false, "published the draft");
  note("GET /v1/chains/{id}/versions/{v}");
  const v1 = must(await c.GET("/v1/chains/{id}/versions/{v}", { params: { path: { id, v: 1 } } }), "version 1");
  check(v1.version === 1 && v1.kind === "save", "version 1 answer");
  note("POST /v1/chains/{id}/versions/{v}/restore");
  const stale = await c.POST("/v1/chains/{id}/versions/{v}/restore", { params: { path: { id, v: 1 }, header: { "If-Match": '"v1"' } } });
  check(mustFail(stale, 412, "stale restore").error.code === "precondition_failed", "stale restore refused");
  const restored = must(
    await c.POST("/v1/chains/{id}/versions/{v}/restore", { params: { path: { id, v: 1 }, header: { "If-Match": '"v3"' } } }),
    "restore",
  );
  check(restored.version === 4, "restored version");
  note("GET /v1/chains/{id}/diff");
  const diff = must(await c.GET("/v1/chains/{id}/diff", { params: { path: { id }, query: { from: 1, to: 2 } } }), "diff");
  check(diff.from === 1 && diff.to === 2 && !diff.empty, "version diff");
  note("PATCH /v1/chains/{id}");
  const stalePatch = await c.PATCH("/v1/chains/{id}", {
    params: { path: { id }, header: { "If-Match": '"v3"' } },
    body: { nodes: [{ node_id: "b", kind: "tool", name: "echo", label: "second echo" }] },
  });
  check(mustFail(stalePatch, 409, "patch of an old version").error.code === "version_conflict", "stale patch refused");
  const patched = must(
    await c.PATCH("/v1/chains/{id}", {
      params: { path: { id }, header: { "If-Match": '"v4"' }, query: { message: "label b" } },
      body: { nodes: [{ node_id: "b", kind: "tool", name: "echo", label: "second echo" }], expect: { nodes: 2, edges: 1 } },
    }),
    "patch",
  );
  check(patched.version === 5 && patched.doc.nodes.length === 2 && patched.doc.edges?.length === 1, "patched version");
  check(patched.doc.nodes.find((n) => n.node_id === "b")?.label === "second echo", "patched node b in place");

  // Export and import: the A2E message validates as its own schema
  note("GET /v1/chains/{id}/export");
  const exported = must(await c.GET("/v1/chains/{id}/export", { params: { path: { id }, query: { format: "a2e" } } }), "export");
  if (!("type" in exported) || exported.type !== "chain/req") throw new Error("the A2E export is not a chain/req");
  note("POST /v1/chains/import");
  const imported = must(await c.POST("/v1/chains/import", { body: { ...exported, chain_id: "typed-import " + suffix } }), "import");
  if (!("id" in imported)) throw new Error("import with a new name creates a chain");
  made.push(imported.id);
  check(imported.name.startsWith("typed-import"), "imported chain name");

  // Templates: list them, start a chain from one
  note("GET /v1/templates");
  const templates = must(await c.GET("/v1/templates"), "templates");
  const mapTemplate = templates.templates.find((t) => t.id === "map-code");
  check(mapTemplate !== undefined && mapTemplate.tests > 0, "the map-code template, with tests");
  note("POST /v1/templates/{id}/chains");
  const fromTemplate = must(await c.POST("/v1/templates/{id}/chains", { params: { path: { id: "map-code" } }, body: { name: "typed-template " + suffix } }), "from template");
  made.push(fromTemplate.id);
  check(fromTemplate.name === "typed-template " + suffix && fromTemplate.doc.nodes.length === mapTemplate?.nodes, "a chain from the template");

  // Runs
  note("POST /v1/chains/{id}/runs");
  const started = must(await c.POST("/v1/chains/{id}/runs", { params: { path: { id } }, body: { input: { x: 1 } } }), "start run");
  const run = await settle(c, started.run_id);
  check(run.status === "completed" && run.nodes_run === 2, "run completed");
  note("GET /v1/runs/{id}/usage");
  const usage = must(await c.GET("/v1/runs/{id}/usage", { params: { path: { id: run.id } } }), "run usage");
  check(usage.run_id === run.id && usage.calls.length === 0 && usage.nodes.length === 0, "echo makes no model calls");
  note("GET /v1/usage");
  const byChain = must(await c.GET("/v1/usage", { params: { query: { by: "chain", bucket: "day", key: id } } }), "usage");
  check(byChain.by === "chain" && byChain.bucket === "day" && (byChain.rows ?? []).length === 0, "no model calls on this chain");
  // Conversations: what agents with memory keep; this studio's runs keep none under this scope
  note("GET /v1/conversations");
  const convScope = "typed-" + suffix.replace(/[^A-Za-z0-9_-]/g, "").slice(0, 40);
  const convs = must(await c.GET("/v1/conversations", { params: { query: { scope: convScope, limit: 10 } } }), "conversations");
  check(convs.conversations.length === 0 && convs.limit === 10, "no conversations under a new scope");
  note("GET /v1/conversations/{scope}/{session}");
  const noConv = await c.GET("/v1/conversations/{scope}/{session}", { params: { path: { scope: convScope, session: "nobody" } } });
  check(mustFail(noConv, 404, "an unknown conversation").error.code === "not_found", "an unknown conversation is not found");
  note("DELETE /v1/conversations/{scope}/{session}");
  const noClear = await c.DELETE("/v1/conversations/{scope}/{session}", { params: { path: { scope: convScope, session: "nobody" } } });
  check(noClear.response.status === 404, "clearing an unknown conversation: " + noClear.response.status);
  note("GET /v1/runs/{id}");
  const nodes: Schemas["NodeResult"][] = run.nodes ?? [];
  check(nodes.every((n) => (n.attempts ?? 1) >= 1), "node results count attempts");
  note("GET /v1/runs");
  const runs = must(await c.GET("/v1/runs", { params: { query: { chain: id, limit: 1 } } }), "list runs");
  check(runs.runs.length === 1 && runs.prev_url === null, "runs page");
  note("GET /v1/runs/{id}/events");
  const events = must(await c.GET("/v1/runs/{id}/events", { params: { path: { id: run.id } }, parseAs: "text" }), "events");
  check(events.includes("event: run"), "event stream ends with the run");
  note("POST /v1/runs/{id}/rerun");
  const rerun = must(await c.POST("/v1/runs/{id}/rerun", { params: { path: { id: run.id } }, body: { from_node: "b" } }), "rerun");
  check(rerun.parent_run_id === run.id, "rerun parent");
  const rerunDone = await settle(c, rerun.run_id);
  note("GET /v1/runs/{id}/diff/{other}");
  const rdiff = must(await c.GET("/v1/runs/{id}/diff/{other}", { params: { path: { id: run.id, other: rerunDone.id } } }), "run diff");
  check(typeof rdiff.same === "boolean" && rdiff.a.run_id === run.id, "run diff answer");
  check(rdiff.fired_a.includes("a->b") && Array.isArray(rdiff.fired_b), "run diff: the edges each run fired");
  check(run.doc === undefined, "a saved chain's run names its document by version");
  note("GET /v1/runs/{id}/nodes/{node}/why");
  const why = must(await c.GET("/v1/runs/{id}/nodes/{node}/why", { params: { path: { id: run.id, node: "b" } } }), "why");
  check(why.status === "done", "why status");
  note("GET /v1/runs/{id}/nodes/{node}/output");
  const nodeOut = await c.GET("/v1/runs/{id}/nodes/{node}/output", { params: { path: { id: run.id, node: "b" } } });
  check(nodeOut.response.status === 200 && nodeOut.data !== undefined, "a node's output, streamed");
  note("GET /v1/runs/{id}/nodes/{node}/input");
  const nodeIn = await c.GET("/v1/runs/{id}/nodes/{node}/input", { params: { path: { id: run.id, node: "b" } } });
  check(nodeIn.response.status === 200 && nodeIn.data !== undefined, "a node's input, streamed");
  note("GET /v1/runs/{id}/final-output");
  const final = await c.GET("/v1/runs/{id}/final-output", { params: { path: { id: run.id } } });
  check(final.response.status === 200 && JSON.stringify(final.data) === JSON.stringify(run.final_output), "the final output, streamed, is the run's");
  note("POST /v1/runs/{id}/cancel");
  const cancel = await c.POST("/v1/runs/{id}/cancel", { params: { path: { id: run.id } } });
  check(mustFail(cancel, 409, "cancel a finished run").error.code === "not_running", "cancel refused");
  note("POST /v1/runs/{id}/save-test");
  const saved = must(await c.POST("/v1/runs/{id}/save-test", { params: { path: { id: run.id } }, body: { name: "from the client" } }), "save test");
  check(saved.chain_id === id && saved.index >= 0 && saved.test.name === "from the client", "saved test");
  note("POST /v1/chains/{id}/tests/run");
  const report = must(await c.POST("/v1/chains/{id}/tests/run", { params: { path: { id } }, body: {} }), "run tests");
  check(report.total >= 1 && report.failed === 0, "tests pass");
  note("POST /v1/chains/{id}/nodes/{node}/run");
  const one = must(await c.POST("/v1/chains/{id}/nodes/{node}/run", { params: { path: { id, node: "b" } }, body: { from_run: run.id } }), "node run");
  check(one.node_id === "b" && one.source === "given", "node run answer");
  await settle(c, one.run_id);

  // Expression editor and extract
  note("GET /v1/chains/{id}/expr/context");
  const ctx = must(await c.GET("/v1/chains/{id}/expr/context", { params: { path: { id }, query: { node: "a", field: "input_map.x" } } }), "expr context");
  check(ctx.names.some((n) => n.name === "input"), "expr context names");
  note("POST /v1/chains/{id}/expr/preview");
  const preview = must(await c.POST("/v1/chains/{id}/expr/preview", { params: { path: { id } }, body: { node: "a", field: "input_map.x", expr: "input.x" } }), "expr preview");
  check("value" in preview || "error" in preview, "preview answer");
  note("POST /v1/chains/{id}/extract");
  const extracted = must(await c.POST("/v1/chains/{id}/extract", { params: { path: { id } }, body: { nodes: ["b"], name: "typed-extract " + suffix } }), "extract");
  made.push(extracted.chain.id);
  check(extracted.chain.name === "typed-extract " + suffix, "extracted chain");

  // Interrupts and resume
  const asking = must(await c.POST("/v1/chains", { body: approval("typed-interrupt " + suffix) }), "create approval");
  made.push(asking.id);
  const paused = await settle(c, must(await c.POST("/v1/chains/{id}/runs", { params: { path: { id: asking.id } } }), "start approval").run_id);
  check(paused.status === "paused" && paused.pending.length === 1, "paused at the interrupt");
  note("GET /v1/interrupts");
  const inbox = must(await c.GET("/v1/interrupts", { params: { query: { run: paused.id, sort: "waiting", limit: 10 } } }), "interrupts");
  const pending = inbox.interrupts ?? [];
  check(pending.length === 1 && pending[0]?.node_id === "ask" && pending[0]?.chain_id === asking.id && pending[0]?.prompt === "ok?", "the inbox holds the pause");
  note("POST /v1/runs/{id}/resume");
  const resumed = must(await c.POST("/v1/runs/{id}/resume", { params: { path: { id: paused.id } }, body: { resume_value: "yes" } }), "resume");
  check(resumed.status === "running" || resumed.status === "queued", "resume status");
  check((await settle(c, paused.id)).status === "completed", "resumed run completes");

  // A2E host
  note("POST /v1/a2e");
  const a2e = must(
    await c.POST("/v1/a2e", {
      body: { type: "chain/req", chain_id: "typed-a2e " + suffix, streaming: false, nodes: [{ node_id: "a", kind: "tool", name: "echo" }], initial_input: { x: 1 } },
    }),
    "a2e",
  );
  if (Array.isArray(a2e) || a2e.type !== "chain/resp") throw new Error("a2e: not one chain/resp");
  check(a2e.success && a2e.error === null, "a2e success");
  // an ad-hoc run carries the document it ran: no saved version holds it
  const adhoc = must(await c.GET("/v1/runs", { params: { query: { limit: 100 } } }), "list runs").runs.find((r) => r.chain_name === "typed-a2e " + suffix);
  if (adhoc === undefined || adhoc.id === undefined) throw new Error("a2e: its run is not listed");
  const adhocRun = must(await c.GET("/v1/runs/{id}", { params: { path: { id: adhoc.id } } }), "ad-hoc run");
  check(adhocRun.doc !== undefined && adhocRun.doc.nodes.length === 1 && adhocRun.doc.nodes[0]?.node_id === "a", "ad-hoc run's doc");

  // A2E over the SDK's HTTP transport: a session, its stream, and messages.
  note("POST /v1/a2e/session");
  const session = must(await c.POST("/v1/a2e/session"), "a2e session").session_id;
  const sid = { "X-Session-Id": session };
  note("GET /v1/a2e/stream");
  const stream = must(await c.GET("/v1/a2e/stream", { params: { header: sid }, parseAs: "stream" }), "a2e stream");
  if (stream === null) throw new Error("a2e stream: no body");
  const frames = sseFrames(stream);
  const send = async (msg: string): Promise<void> => {
    const r = await c.POST("/v1/a2e/send", {
      params: { header: sid },
      body: msg,
      bodySerializer: (b) => b,
      headers: { "Content-Type": "text/plain" },
    });
    check(must(r, "a2e send").accepted === true, "a2e message accepted");
  };
  note("POST /v1/a2e/send");
  await send(a2eMessage("handshake/req", "hs-" + suffix, { agent_id: "typed-client", agent_caps: ["chains", "streaming"], auth_token: "" }));
  const hs = await nextFrame(frames);
  if (hs.event !== "handshake/resp") throw new Error(`want handshake/resp, got ${hs.event}`);
  check(hs.data.ok && hs.data.req_id === "hs-" + suffix && hs.data.session_id === session, "handshake answered");
  await send(a2eMessage("ping", "ping-" + suffix));
  const pong = await nextFrame(frames);
  check(pong.event === "pong" && pong.data.req_id === "ping-" + suffix, "pong");
  await send(a2eMessage("chain/req", "req-" + suffix, {
    session_id: session, chain_id: "typed-session " + suffix, streaming: true, initial_input: { x: 3 },
    nodes: [{ node_id: "a", kind: "tool", name: "echo", input_map: { x: "$.input.x" } }],
  }));
  let seen = 0;
  for (;;) {
    const f = await nextFrame(frames);
    check(f.data.req_id === "req-" + suffix, "a frame of the chain/req");
    if (f.event === "chain/event") {
      seen++;
      continue;
    }
    if (f.event !== "chain/resp") throw new Error(`unexpected ${f.event}`);
    check(f.data.success && f.data.error === null && f.data.nodes_run === 1 && seen > 0, "the session's chain ran, with events");
    break;
  }
  await send(a2eMessage("shutdown", "bye-" + suffix, { timeout: 5 }));
  check((await frames.next()).done === true, "the stream ends after shutdown");
  const gone = await c.POST("/v1/a2e/send", {
    params: { header: sid }, body: a2eMessage("ping", "late-" + suffix), bodySerializer: (b) => b, headers: { "Content-Type": "text/plain" },
  });
  check(mustFail(gone, 404, "send after shutdown").error?.code === "unknown_session", "session gone after shutdown");

  // Triggers: a schedule and a webhook on the chain made above.
  note("POST /v1/chains/{id}/schedules");
  const sched = must(
    await c.POST("/v1/chains/{id}/schedules", { params: { path: { id } }, body: { cron: "0 3 1 1 *", time_zone: "Europe/Paris", input: { x: 7 }, overlap: "skip" } }),
    "add schedule",
  );
  check(sched.chain_id === id && sched.enabled === true && sched.time_zone === "Europe/Paris" && typeof sched.next_tick === "string", "schedule added");
  const schedId = sched.id ?? "";
  note("PUT /v1/chains/{id}/schedules/{sid}");
  const paused2 = must(
    await c.PUT("/v1/chains/{id}/schedules/{sid}", { params: { path: { id, sid: schedId } }, body: { cron: "@daily", enabled: false } }),
    "disable schedule",
  );
  check(paused2.cron === "@daily" && paused2.enabled === false && paused2.next_tick === undefined && paused2.time_zone === "" && paused2.overlap === "skip", "schedule replaced");
  note("POST /v1/chains/{id}/hooks");
  const hook = must(await c.POST("/v1/chains/{id}/hooks", { params: { path: { id } }, body: { sync: true, sync_timeout_ms: 10000 } }), "add hook");
  if (hook.id === undefined || hook.secret === undefined) throw new Error("a new hook carries its id and secret");
  const hookId = hook.id;
  check(hook.path === "/v1/hooks/" + hookId && hook.sync === true, "hook added");
  note("POST /v1/hooks/{hook_id}");
  const unsigned = await c.POST("/v1/hooks/{hook_id}", { params: { path: { hook_id: hookId }, header: { "X-Studio-Signature": "t=0,v1=00" } }, body: { x: 2 } });
  check(unsigned.response.status === 401, "a badly signed call is refused");
  const payload = JSON.stringify({ x: 2 });
  const fired = await c.POST("/v1/hooks/{hook_id}", {
    params: { path: { hook_id: hookId }, header: { "X-Studio-Signature": await signHook(hook.secret, payload) } },
    body: { x: 2 },
    bodySerializer: () => payload,
  });
  const firedRun = must(fired, "call hook");
  check(fired.response.status === 200 && firedRun.status === "completed" && typeof firedRun.run_id === "string", "a sync hook answers the finished run");
  note("POST /v1/chains/{id}/hooks/{hid}/test");
  const tried = must(await c.POST("/v1/chains/{id}/hooks/{hid}/test", { params: { path: { id, hid: hookId } }, body: { input: { x: 5 } } }), "send test event");
  check(typeof tried.run_id === "string" && tried.chain_id === id, "a test event starts a run");
  note("GET /v1/chains/{id}/triggers");
  const triggers = must(await c.GET("/v1/chains/{id}/triggers", { params: { path: { id } } }), "triggers");
  check((triggers.schedules ?? []).some((t) => t.id === schedId && t.enabled === false), "triggers list the schedule");
  const listed = (triggers.hooks ?? []).find((h) => h.id === hookId);
  check(listed !== undefined && listed.secret === undefined && (listed.firings ?? []).some((f) => f.run_id === firedRun.run_id && f.outcome === "started"), "triggers list the hook, its firing, not its secret");
  note("DELETE /v1/chains/{id}/schedules/{sid}");
  check((await c.DELETE("/v1/chains/{id}/schedules/{sid}", { params: { path: { id, sid: schedId } } })).response.status === 204, "schedule deleted");
  note("DELETE /v1/chains/{id}/hooks/{hid}");
  check((await c.DELETE("/v1/chains/{id}/hooks/{hid}", { params: { path: { id, hid: hookId } } })).response.status === 204, "hook deleted");

  // MCP, both ways: the chain as a tool of the studio's MCP server, and a
  // registered MCP server (this studio may not reach it: its status says so).
  note("PUT /v1/chains/{id}/mcp");
  const exposed = must(await c.PUT("/v1/chains/{id}/mcp", { params: { path: { id } }, body: { exposed: true } }), "expose");
  check(exposed.mcp_exposed === true, "the chain is an MCP tool");
  note("POST /v1/mcp");
  const init = await c.POST("/v1/mcp", {
    headers: { Accept: "application/json, text/event-stream" },
    body: { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "typed", version: "1" } } },
    parseAs: "text",
  });
  const mcpSession = init.response.headers.get("Mcp-Session-Id") ?? "";
  check(init.response.status === 200 && mcpSession !== "", "an MCP session opens: " + init.response.status);
  note("GET /v1/mcp");
  const noStream = await c.GET("/v1/mcp", { params: { header: { "Mcp-Session-Id": "no-such-session" } }, parseAs: "text" });
  check(noStream.response.status >= 400 && noStream.response.status < 500, "a stream needs a live session: " + noStream.response.status);
  note("DELETE /v1/mcp");
  const closed = await c.DELETE("/v1/mcp", { params: { header: { "Mcp-Session-Id": mcpSession } }, parseAs: "text" });
  check(closed.response.status === 204 || closed.response.status === 200, "the MCP session closes: " + closed.response.status);
  must(await c.PUT("/v1/chains/{id}/mcp", { params: { path: { id } }, body: { exposed: false } }), "unexpose");
  const serverName = "typed-" + suffix.replace(/[^A-Za-z0-9_-]/g, "").slice(0, 40);
  note("POST /v1/mcp-servers");
  const reg = await c.POST("/v1/mcp-servers", { body: { name: serverName, transport: "http", url: "http://127.0.0.1:9/mcp" } });
  check(reg.response.status === 201 || reg.response.status === 422, "registered or refused with a reason: " + reg.response.status);
  note("GET /v1/mcp-servers");
  must(await c.GET("/v1/mcp-servers", {}), "mcp servers");
  note("GET /v1/mcp-servers/{name}");
  const oneServer = await c.GET("/v1/mcp-servers/{name}", { params: { path: { name: serverName } } });
  check(oneServer.response.status === (reg.response.status === 201 ? 200 : 404), "one server: " + oneServer.response.status);
  note("PUT /v1/mcp-servers/{name}");
  const upd = await c.PUT("/v1/mcp-servers/{name}", { params: { path: { name: serverName } }, body: { name: serverName, transport: "http", url: "http://127.0.0.1:9/mcp", enabled: false } });
  check([200, 404, 422].includes(upd.response.status), "server changed or refused: " + upd.response.status);
  note("DELETE /v1/mcp-servers/{name}");
  const del = await c.DELETE("/v1/mcp-servers/{name}", { params: { path: { name: serverName } } });
  check(del.response.status === (reg.response.status === 201 ? 204 : 404), "server removed: " + del.response.status);
  const after = must(await c.GET("/v1/chains/{id}/triggers", { params: { path: { id } } }), "triggers after");
  check((after.schedules ?? []).length === 0 && (after.hooks ?? []).length === 0, "no triggers left");
  const deadHook = await c.POST("/v1/hooks/{hook_id}", {
    params: { path: { hook_id: hookId }, header: { "X-Studio-Signature": await signHook(hook.secret, payload) } }, body: { x: 2 }, bodySerializer: () => payload,
  });
  check(deadHook.response.status === 404, "a deleted hook answers 404");

  // Agents
  note("GET /v1/agents");
  const agents = must(await c.GET("/v1/agents"), "agents");
  const qualifier = agents.agents.find((a) => a.has_chain);
  if (qualifier === undefined) throw new Error("no agent with a chain (run the studio with --agents examples/agents)");
  note("GET /v1/agents/{name}");
  const agent = must(await c.GET("/v1/agents/{name}", { params: { path: { name: qualifier.name } } }), "agent");
  check(agent.definition.name === qualifier.name, "agent definition");
  note("GET /v1/agents/{name}/chain");
  const graph = must(await c.GET("/v1/agents/{name}/chain", { params: { path: { name: qualifier.name } } }), "agent chain");
  check(graph.links.length > 0, "agent graph links");
  note("POST /v1/agents/{name}/run");
  const answer = must(
    await c.POST("/v1/agents/{name}/run", { params: { path: { name: qualifier.name } }, body: { query: "lead", context: { budget: 60000, timeline_days: 10 } } }),
    "agent run",
  );
  check(answer.status === "completed" && answer.chain !== null, "agent answer");
  note("GET /v1/providers");
  const providers = must(await c.GET("/v1/providers"), "providers");
  check(providers.providers[0]?.name === "openai" && providers.providers[0].default_url === null, "providers");
  note("GET /v1/agents/{name}/models");
  // The example agents call tools, not models: the list is refused for them.
  const noModels = await c.GET("/v1/agents/{name}/models", { params: { path: { name: qualifier.name } } });
  check(mustFail(noModels, 409, "models of a tool agent").error.code === "not_model_agent", "models of a tool agent refused");
  note("GET /v1/models");
  // A model block's list: a provider the studio does not know is refused before any call.
  const unknownProvider = await c.GET("/v1/models", { params: { query: { provider: "acme" } } });
  check(mustFail(unknownProvider, 400, "models of an unknown provider").error.code === "bad_parameter", "unknown provider refused");
  // Stored agents: created, run by name, edited from a version, deleted.
  const agentName = "typed-notes-" + Date.now().toString(36);
  const source = `name: ${agentName}\ntool: transform\ninput: {expression: "{noted: query}"}\n`;
  note("POST /v1/agents");
  const storedAgent = must(await c.POST("/v1/agents", { body: { name: agentName, source, message: "first" } }), "store agent");
  check(storedAgent.version === 1 && storedAgent.source === source, "stored agent version 1");
  note("PUT /v1/agents/{name}");
  const editedAgent = must(
    await c.PUT("/v1/agents/{name}", { params: { path: { name: agentName } }, body: { source: source.replace("{noted: query}", "{noted: query, again: `true`}"), base_version: 1 } }),
    "edit agent",
  );
  check(editedAgent.version === 2, "stored agent version 2");
  const staleAgent = await c.PUT("/v1/agents/{name}", { params: { path: { name: agentName } }, body: { source, base_version: 1 } });
  check(mustFail(staleAgent, 409, "stale agent edit").error.code === "version_conflict", "stale agent edit refused");
  note("GET /v1/agents/{name}/versions");
  const agentVersions = must(await c.GET("/v1/agents/{name}/versions", { params: { path: { name: agentName } } }), "agent versions");
  check(agentVersions.versions.length === 2 && agentVersions.versions[1]?.message === "first", "agent versions newest first");
  note("DELETE /v1/agents/{name}");
  const agentGone = await c.DELETE("/v1/agents/{name}", { params: { path: { name: agentName } } });
  check(agentGone.response.status === 204, "stored agent deleted");

  // Delete with If-Match
  note("DELETE /v1/chains/{id}");
  const refused = await c.DELETE("/v1/chains/{id}", { params: { path: { id }, header: { "If-Match": '"v1"' } } });
  check(mustFail(refused, 412, "stale delete").error.code === "precondition_failed", "stale delete refused");
  const deleted = await c.DELETE("/v1/chains/{id}", { params: { path: { id }, header: { "If-Match": '"v6"' } } });
  check(deleted.response.status === 204, "deleted");
  // Leave the shared studio as it was found: the other chains this made go too.
  for (const other of [imported.id, extracted.chain.id, asking.id]) {
    check((await c.DELETE("/v1/chains/{id}", { params: { path: { id: other } } })).response.status === 204, "clean up " + other);
  }
  return called;
}
