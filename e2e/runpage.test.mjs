// Browser tests of the run page, the runs list and the run dialog: what a
// person sees after running, failing, pausing and re-running a chain.
// Screenshots go to RUNPAGE_SHOTS (default: the OS temp dir), never to docs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, close, open, api } from './lib.mjs';

const SHOTS = process.env.RUNPAGE_SHOTS || join(tmpdir(), 'runpage-shots');
mkdirSync(SHOTS, { recursive: true });

before(async () => { await launch(); });
after(async () => { await close(); });

async function chainId(name) {
  const list = await api('GET', '/v1/chains?q=' + encodeURIComponent(name));
  const c = (list.chains || []).find((x) => x.name === name);
  assert.ok(c, 'chain ' + name + ' exists');
  return c.id;
}

async function runAndWait(id, input) {
  const r = await api('POST', '/v1/chains/' + id + '/runs', { input: input || {} });
  for (let i = 0; i < 200; i++) {
    const m = await api('GET', '/v1/runs/' + r.run_id);
    if (m.status !== 'running' && !m.active) return m;
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error('run did not stop');
}

async function openRun(id) {
  const page = await open('/runs/' + id);
  await page.waitForFunction(() => document.getElementById('runpage').dataset.ready === '1');
  return page;
}

async function selectFromList(page, id) {
  await page.click(`#node-table button.select-node[data-node-id="${id}"]`);
  await page.waitForSelector(`#drawer .drawer[data-node-id="${id}"]`);
}

const uniq = () => Date.now().toString(36) + Math.random().toString(36).slice(2, 6);

test('a failed branch shows its error; labels beside ids; durations on the canvas; final output open', async () => {
  const run = await runAndWait(await chainId('parallel'));
  const page = await openRun(run.id);
  await selectFromList(page, 'broken');
  const drawer = await page.textContent('#drawer');
  assert.ok(!drawer.includes('Not reached'), 'the failed node is not "not reached": ' + drawer);
  assert.match(await page.textContent('#drawer-error'), /this source is down/);
  assert.match(await page.textContent('#drawer .phase'), /error/);
  // the timeline names nodes by label, with the id beside it
  const fan = page.locator('#timeline .ev-node[data-node-id="fan"]').first();
  assert.equal(await fan.locator('.node-label').textContent(), 'Ask three');
  assert.equal(await fan.locator('.node-id').textContent(), 'fan');
  // the drawer title too
  await selectFromList(page, 'merge');
  assert.equal(await page.textContent('#drawer h2 .node-label'), 'Merge');
  // each finished node shows its duration on the canvas
  const display = await page.evaluate(() => window.__run.cy.getElementById('merge').data('display'));
  assert.match(display, /\d+(\.\d)? (ms|s)$/, 'duration on the canvas: ' + display);
  assert.equal(await page.evaluate(() => window.__run.fmtDuration(123000)), '2 min 3 s');
  // the final output is open by default
  assert.ok(await page.isVisible('details.final[open] pre'), 'final output is open');
  await selectFromList(page, 'broken');
  await page.screenshot({ path: join(SHOTS, 'run-failed-node.png') });
  await page.done();
});

test('a paused run says where it waits by label and id', async () => {
  const id = await chainId('approval');
  const r = await api('POST', '/v1/chains/' + id + '/runs', { input: { amount: 10, customer: 'bob' } });
  let m;
  for (let i = 0; i < 200; i++) {
    m = await api('GET', '/v1/runs/' + r.run_id);
    if (m.status === 'paused') break;
    await new Promise((res) => setTimeout(res, 25));
  }
  assert.equal(m.status, 'paused');
  const page = await openRun(r.run_id);
  const h = await page.textContent('#approval-form h2');
  const node = m.pending[0].node_id;
  assert.ok(h.includes(node), 'names the node id: ' + h);
  const doc = await api('GET', '/v1/chains/' + id);
  const lbl = (doc.doc || doc).nodes.find((n) => n.node_id === node).label;
  if (lbl) assert.ok(h.includes(lbl), 'names the node label: ' + h);
  await page.screenshot({ path: join(SHOTS, 'run-paused.png') });
  await page.done();
});

test('re-run from here: asks, checks JSON inline, and the new run marks reused and re-ran nodes', async () => {
  const name = 'rerun-' + uniq();
  const created = await api('POST', '/v1/chains', {
    name,
    nodes: [
      { node_id: 'a', kind: 'tool', name: 'echo', label: 'Load', input: { v: 1 }, set_state: { x: 'output.v' }, position: { x: 0, y: 0 } },
      { node_id: 'b', kind: 'tool', name: 'echo', label: 'Use', input_map: { x: 'state.x' }, position: { x: 220, y: 0 } },
      { node_id: 'c', kind: 'tool', name: 'echo', position: { x: 440, y: 0 } },
    ],
    edges: [{ source: 'a', target: 'b' }, { source: 'b', target: 'c' }],
  });
  const run = await runAndWait(created.id);
  const page = await openRun(run.id);
  await selectFromList(page, 'b');
  await page.click('#btn-rerun');
  await page.waitForSelector('#rerun-dialog[open]');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'rerun-input', 'focus starts in the input');
  // Escape closes without re-running
  await page.keyboard.press('Escape');
  assert.equal(await page.$('#rerun-dialog[open]'), null);
  await page.click('#btn-rerun');
  await page.waitForSelector('#rerun-dialog[open]');
  // Tab stays inside the dialog
  for (let i = 0; i < 6; i++) await page.keyboard.press('Tab');
  assert.ok(await page.evaluate(() => !!document.activeElement.closest('#rerun-dialog')), 'focus stays in the dialog');
  // a bad state patch is shown before anything is sent
  await page.fill('#rerun-state', '{"x": ');
  assert.match(await page.textContent('#rerun-state-err'), /Not JSON/);
  assert.ok(await page.isDisabled('#rerun-submit'));
  await page.screenshot({ path: join(SHOTS, 'rerun-dialog.png') });
  await page.fill('#rerun-state', '[1]');
  assert.match(await page.textContent('#rerun-state-err'), /JSON object/);
  await page.fill('#rerun-state', '{"x": 42}');
  assert.equal(await page.textContent('#rerun-state-err'), '');
  await Promise.all([page.waitForURL((u) => u.pathname.startsWith('/runs/') && !u.pathname.endsWith(run.id)), page.click('#rerun-submit')]);
  await page.waitForFunction(() => document.getElementById('runpage').dataset.ready === '1');
  await page.waitForFunction(() => window.__run.status === 'completed', null, { timeout: 10000 });
  // the canvas marks what was reused and what ran again
  await page.waitForFunction(() => window.__run.cy.getElementById('a').hasClass('reused'));
  const disp = await page.evaluate(() => ['a', 'b', 'c'].map((id) => window.__run.cy.getElementById(id).data('display')));
  assert.match(disp[0], /reused/);
  assert.match(disp[1], /ran again/);
  assert.ok(!(await page.evaluate(() => window.__run.cy.getElementById('b').hasClass('reused'))));
  // the timeline too
  const reusedEv = await page.$$eval('#timeline .ev.reused', (xs) => xs.map((x) => x.dataset.nodeId));
  assert.deepEqual([...new Set(reusedEv)], ['a']);
  assert.match(await page.textContent('#timeline .ev.reused.ph-done .detail'), /reused/);
  assert.equal(await page.textContent('#timeline .ev.ph-start[data-node-id="b"] .detail'), 'ran again');
  // the patched state reached b
  await selectFromList(page, 'b');
  assert.match(await page.textContent('#drawer'), /"x": 42/);
  await selectFromList(page, 'a');
  assert.ok(await page.isVisible('#drawer-reused'));
  await page.screenshot({ path: join(SHOTS, 'run-rerun-reused.png') });
  await page.done();
});

test('runs list: across chains, filter by status and chain without reloading, older and newer pages', async () => {
  await runAndWait(await chainId('parallel'));
  await runAndWait(await chainId('linear'), { name: 'Ada', languages: ['en'] });
  const page = await open('/');
  await Promise.all([page.waitForURL(/\/runs$/), page.click('header nav a[href="/runs"]')]);
  assert.equal(await page.getAttribute('header nav a[href="/runs"]', 'aria-current'), 'page');
  const rows = await page.$$('#all-runs-table tbody tr[data-run-id]');
  assert.ok(rows.length >= 3, 'runs of several chains: ' + rows.length);
  const chains = await page.$$eval('#all-runs-table tbody tr[data-run-id] td:first-child', (tds) => new Set(tds.map((t) => t.textContent.trim())).size);
  assert.ok(chains >= 2, 'several chains listed');
  await page.selectOption('#filter-status', 'paused');
  await page.waitForURL(/status=paused/);
  await page.waitForFunction(() => [...document.querySelectorAll('#all-runs-table tbody tr[data-run-id]')].every((r) => r.dataset.status === 'paused'));
  const parallel = await chainId('parallel');
  await page.selectOption('#filter-status', '');
  await page.waitForURL((u) => !u.search.includes('status=paused'));
  await page.selectOption('#filter-chain', parallel);
  await page.waitForURL(new RegExp('chain=' + parallel));
  await page.waitForFunction(() => {
    const rs = [...document.querySelectorAll('#all-runs-table tbody tr[data-run-id]')];
    return rs.length > 0 && rs.every((r) => r.querySelector('td').textContent.trim() === 'parallel');
  });
  await page.screenshot({ path: join(SHOTS, 'runs-filtered.png') });
  // pages of two: older, then newer brings back the first page
  await page.goto(page.url().replace(/\?.*/, '') + '?limit=2');
  const first = await page.$$eval('#all-runs-table tbody tr[data-run-id]', (rs) => rs.map((r) => r.dataset.runId));
  assert.equal(first.length, 2);
  assert.equal(await page.$('#runs-newer'), null, 'no newer page on the first');
  await page.click('#runs-older');
  await page.waitForURL(/before=.*limit=2|limit=2.*before=/);
  const second = await page.$$eval('#all-runs-table tbody tr[data-run-id]', (rs) => rs.map((r) => r.dataset.runId));
  assert.ok(second.length > 0 && !second.includes(first[0]));
  await page.click('#runs-newer');
  await page.waitForURL(/after=/);
  const back = await page.$$eval('#all-runs-table tbody tr[data-run-id]', (rs) => rs.map((r) => r.dataset.runId));
  assert.deepEqual(back, first);
  await page.done();
});

test('run dialog: sample input first, then the last input this browser ran the chain with', async () => {
  const name = 'sample-' + uniq();
  const created = await api('POST', '/v1/chains', {
    name, sample_input: { city: 'Paris' },
    nodes: [{ node_id: 'a', kind: 'tool', name: 'echo', position: { x: 0, y: 0 } }], edges: [],
  });
  const page = await open('/chains/' + created.id);
  await page.waitForFunction(() => window.__editor && window.__editor.cy);
  await page.click('#btn-run');
  await page.waitForSelector('#run-dialog[open]');
  assert.deepEqual(JSON.parse(await page.inputValue('#run-input')), { city: 'Paris' });
  assert.match(await page.textContent('#run-input-source'), /sample input/);
  await page.fill('#run-input', '{"city": "Lyon"}');
  await Promise.all([page.waitForURL(/\/runs\//), page.click('#run-submit')]);
  await page.goto(page.url().replace(/\/runs\/.*/, '/chains/' + created.id));
  await page.waitForFunction(() => window.__editor && window.__editor.cy);
  await page.click('#btn-run');
  await page.waitForSelector('#run-dialog[open]');
  assert.deepEqual(JSON.parse(await page.inputValue('#run-input')), { city: 'Lyon' });
  assert.match(await page.textContent('#run-input-source'), /last run/);
  await page.keyboard.press('Escape');
  await page.done();
});

test('properties panel says what the selected node will receive', async () => {
  const name = 'recv-' + uniq();
  const created = await api('POST', '/v1/chains', {
    name,
    nodes: [
      { node_id: 'shape', kind: 'tool', name: 'echo', position: { x: 0, y: 0 } },
      { node_id: 'send', kind: 'tool', name: 'echo', input: { to: 'x' }, position: { x: 240, y: 0 } },
    ],
    edges: [{ source: 'shape', target: 'send' }],
  });
  const page = await open('/chains/' + created.id);
  await page.waitForFunction(() => window.__editor && window.__editor.cy);
  await page.click('#node-table button.select-node[data-node-id="send"]');
  await page.waitForSelector('#receives');
  await page.$eval('#receives', (e) => e.scrollIntoView());
  const text = await page.textContent('#receives');
  assert.match(text, /static input \{"to":"x"\}/);
  assert.match(text, /the output of `shape` is not passed because a static input is set/);
  await page.screenshot({ path: join(SHOTS, 'props-receives.png') });
  // removing the static input: the node now receives the upstream output
  await page.click('#props fieldset[data-f="input"] .sf-remove'); // the input form's row (forms.js)
  await page.waitForFunction(() => /Receives:\s*the output of `shape` as is/.test(document.getElementById('receives').textContent));
  await page.done();
});

test("an agent's run page is titled with the agent and links back to it", async (t) => {
  const agents = await api('GET', '/v1/agents');
  if (!agents.agents.some((a) => a.name === 'sales-qualifier')) { t.skip('needs serve --agents examples/agents'); return; }
  const page = await open('/agents/sales-qualifier');
  await page.fill('textarea[name=query]', 'Ana at ACME');
  await Promise.all([page.waitForURL(/\/runs\/[0-9a-f-]+$/), page.click('form.agent-run button[type=submit]')]);
  await page.waitForFunction(() => document.getElementById('runpage').dataset.ready === '1');
  assert.equal(await page.title(), 'Run of agent sales-qualifier · Chain Studio');
  assert.ok(!(await page.textContent('h1')).includes('__chain__'));
  await Promise.all([page.waitForURL(/\/agents\/sales-qualifier$/), page.click('#run-agent-link')]);
  // the runs list names the agent too
  await page.goto(page.url().replace(/\/agents\/.*/, '/runs'));
  assert.ok(await page.isVisible('#all-runs-table a[href="/agents/sales-qualifier"]'));
  assert.ok(!(await page.textContent('#all-runs-table')).includes('__chain__'));
  await page.done();
});

test('the timeline built live is the one a reload renders; progress notes arrive with it', async () => {
  const chain = await api('POST', '/v1/chains', {
    name: 'live-timeline-' + uniq(),
    max_concurrency: 2,
    nodes: [
      { node_id: 'a', kind: 'tool', name: 'echo', label: 'Start', input: { v: 1 }, position: { x: 0, y: 0 } },
      { node_id: 'each', kind: 'map', label: 'Each item', items_path: 'input.items', map_node: 'body', position: { x: 220, y: 0 } },
      { node_id: 'body', kind: 'tool', name: 'delay', label: 'Slow <body>', input: { ms: 150 }, position: { x: 220, y: 160 } },
      { node_id: 'c', kind: 'tool', name: 'echo', position: { x: 440, y: 0 } },
    ],
    edges: [{ source: 'a', target: 'each' }, { source: 'each', target: 'c' }],
  });
  const started = await api('POST', '/v1/chains/' + chain.id + '/runs', { input: { items: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] } });
  const page = await open('/runs/' + started.run_id);
  await page.waitForSelector('#runpage[data-ready="1"]');
  // the entries arrive while the run executes, and the map's note follows them
  await page.waitForFunction(() => document.querySelectorAll('#timeline .ev.ph-progress').length >= 2, null, { timeout: 10000 });
  await page.waitForSelector('#runpage[data-status="completed"]', { timeout: 20000 });
  const note = '#node-table tr[data-node-id="each"] .note-cell';
  await page.waitForFunction((sel) => document.querySelector(sel).textContent.startsWith('10/10'), note, { timeout: 10000 });
  // the entries of every event the stream delivered are there
  await page.waitForFunction(() => {
    const last = document.querySelector('#timeline .ev:last-child'), ph = window.__run.phases;
    return last && ph.length > 0 && Number(last.dataset.seq) === ph[ph.length - 1][0];
  }, null, { timeout: 10000 });
  const live = await page.$$eval('#timeline .ev', (l) => l.map((x) => x.outerHTML));
  const seqs = live.map((h) => Number(/data-seq="(\d+)"/.exec(h)[1]));
  assert.deepEqual(seqs, [...seqs].sort((x, y) => x - y), 'in seq order');
  assert.equal(new Set(seqs).size, seqs.length, 'no duplicates');
  const liveNote = await page.textContent(note);
  await page.reload();
  await page.waitForSelector('#runpage[data-ready="1"]');
  assert.deepEqual(await page.$$eval('#timeline .ev', (l) => l.map((x) => x.outerHTML)), live, 'the same markup, entry for entry');
  await page.waitForFunction((sel) => document.querySelector(sel).textContent.startsWith('10/10'), note, { timeout: 10000 });
  assert.equal((await page.textContent(note)).split(' · ')[0], liveNote.split(' · ')[0]);
  await page.screenshot({ path: join(SHOTS, 'run-live-reloaded.png') });
  await page.done();
});
