// Browser test of `$` as the root of the chain context in the
// expression editor: after `$.` the completion offers the context's names,
// after `$.output.` the fields the last run produced, and the live preview
// shows the value of a `$.` path. Screenshots go to DOLLAR_SHOTS (default:
// the OS temp dir).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, close, open, api } from './lib.mjs';

const SHOTS = process.env.DOLLAR_SHOTS || join(tmpdir(), 'dollar-shots');
mkdirSync(SHOTS, { recursive: true });

before(async () => { await launch(); });
after(async () => { await close(); });

const uniq = () => Date.now().toString(36) + Math.random().toString(36).slice(2, 6);

async function waitRun(id) {
  for (let i = 0; i < 800; i++) {
    const m = await api('GET', '/v1/runs/' + id);
    if (m.status !== 'running' && m.status !== 'queued' && !m.active) return m;
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error('run ' + id + ' did not stop');
}

const options = (page) => page.$$eval('.exprdit-list:not([hidden]) [role=option] .exprdit-label', (xs) => xs.map((x) => x.textContent));

test('$. completes from the root of the context and previews its value', async () => {
  const doc = {
    name: 'dollar-' + uniq(),
    nodes: [
      { node_id: 'fetch', kind: 'tool', name: 'echo', input_map: { items: '$.input.items', category: '$.input.category' }, position: { x: 0, y: 0 } },
      { node_id: 'route', kind: 'branch', condition: 'length($.output.items) > `1`', position: { x: 220, y: 0 } },
      { node_id: 'done', kind: 'tool', name: 'echo', position: { x: 440, y: -60 } },
      { node_id: 'other', kind: 'tool', name: 'echo', position: { x: 440, y: 60 } },
    ],
    edges: [{ source: 'fetch', target: 'route' }, { source: 'route', target: 'done', label: 'true' }, { source: 'route', target: 'other', label: 'false' }],
  };
  const ch = await api('POST', '/v1/chains', doc);
  assert.equal(ch.valid, true, JSON.stringify(ch.issues));
  const run = await waitRun((await api('POST', '/v1/chains/' + ch.id + '/runs', { input: { items: [{ sku: 'a1' }, { sku: 'b2' }], category: 'billing' } })).run_id);
  assert.equal(run.status, 'completed');
  const node = (id) => run.nodes.find((n) => n.node_id === id);
  assert.equal(node('route').matched, 'true', 'the $. condition took the true edge');
  assert.equal(node('done').status, 'done');
  assert.deepEqual(node('fetch').output.items, [{ sku: 'a1' }, { sku: 'b2' }], 'input_map read $.input');

  const page = await open('/chains/' + ch.id);
  await page.waitForFunction(() => document.getElementById('editor').dataset.ready === '1');
  await page.focus('#node-table button.select-node[data-node-id="route"]');
  await page.keyboard.press('Enter');
  await page.waitForSelector('.props[data-target="node"][data-id="route"]');
  const cond = 'input.expr[data-f="condition"]';
  await page.focus(cond);
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Delete');
  await page.keyboard.type('$.out', { delay: 15 });
  await page.waitForFunction(() => document.querySelector('.exprdit-list:not([hidden]) [role=option]'));
  assert.equal((await options(page))[0], 'output', '$.out offers output');
  await page.keyboard.press('Enter');
  assert.equal(await page.$eval(cond, (x) => x.value), '$.output');
  await page.keyboard.type('.');
  await page.waitForFunction(() => [...document.querySelectorAll('.exprdit-list:not([hidden]) [role=option] .exprdit-label')].some((x) => x.textContent === 'items'));
  assert.deepEqual(await options(page), ['category', 'items']);
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  assert.equal(await page.$eval(cond, (x) => x.value), '$.output.items');
  await page.waitForFunction((s) => (document.querySelector(s).parentElement.querySelector('.exprdit-preview') || {}).textContent?.includes('"a1"'), cond);
  await page.screenshot({ path: join(SHOTS, 'dollar-preview.png') });
  await page.done();
});
