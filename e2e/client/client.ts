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

async function settle(c: Client, id: string): Promise<Schemas["Run"]> {
  for (let i = 0; i < 200; i++) {
    const run = must(await c.GET("/v1/runs/{id}", { params: { path: { id } } }), "get run");
    if (!run.active && run.status !== "queued" && run.status !== "running") return run;
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error(`run ${id} did not settle`);
}

/** Runs every operation once; returns the operations it called. */
export async function exercise(baseUrl: string, suffix: string): Promise<string[]> {
  const c = createClient<paths>({ baseUrl });
  const called: string[] = [];
  const note = (op: string) => called.push(op);

  // Service
  note("GET /healthz");
  check(must(await c.GET("/healthz"), "healthz").status === "ok", "healthz status");
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
  check(created.version === 1 && created.valid && created.issues.length === 0, "created chain");
  note("GET /v1/chains");
  const list = must(await c.GET("/v1/chains", { params: { query: { q: "typed-client " + suffix, limit: 10 } } }), "list chains");
  check(list.chains.length === 1 && list.next_url === null && list.next === "", "chain list page");
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

  // Export and import: the A2E message validates as its own schema
  note("GET /v1/chains/{id}/export");
  const exported = must(await c.GET("/v1/chains/{id}/export", { params: { path: { id }, query: { format: "a2e" } } }), "export");
  if (!("type" in exported) || exported.type !== "chain/req") throw new Error("the A2E export is not a chain/req");
  note("POST /v1/chains/import");
  const imported = must(await c.POST("/v1/chains/import", { body: { ...exported, chain_id: "typed-import " + suffix } }), "import");
  if (!("id" in imported)) throw new Error("import with a new name creates a chain");
  check(imported.name.startsWith("typed-import"), "imported chain name");

  // Runs
  note("POST /v1/chains/{id}/runs");
  const started = must(await c.POST("/v1/chains/{id}/runs", { params: { path: { id } }, body: { input: { x: 1 } } }), "start run");
  const run = await settle(c, started.run_id);
  check(run.status === "completed" && run.nodes_run === 2, "run completed");
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
  note("GET /v1/runs/{id}/nodes/{node}/why");
  const why = must(await c.GET("/v1/runs/{id}/nodes/{node}/why", { params: { path: { id: run.id, node: "b" } } }), "why");
  check(why.status === "done", "why status");
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
  check(extracted.chain.name === "typed-extract " + suffix, "extracted chain");

  // Interrupts and resume
  const asking = must(await c.POST("/v1/chains", { body: approval("typed-interrupt " + suffix) }), "create approval");
  const paused = await settle(c, must(await c.POST("/v1/chains/{id}/runs", { params: { path: { id: asking.id } } }), "start approval").run_id);
  check(paused.status === "paused" && paused.pending.length === 1, "paused at the interrupt");
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

  // Delete with If-Match
  note("DELETE /v1/chains/{id}");
  const refused = await c.DELETE("/v1/chains/{id}", { params: { path: { id }, header: { "If-Match": '"v1"' } } });
  check(mustFail(refused, 412, "stale delete").error.code === "precondition_failed", "stale delete refused");
  const deleted = await c.DELETE("/v1/chains/{id}", { params: { path: { id }, header: { "If-Match": '"v5"' } } });
  check(deleted.response.status === 204, "deleted");
  // Leave the shared studio as it was found: the other chains this made go too.
  for (const other of [imported.id, extracted.chain.id, asking.id]) {
    check((await c.DELETE("/v1/chains/{id}", { params: { path: { id: other } } })).response.status === 204, "clean up " + other);
  }
  return called;
}
