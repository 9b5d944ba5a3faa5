// An agent with a tool, on the run page: the answer streams in as the model
// writes it, a tool marked `approval: required` pauses the node until a
// person approves it from the inbox, and the tool step shows as a row with
// its status. The model is a fake OpenAI Chat Completions server on
// loopback that speaks the streaming wire format (chat.completion.chunk
// events, tool calls split across chunks, a last chunk with usage), scripted
// by the conversation it is sent; the test holds its first answer after a
// few words until the page shows them. The test starts a studio of its own
// whose agents folder holds that agent. A second run's call is rejected
// instead. A last test feeds the agent panel made-up steps to check its
// bounds, that model text stays text, and axe in both themes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, close, open, ownStudio, ROOT, SHOTS } from './lib.mjs';

// WANTED_ARGS are the `studio serve` flags the agent needs: the model
// server is on loopback, which a studio refuses to call unless told
// (--model-allow-private, kept only when this studio knows the flag).
const WANTED_ARGS = ['--model-allow-private'];

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

let studio, base, fake, agentsDir;

// ---- the fake model server ---------------------------------------------------

// fakeOpenAI starts a Chat Completions server on 127.0.0.1:0. A request
// whose last message is a tool result gets the final answer; any other gets
// a few words, a hold (until release() or 10 s, so a page that never shows
// the words fails the test instead of hanging it), more words and a call of
// the first tool offered. Every request body is kept in order.
async function fakeOpenAI() {
  const bodies = [];
  let release;
  const held = new Promise((r) => { release = r; });
  const first = ['Let ', 'me ', 'check ', 'that.'];
  const rest = [' One ', 'moment.'];
  const final = ['The ', 'echo ', 'says ', 'hello ', 'back. ', 'Done.'];
  const chunk = (choices, extra = {}) => 'data: ' + JSON.stringify({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1764633600, model: 'fake-model', choices, ...extra }) + '\n\n';
  const delta = (d, finish = null) => chunk([{ index: 0, delta: d, finish_reason: finish }]);
  const tick = () => new Promise((r) => setImmediate(r));

  const server = createServer(async (req, res) => {
    let raw = '';
    for await (const b of req) raw += b;
    if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) { res.writeHead(404).end(); return; }
    const body = JSON.parse(raw);
    bodies.push(body);
    const msgs = body.messages || [];
    const afterTool = msgs.length > 0 && msgs[msgs.length - 1].role === 'tool';
    const toolName = body.tools && body.tools[0] && body.tools[0].function.name;
    if (!body.stream) { // a model client that does not stream: the same script in one answer
      const text = (afterTool ? final : first.concat(rest)).join('');
      const message = afterTool || !toolName ? { role: 'assistant', content: text }
        : { role: 'assistant', content: text, tool_calls: [{ id: 'call_1', type: 'function', function: { name: toolName, arguments: '{"text":"hello"}' } }] };
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ id: 'chatcmpl-fake', object: 'chat.completion', created: 1764633600, model: 'fake-model',
        choices: [{ index: 0, message, finish_reason: message.tool_calls ? 'tool_calls' : 'stop' }], usage: { prompt_tokens: 21, completion_tokens: 9, total_tokens: 30 } }));
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
    res.write(delta({ role: 'assistant', content: '' }));
    if (afterTool) {
      for (const w of final) { res.write(delta({ content: w })); await tick(); }
      res.write(delta({}, 'stop'));
      res.write(chunk([], { usage: { prompt_tokens: 40, completion_tokens: 7, total_tokens: 47 } }));
    } else {
      for (const w of first) { res.write(delta({ content: w })); await tick(); }
      await Promise.race([held, new Promise((r) => setTimeout(r, 10000))]);
      for (const w of rest) { res.write(delta({ content: w })); await tick(); }
      if (toolName) {
        // the arguments come in pieces, as a real server sends them
        res.write(delta({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: toolName, arguments: '' } }] }));
        for (const a of ['{"te', 'xt": "hel', 'lo"}']) { res.write(delta({ tool_calls: [{ index: 0, function: { arguments: a } }] })); await tick(); }
        res.write(delta({}, 'tool_calls'));
      } else {
        res.write(delta({}, 'stop'));
      }
      res.write(chunk([], { usage: { prompt_tokens: 21, completion_tokens: 9, total_tokens: 30 } }));
    }
    res.end('data: [DONE]\n\n');
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { port: server.address().port, bodies, release, stop: () => server.close() };
}

// ---- set-up --------------------------------------------------------------------

// serveArgs keeps the wanted flags this studio's `serve` knows (a studio
// refuses an unknown flag); it builds the studio when STUDIO_BIN is not set,
// for ownStudio too.
function serveArgs(dir) {
  let bin = process.env.STUDIO_BIN;
  if (!bin) {
    bin = process.env.STUDIO_BIN = join(dir, 'studio');
    execFileSync('go', ['build', '-o', bin, './cmd/studio'], { cwd: ROOT, stdio: 'inherit' });
  }
  const h = spawnSync(bin, ['serve', '-h'], { encoding: 'utf8' }); // the usage goes to stderr, whatever the exit code
  const help = (h.stdout || '') + (h.stderr || '');
  return WANTED_ARGS.filter((f) => help.includes(f.replace(/^--/, '-')));
}

before(async () => {
  await launch();
  fake = await fakeOpenAI();
  agentsDir = mkdtempSync(join(tmpdir(), 'studio-agents-'));
  const args = serveArgs(agentsDir);
  const yaml = [
    'name: helper',
    `model: {provider: openai, url: "http://127.0.0.1:${fake.port}/v1", name: fake-model}`,
    'prompt: "{{ query }}"',
    'tools:',
    '  - tool: echo',
    '    description: Echo the input back.',
    '    approval: required',
    'max_steps: 4',
    '',
  ].join('\n');
  mkdirSync(join(agentsDir, 'agents'));
  writeFileSync(join(agentsDir, 'agents', 'helper.agent.yaml'), yaml);
  studio = await ownStudio('studio-agents-', [], { agentsDir: join(agentsDir, 'agents'), args });
  ({ base } = studio);
});
after(async () => {
  await close();
  if (studio) studio.stop();
  if (fake) fake.stop();
  if (agentsDir) rmSync(agentsDir, { recursive: true, force: true });
});

async function call(method, path, body) {
  const res = await fetch(base + path, { method, headers: body ? { 'Content-Type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = text; }
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return json;
}

async function waitRun(id, ok, what) {
  for (let i = 0; i < 400; i++) {
    const r = await call('GET', '/v1/runs/' + id);
    if (ok(r)) return r;
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error(`run ${id} never ${what}`);
}

async function page(path) {
  const p = await open(null);
  await p.goto(base + path);
  return p;
}

const turnText = (p, turn) => p.locator(`#agent-streams .agent-turn[data-turn="${turn}"] .agent-text`);

// ---- tests -----------------------------------------------------------------------

test('the run page streams an agent\'s answer, waits for the approval of its gated tool, and shows the tool step', async () => {
  const chain = await call('POST', '/v1/chains', {
    name: 'agent stream ' + Date.now(), entry_node: 'ask',
    nodes: [{ node_id: 'ask', kind: 'agent', name: 'helper', label: 'Ask the helper', input: { query: 'say hello through the echo tool' } }],
    edges: [],
  });
  const { run_id: id } = await call('POST', `/v1/chains/${chain.id}/runs`, { input: {} });
  const p = await page('/runs/' + id);
  await p.waitForSelector('#runpage[data-ready="1"]');

  // The first words show while the model is still writing (held).
  await p.waitForFunction(() => /Let me check/.test((document.querySelector('#agent-streams .agent-turn[data-turn="1"] .agent-text') || {}).textContent || ''), null, { timeout: 10000 });
  assert.equal((await call('GET', '/v1/runs/' + id)).status, 'running', 'the node is still running while the words show');
  assert.equal((await p.locator('#agent-streams .agent-node-title').textContent()).replace(/\s+/g, ' '), 'Agent helper · Ask the helper ask');
  await p.locator('#agent-panel').screenshot({ path: join(SHOTS, 'agent-streaming.png') });
  fake.release();

  // The gated call pauses the run; the panel says so.
  await waitRun(id, (r) => r.status === 'paused', 'paused');
  await p.locator('#agent-streams .agent-wait:not([hidden])').waitFor({ timeout: 10000 });
  assert.match(await turnText(p, 1).innerText(), /^Let me check that\. One moment\.$/);

  // Approved from the inbox.
  const inbox = await page('/inbox');
  const item = inbox.locator(`.inbox-item[data-run-id="${id}"]`);
  await item.waitFor();
  await item.locator('button[data-action="approve"]').click();
  await item.locator('.ib-done-note').waitFor();
  await inbox.done();

  // Turn 2 streams in on the page that stayed open; the tool row is ok.
  await p.waitForFunction(() => /Done\.$/.test((document.querySelector('#agent-streams .agent-turn[data-turn="2"] .agent-text') || {}).textContent || ''), null, { timeout: 20000 }); // the page connects again within seconds
  assert.equal(await turnText(p, 2).innerText(), 'The echo says hello back. Done.');
  const row = p.locator('#agent-streams .agent-call');
  assert.equal(await row.count(), 1, 'one tool step');
  assert.equal(await row.locator('.agent-tool').innerText(), fake.bodies[0].tools[0].function.name);
  await p.waitForFunction(() => document.querySelector('#agent-streams .agent-call .agent-status').textContent === 'ok');
  assert.deepEqual(JSON.parse(await row.locator('.agent-input pre').textContent()), { text: 'hello' });
  assert.match(await p.locator('#agent-streams .agent-turn[data-turn="1"] .agent-turn-meta').innerText(), /fake-model · 21 in, 9 out tokens/);
  const run = await waitRun(id, (r) => r.status === 'completed', 'completed');
  assert.equal(run.outputs.ask.answer, 'The echo says hello back. Done.');
  // the usage panel counts the second call too (reloaded as it reports)
  await p.waitForFunction(() => (document.querySelector('#usage-total td') || {}).textContent === '2', null, { timeout: 10000 });
  await p.locator('#agent-panel').screenshot({ path: join(SHOTS, 'agent-done.png') });
  await p.screenshot({ path: join(SHOTS, 'agent-run.png') });

  // The model was sent the tool's result, answering its call.
  const last = fake.bodies[fake.bodies.length - 1];
  const result = last.messages.find((m) => m.role === 'tool');
  assert.ok(result, 'the second request carries the tool result: ' + JSON.stringify(last.messages));
  assert.equal(result.tool_call_id, 'call_1');
  const asked = last.messages.find((m) => m.role === 'assistant' && m.tool_calls);
  assert.equal(asked.tool_calls[0].id, 'call_1');
  await p.done();

  // A finished run's page builds the same panel from the stored events.
  const again = await page('/runs/' + id);
  await again.waitForSelector('#runpage[data-ready="1"]');
  await again.waitForFunction(() => document.querySelectorAll('#agent-streams .agent-turn').length === 2);
  assert.equal(await turnText(again, 1).innerText(), 'Let me check that. One moment.');
  assert.equal(await turnText(again, 2).innerText(), 'The echo says hello back. Done.');
  assert.equal(await again.locator('#agent-streams .agent-call .agent-status').innerText(), 'ok');
  assert.equal(await again.locator('#agent-streams .agent-wait:not([hidden])').count(), 0);
  await again.done();
});

test('a call rejected in the inbox is a step the model is told of, shown as rejected by a person', async () => {
  fake.release(); // this run's first answer is not held
  const chain = await call('POST', '/v1/chains', {
    name: 'agent reject ' + Date.now(), entry_node: 'ask',
    nodes: [{ node_id: 'ask', kind: 'agent', name: 'helper', input: { query: 'try the echo tool' } }], edges: [],
  });
  const { run_id: id } = await call('POST', `/v1/chains/${chain.id}/runs`, { input: {} });
  await waitRun(id, (r) => r.status === 'paused', 'paused');
  const p = await page('/runs/' + id);
  await p.waitForSelector('#runpage[data-ready="1"]');
  await p.locator('#agent-streams .agent-wait:not([hidden])').waitFor();
  const sent = fake.bodies.length;

  const inbox = await page('/inbox');
  const item = inbox.locator(`.inbox-item[data-run-id="${id}"]`);
  await item.waitFor();
  await item.locator('.ib-comment').fill('not now');
  await item.locator('button[data-action="reject"]').click();
  await item.locator('.ib-done-note').waitFor();
  await inbox.done();

  await p.waitForFunction(() => (document.querySelector('#agent-streams .agent-call .agent-status') || {}).textContent === 'rejected by a person', null, { timeout: 20000 });
  await p.waitForFunction(() => /Done\.$/.test((document.querySelector('#agent-streams .agent-turn[data-turn="2"] .agent-text') || {}).textContent || ''), null, { timeout: 20000 });
  assert.equal(await p.locator('#agent-streams .agent-wait:not([hidden])').count(), 0, 'no longer waiting');
  const told = fake.bodies.slice(sent).find((b) => b.messages.some((m) => m.role === 'tool'));
  assert.ok(told, 'the model is sent the rejection as the call\'s result');
  assert.equal(told.messages.find((m) => m.role === 'tool').tool_call_id, 'call_1');
  await p.locator('#agent-panel').screenshot({ path: join(SHOTS, 'agent-rejected.png') });
  await p.done();
});

// someSteps feeds the page's agent panel one of each kind of step (run in
// the page).
function someSteps() {
  const a = window.__run.agents;
  const ev = (progress) => ({ phase: 'progress', node_id: 'e', progress: { agent: 'writer', ...progress } });
  a.apply(ev({ step: 'model_call', model: 'm1', turn: 1 }));
  a.apply(ev({ step: 'text', turn: 1, text: '<img src=x onerror="window.__owned=1">' }));
  a.apply(ev({ step: 'tool_call', turn: 1, call_id: 'c1', tool: 'lookup', kind: 'chain', input: { q: '<b>x</b>' } }));
  a.apply(ev({ step: 'tool_result', turn: 1, call_id: 'c1', tool: 'lookup', status: 'rejected', duration_ms: 3 }));
  a.apply(ev({ step: 'tool_result', turn: 1, call_id: 'c2', tool: 'nope', status: 'refused', error: 'unknown tool "nope"' }));
  a.apply(ev({ step: 'tool_calls_refused', turn: 1, calls: 40, tools: ['lookup'], left: 2, max_tool_calls: 32, error: 'You asked for 40 tool calls in one turn' }));
  a.apply(ev({ step: 'repair', attempt: 1, of: 2, error: 'data.score: want integer' }));
  a.apply(ev({ step: 'model_call', model: 'm1', turn: 2 }));
  a.apply(ev({ step: 'model_usage', model: 'm1', input_tokens: 1234, output_tokens: 56, reported: true, turn: 1 }));
  a.apply(ev({ step: 'warning', text: '2 of 3 tool calls failed', failed: 2, calls: 3 }));
}

async function axePanel(p) {
  await p.evaluate(AXE + '\n;void 0');
  return p.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await axe.run('#agent-panel', { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] }, resultTypes: ['violations'] });
    return r.violations.flatMap((v) => v.nodes.map((n) => v.id + ' at ' + n.target.join(' ')));
  });
}

test('the agent panel writes model text as text, cuts a long one, and shows each kind of step', async () => {
  // any run page carries the panel; an echo chain's run has no agent steps
  const chain = await call('POST', '/v1/chains', { name: 'no agent ' + Date.now(), entry_node: 'e', nodes: [{ node_id: 'e', kind: 'tool', name: 'echo', label: 'Echo' }], edges: [] });
  const { run_id: id } = await call('POST', `/v1/chains/${chain.id}/runs`, { input: {} });
  await waitRun(id, (r) => r.status === 'completed', 'completed');
  const p = await page('/runs/' + id);
  await p.waitForSelector('#runpage[data-ready="1"]');
  assert.equal(await p.locator('#agent-panel').isHidden(), true, 'no agent steps: no panel');

  await p.evaluate(someSteps);
  await p.screenshot({ path: join(SHOTS, 'agent-steps-page.png') });
  assert.deepEqual(await axePanel(p), [], 'no axe violations in the agent panel');
  // the dark theme's colours too
  const dark = await open(null, { colorScheme: 'dark' });
  await dark.goto(base + '/runs/' + id);
  await dark.waitForSelector('#runpage[data-ready="1"]');
  await dark.evaluate(someSteps);
  assert.deepEqual(await axePanel(dark), [], 'no axe violations in the agent panel, dark theme');
  await dark.locator('#agent-panel').screenshot({ path: join(SHOTS, 'agent-steps-dark.png') });
  await dark.done();
  const shown = await p.evaluate(() => {
    const a = window.__run.agents;
    const ev = (progress) => ({ phase: 'progress', node_id: 'e', progress: { agent: 'writer', ...progress } });
    const big = 'x'.repeat(64 * 1024);
    for (let i = 0; i < 5; i++) a.apply(ev({ step: 'text', turn: 2, text: big }));
    a.apply(ev({ step: 'tool_call', turn: 2, call_id: 'c3', tool: 'lookup', kind: 'tool', input: {} }));
    a.apply(ev({ step: 'tool_result', turn: 2, call_id: 'c3', tool: 'lookup', status: 'ok', output: { n: 1 }, duration_ms: 12 }));
    const q = (s) => [...document.querySelectorAll(s)];
    return {
      owned: !!window.__owned, imgs: q('#agent-streams img').length,
      text1: q('.agent-turn[data-turn="1"] .agent-text')[0].textContent,
      len2: q('.agent-turn[data-turn="2"] .agent-text')[0].textContent.length,
      statuses: q('#agent-streams .agent-status').map((s) => s.textContent),
      errors: q('#agent-streams .agent-error').map((s) => s.textContent),
      warnings: q('#agent-streams .agent-warning').map((s) => s.textContent),
      live: q('#agent-streams [aria-live]').map((s) => s.tagName),
      panelHidden: document.getElementById('agent-panel').hidden,
    };
  });
  assert.equal(shown.owned, false);
  assert.equal(shown.imgs, 0, 'model text is never HTML');
  assert.equal(shown.text1, '<img src=x onerror="window.__owned=1">');
  assert.equal(shown.text1.length + shown.len2, 256 * 1024 + ' … (truncated on this page)'.length, 'the node\'s text is cut at 256 KiB with a note');
  assert.deepEqual(shown.statuses, ['rejected by a person', 'refused', '40 calls refused', 'repair 1 of 2', 'ok']);
  assert.deepEqual(shown.errors, ['unknown tool "nope"', 'You asked for 40 tool calls in one turn', 'data.score: want integer']);
  assert.deepEqual(shown.warnings, ['⚠ 2 of 3 tool calls failed'], 'a warning is said in the panel, not only as a failed row');
  assert.deepEqual(shown.live, ['OL', 'OL'], 'only the steps lists are live');
  assert.equal(shown.panelHidden, false);
  await p.locator('#agent-panel').screenshot({ path: join(SHOTS, 'agent-steps.png') });
  await p.done();
});
