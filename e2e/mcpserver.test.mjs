// The studio as an MCP server, driven by a client nobody here wrote: the
// official TypeScript SDK (@modelcontextprotocol/sdk), over streamable HTTP
// (/v1/mcp) and over stdio (`studio mcp --url …`, a bridge to the same
// studio). An admin exposes a chain (the editor's MCP panel); an editor's
// client lists it, calls it, hears progress, cancels a long call; a viewer
// is refused; the run page says the run was started by MCP.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { launch, close, open, ownStudio, SHOTS } from './lib.mjs';

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
let studio, base, tokens, chainId;

async function call(role, method, path, body) {
  const res = await fetch(base + path, {
    method,
    headers: { Authorization: 'Bearer ' + tokens[role], ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = text; }
  return { status: res.status, json };
}

async function httpClient(role) {
  const client = new Client({ name: 'e2e', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(base + '/v1/mcp'), {
    requestInit: { headers: { Authorization: 'Bearer ' + tokens[role] } },
  });
  await client.connect(transport);
  return client;
}

async function signIn(role, next) {
  const page = await open(null);
  await page.goto(base + '/login?next=' + encodeURIComponent(next));
  await page.waitForFunction(() => document.activeElement && document.activeElement.name === 'token');
  await page.keyboard.type(tokens[role]);
  await Promise.all([page.waitForURL(base + next), page.keyboard.press('Enter')]);
  return page;
}

async function runStatus(id, want) {
  for (let i = 0; i < 200; i++) {
    const r = await call('admin', 'GET', '/v1/runs/' + id);
    if (want.includes(r.json.status)) return r.json;
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error('run ' + id + ' did not reach ' + want.join(' or '));
}

before(async () => {
  studio = await ownStudio('studio-mcpserver-', [['ada', 'admin'], ['vic', 'viewer'], ['eddie', 'editor']]);
  ({ base, tokens } = studio);
  await launch();
  const r = await call('admin', 'POST', '/v1/chains', {
    name: 'greet slowly', description: 'Greets someone, then waits ms milliseconds.',
    sample_input: { name: 'Ada', ms: 0 },
    nodes: [
      { node_id: 'hi', kind: 'tool', name: 'echo', input_map: { greeting: 'input.name' } },
      { node_id: 'wait', kind: 'tool', name: 'delay', input_map: { ms: 'input.ms' } },
    ],
    edges: [{ source: 'hi', target: 'wait' }],
  });
  assert.equal(r.status, 201, JSON.stringify(r.json));
  chainId = r.json.id;
});
after(async () => { await close(); studio.stop(); });

test('an admin exposes the chain in the editor; only an admin may', async () => {
  assert.equal((await call('editor', 'PUT', `/v1/chains/${chainId}/mcp`, { exposed: true })).status, 403);
  const page = await signIn('admin', '/chains/' + chainId);
  await page.click('#tab-mcp'); // the side panel's MCP tab
  const box = page.locator('#mcp-exposed');
  assert.equal(await box.isChecked(), false);
  await box.check();
  await page.waitForFunction(() => /Offered/.test(document.getElementById('mcp-state').textContent));
  assert.equal((await call('admin', 'GET', '/v1/chains/' + chainId)).json.mcp_exposed, true);
  await page.locator('#mcp-panel').scrollIntoViewIfNeeded();
  await page.locator('#mcp-panel').screenshot({ path: join(SHOTS, 'mcp-panel.png') });
  await page.evaluate(AXE + '\n;void 0');
  const bad = await page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await axe.run(document.getElementById('mcp-panel'), { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] }, resultTypes: ['violations'] });
    return r.violations.map((v) => v.id + ': ' + v.nodes.map((n) => n.target.join(' ')).join(', '));
  });
  assert.deepEqual(bad, [], 'axe finds no violation in the MCP panel');
  await page.done();
  // An editor sees the setting, without the control.
  const ed = await signIn('editor', '/chains/' + chainId);
  assert.equal(await ed.locator('#mcp-exposed').count(), 0);
  assert.match(await ed.locator('#mcp-state').textContent(), /Offered as a tool/);
  await ed.done();
});

test("the designer's side panels (validation, triggers with a webhook and a disabled schedule, MCP) pass axe", async () => {
  assert.equal((await call('admin', 'POST', `/v1/chains/${chainId}/hooks`, { sync: false })).status, 201);
  const sched = await call('admin', 'POST', `/v1/chains/${chainId}/schedules`, { cron: '0 9 * * 1-5', enabled: false });
  assert.equal(sched.status, 201, JSON.stringify(sched.json));
  const page = await signIn('admin', '/chains/' + chainId);
  await page.click('#tab-triggers');
  await page.waitForSelector('#hooks-list .trig.hook');
  await page.waitForSelector('#schedules-list .trig.off');
  await page.evaluate(AXE + '\n;void 0');
  // one tab at a time shows its panel: axe checks each
  for (const tab of ['issues', 'triggers', 'mcp']) {
    await page.click('#tab-' + tab);
    const bad = await page.evaluate(async () => {
      // eslint-disable-next-line no-undef
      const r = await axe.run(document.querySelector('.side'), { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] }, rules: { 'label-content-name-mismatch': { enabled: true } }, resultTypes: ['violations'] });
      return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id + ': ' + v.nodes.map((n) => n.target.join(' ')).join(', '));
    });
    assert.deepEqual(bad, [], 'axe finds no serious violation in the side panel\'s ' + tab + ' tab');
  }
  // The panels that scroll are reachable from the keyboard.
  for (const id of ['issues', 'triggers-panel', 'mcp-panel']) assert.equal(await page.getAttribute('#' + id, 'tabindex'), '0', id);
  await page.done();
});

test('over HTTP: an editor lists the tool, calls it, hears progress, cancels a long call', async () => {
  const client = await httpClient('editor');
  try {
    const { tools } = await client.listTools();
    const tool = tools.find((t) => t.name === 'greet_slowly');
    assert.ok(tool, 'the exposed chain is a tool: ' + JSON.stringify(tools.map((t) => t.name)));
    assert.equal(tool.description, 'Greets someone, then waits ms milliseconds.');
    assert.equal(tool.inputSchema.properties.name.type, 'string');
    assert.equal(tool.inputSchema.properties.ms.type, 'integer');

    const progress = [];
    const res = await client.callTool({ name: 'greet_slowly', arguments: { name: 'Grace', ms: 1 } }, undefined, { onprogress: (p) => progress.push(p) });
    assert.equal(res.isError ?? false, false, JSON.stringify(res));
    const sc = res.structuredContent;
    assert.equal(sc.status, 'completed');
    assert.equal(sc.run_url, base + '/runs/' + sc.run_id);
    assert.match(res.content[0].text, new RegExp(sc.run_id));
    assert.deepEqual(progress.map((p) => p.message), ['node hi: done', 'node wait: done']);
    const run = (await call('admin', 'GET', '/v1/runs/' + sc.run_id)).json;
    assert.equal(run.started_by, 'mcp');
    assert.equal(run.trigger_id, 'eddie');
    assert.equal(run.outputs.hi.greeting, 'Grace');

    // A long call, cancelled by the client once the first node is done:
    // the run is cancelled.
    const ac = new AbortController();
    let firstDone;
    const first = new Promise((res) => { firstDone = res; });
    const long = client.callTool({ name: 'greet_slowly', arguments: { name: 'Slow', ms: 60000 } }, undefined, { signal: ac.signal, onprogress: () => firstDone() });
    await first;
    ac.abort();
    await assert.rejects(long);
    const runs = (await call('admin', 'GET', `/v1/runs?chain_id=${chainId}`)).json.runs;
    const slow = runs.find((r) => r.id !== sc.run_id && r.trigger_id === 'eddie');
    assert.ok(slow, 'the long call has a run');
    await runStatus(slow.id, ['cancelled']);
  } finally {
    await client.close();
  }
});

test('a viewer is refused with an error that says which roles may', async () => {
  await assert.rejects(httpClient('viewer'), (e) => {
    assert.match(String(e.message), /editor or publisher or admin/);
    return true;
  });
});

test('over stdio: `studio mcp --url` bridges to the same studio', async () => {
  const bin = process.env.STUDIO_BIN;
  assert.ok(bin, 'scripts/e2e.sh sets STUDIO_BIN');
  const client = new Client({ name: 'e2e-stdio', version: '1.0.0' });
  const transport = new StdioClientTransport({ command: bin, args: ['mcp', '--url', base], env: { STUDIO_TOKEN: tokens.editor }, stderr: 'pipe' });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'greet_slowly'));
    const progress = [];
    const res = await client.callTool({ name: 'greet_slowly', arguments: { name: 'Stdio', ms: 1 } }, undefined, { onprogress: (p) => progress.push(p) });
    assert.equal(res.structuredContent.status, 'completed', JSON.stringify(res));
    // The bridge relays the server's streams as they come: the last
    // progress notification may reach the client just after the result,
    // and the SDK's client drops a notification for a request it has
    // answered, so it sees one or both.
    for (let i = 0; i < 300 && progress.length < 2; i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(progress.length >= 1 && progress.length <= 2, 'progress relayed: ' + JSON.stringify(progress));
    const run = (await call('admin', 'GET', '/v1/runs/' + res.structuredContent.run_id)).json;
    assert.equal(run.started_by, 'mcp');
    assert.equal(run.outputs.hi.greeting, 'Stdio');

    // The run page shows the run and says MCP started it.
    const page = await signIn('viewer', '/runs/' + run.id);
    await page.waitForSelector('#run-status');
    assert.match(await page.locator('#run-trigger').textContent(), /started by MCP \(eddie\)/);
    assert.match(await page.locator('#run-status').textContent(), /ompleted/);
    await page.screenshot({ path: join(SHOTS, 'mcp-run.png') });
    await page.done();
  } finally {
    await client.close();
  }
});
