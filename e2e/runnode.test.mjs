// Browser tests of running one node with pinned data: "Run this
// node" in the editor with an earlier run's data, the node run's page and
// the run lists, and "Re-run from here" on the current version of a chain.
// Screenshots go to RUNNODE_SHOTS (default: the OS temp dir).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, close, open, api, BASE } from './lib.mjs';

const SHOTS = process.env.RUNNODE_SHOTS || join(tmpdir(), 'runnode-shots');
mkdirSync(SHOTS, { recursive: true });

before(async () => { await launch(); });
after(async () => { await close(); });

// axe (WCAG A/AA) on the page as it is, as e2e/a11y.test.mjs runs it
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
async function violations(page) {
  if (!(await page.evaluate(() => !!window.axe))) await page.evaluate(AXE + '\n;void 0');
  return page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] }, resultTypes: ['violations'] });
    return r.violations.flatMap((v) => v.nodes.map((n) => v.id + ' at ' + n.target.join(' ')));
  });
}

const uniq = () => Date.now().toString(36) + Math.random().toString(36).slice(2, 6);

function chainDoc(name, bMap) {
  return {
    name,
    nodes: [
      { node_id: 'a', kind: 'tool', name: 'echo', label: 'Fetch', input_map: { x: 'input.x' }, position: { x: 0, y: 0 } },
      { node_id: 'b', kind: 'tool', name: 'echo', label: 'Shape', input_map: bMap || { y: 'a.output.x' }, position: { x: 220, y: 0 } },
      { node_id: 'c', kind: 'tool', name: 'echo', label: 'Send', position: { x: 440, y: 0 } },
    ],
    edges: [{ source: 'a', target: 'b' }, { source: 'b', target: 'c' }],
  };
}

async function waitRun(id) {
  for (let i = 0; i < 400; i++) {
    const m = await api('GET', '/v1/runs/' + id);
    if (m.status !== 'running' && m.status !== 'queued' && !m.active) return m;
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error('run ' + id + ' did not stop');
}

async function runChain(id, input) {
  const r = await api('POST', '/v1/chains/' + id + '/runs', { input });
  return waitRun(r.run_id);
}

test('Run this node: the node runs alone with a previous run\'s data, its output in the panel, marked pinned in the history', async () => {
  const name = 'runnode-' + uniq();
  const ch = await api('POST', '/v1/chains', chainDoc(name));
  const first = await runChain(ch.id, { x: 41 });
  assert.equal(first.status, 'completed');

  const page = await open('/chains/' + ch.id);
  await page.waitForFunction(() => document.getElementById('editor').dataset.ready === '1');
  // keyboard: select b from the node list, then the button in its panel
  await page.focus('#node-table button.select-node[data-node-id="b"]');
  await page.keyboard.press('Enter');
  await page.waitForSelector('.props[data-target="node"][data-id="b"] #btn-run-node');
  await page.focus('#btn-run-node');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#runnode-dialog[open] #runnode-form');
  // the default source is the chain's latest run that has a's output
  assert.equal(await page.$eval('input[name=from_run]:checked', (x) => x.value), first.id);
  assert.equal(await page.evaluate(() => document.activeElement.name), 'from_run', 'focus starts on the chosen run');
  await page.screenshot({ path: join(SHOTS, 'runnode-dialog.png') });
  assert.deepEqual(await violations(page), [], 'the dialog passes axe');
  await page.keyboard.press('Tab');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'runnode-submit');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#runnode-output', { timeout: 10000 });
  assert.equal(JSON.parse(await page.textContent('#runnode-output')).y, 41, 'b\'s output from a\'s pinned output');
  assert.match(await page.textContent('#runnode-status'), /completed/);
  assert.ok(!(await page.$('#runnode-dialog[open]')), 'the dialog closed');
  await page.screenshot({ path: join(SHOTS, 'runnode-result.png') });
  assert.deepEqual(await violations(page), [], 'the panel with the result passes axe');
  const href = await page.getAttribute('#runnode-link', 'href');
  const nodeRunId = href.split('/').pop();
  const nr = await api('GET', '/v1/runs/' + nodeRunId);
  assert.equal(nr.kind, 'node');
  assert.equal(nr.parent_run_id, first.id);
  assert.equal(nr.nodes_run, 1, 'only b ran');
  // the result stays with the node across selections
  await page.focus('#node-table button.select-node[data-node-id="c"]');
  await page.keyboard.press('Enter');
  await page.waitForSelector('.props[data-target="node"][data-id="c"] #btn-run-node');
  assert.ok(!(await page.$('#runnode-output')), 'c shows no result of b');
  await page.focus('#node-table button.select-node[data-node-id="b"]');
  await page.keyboard.press('Enter');
  await page.waitForSelector('.props[data-target="node"][data-id="b"] #runnode-output');
  await page.done();

  // The node run's page says what ran and where the data came from.
  const rp = await open(href);
  await rp.waitForFunction(() => document.getElementById('runpage').dataset.ready === '1');
  const banner = await rp.textContent('#runnode-banner');
  assert.match(banner, /One node ran alone: Shape b/);
  assert.match(banner, /pinned from run/);
  assert.equal(await rp.getAttribute('#runnode-source-link', 'href'), '/runs/' + first.id);
  await rp.waitForFunction(() => {
    const row = document.querySelector('#node-table tr[data-node-id="a"] .note-cell');
    return row && row.textContent.includes('pinned');
  });
  assert.equal((await rp.textContent('#node-table tr[data-node-id="c"] .phase-cell')).trim(), '—', 'c did not run');
  await rp.screenshot({ path: join(SHOTS, 'runnode-runpage.png') });
  assert.deepEqual(await violations(rp), [], 'the node run\'s page passes axe');
  await rp.done();

  // The run history marks it.
  const list = await open('/runs?chain=' + ch.id);
  assert.match(await list.textContent(`tr[data-run-id="${nodeRunId}"]`), /node run \(pinned\)/);
  await list.done();
  const runs = await open('/chains/' + ch.id + '/runs');
  assert.match(await runs.textContent(`tr[data-run-id="${nodeRunId}"]`), /pinned/);
  await runs.screenshot({ path: join(SHOTS, 'runnode-history.png') });
  await runs.done();
});

test('Run this node refuses a node no recent run can feed, saying why', async () => {
  const name = 'runnode-none-' + uniq();
  const ch = await api('POST', '/v1/chains', chainDoc(name));
  const page = await open('/chains/' + ch.id);
  await page.waitForFunction(() => document.getElementById('editor').dataset.ready === '1');
  await page.click('#node-table button.select-node[data-node-id="b"]');
  await page.click('#btn-run-node');
  await page.waitForSelector('#runnode-dialog[open] #runnode-none');
  assert.ok(await page.$eval('#runnode-submit', (b) => b.disabled), 'nothing to run with');
  // a root needs no earlier run
  await page.keyboard.press('Escape');
  await page.click('#node-table button.select-node[data-node-id="a"]');
  await page.waitForSelector('.props[data-target="node"][data-id="a"] #btn-run-node');
  await page.click('#btn-run-node');
  await page.waitForSelector('#runnode-dialog[open] input[name=from_run][value=""]:checked');
  await page.click('#runnode-submit');
  await page.waitForSelector('#runnode-output');
  await page.done();
});

test('Re-run from here on the current version: unchanged nodes reused, changed ones ran again', async () => {
  const name = 'rerunver-' + uniq();
  const ch = await api('POST', '/v1/chains', chainDoc(name));
  const first = await runChain(ch.id, { x: 2 });
  // v2 changes b only: a stays reusable, b and c run again
  const res = await fetch(BASE + '/v1/chains/' + ch.id, {
    method: 'PUT', headers: { 'Content-Type': 'application/json', 'If-Match': '"v1"' },
    body: JSON.stringify(chainDoc(name, { z: 'a.output.x' })),
  });
  assert.equal(res.status, 200, await res.text());

  const page = await open('/runs/' + first.id);
  await page.waitForFunction(() => document.getElementById('runpage').dataset.ready === '1');
  await page.click('#node-table button.select-node[data-node-id="c"]');
  await page.waitForSelector('#drawer .drawer[data-node-id="c"] #btn-rerun');
  await page.click('#btn-rerun');
  await page.waitForSelector('#rerun-dialog[open] #rerun-version');
  assert.match(await page.textContent('#rerun-version'), /This run's version \(v1\)/);
  assert.match(await page.textContent('#rerun-version'), /Current version \(v2\)/);
  assert.ok(await page.$eval('#rerun-version-run', (x) => x.checked), 'the run\'s own version is the default');
  // keyboard: arrow to the current version
  await page.focus('#rerun-version-run');
  await page.keyboard.press('ArrowDown');
  assert.ok(await page.$eval('#rerun-version-current', (x) => x.checked));
  await page.screenshot({ path: join(SHOTS, 'rerun-version-dialog.png') });
  assert.deepEqual(await violations(page), [], 'the re-run dialog with its version choice passes axe');
  await Promise.all([page.waitForURL((u) => u.pathname.startsWith('/runs/') && !u.pathname.endsWith(first.id)), page.click('#rerun-submit')]);
  await page.waitForFunction(() => document.getElementById('runpage').dataset.ready === '1');
  await page.waitForFunction(() => ['completed', 'failed'].includes(document.getElementById('runpage').dataset.status), null, { timeout: 10000 });
  const note = (id) => page.textContent(`#node-table tr[data-node-id="${id}"] .note-cell`);
  await page.waitForFunction(() => (document.querySelector('#node-table tr[data-node-id="c"] .note-cell') || {}).textContent);
  assert.match(await note('a'), /reused from the earlier run/);
  assert.match(await note('b'), /ran again/);
  assert.match(await note('c'), /ran again/);
  assert.match(await page.textContent('h1.chain-title'), /v2/);
  await page.screenshot({ path: join(SHOTS, 'rerun-version-run.png') });
  await page.done();
});
