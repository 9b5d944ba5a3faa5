// Browser tests of the expression editor: completion of names,
// upstream nodes, the last run's fields and functions in an expression field
// (keyboard, ARIA combobox); the live preview under the field; "did you
// mean" for a typo; the bare-word comparison fixed in one click; and the
// preview's latency on a 500-node chain. Screenshots go to EXPRDIT_SHOTS
// (default: the OS temp dir).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, close, open, api, loadModule } from './lib.mjs';

const SHOTS = process.env.EXPRDIT_SHOTS || join(tmpdir(), 'exprdit-shots');
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

async function waitRun(id) {
  for (let i = 0; i < 800; i++) {
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

function routedDoc(name) {
  return {
    name,
    nodes: [
      { node_id: 'fetch', kind: 'tool', name: 'echo', input_map: { items: 'input.items', category: 'input.category' }, position: { x: 0, y: 0 } },
      { node_id: 'route', kind: 'branch', condition: 'length(output.items) > `1`', position: { x: 220, y: 0 } },
      { node_id: 'done', kind: 'tool', name: 'echo', position: { x: 440, y: -60 } },
      { node_id: 'other', kind: 'tool', name: 'echo', position: { x: 440, y: 60 } },
    ],
    edges: [{ source: 'fetch', target: 'route' }, { source: 'route', target: 'done', label: 'true' }, { source: 'route', target: 'other', label: 'false' }],
  };
}

const INPUT = { items: [{ sku: 'a1', qty: 2 }, { sku: 'b2', qty: 1 }], category: 'billing' };

// openNode opens the editor on a chain and selects a node from the node list.
async function openNode(chainId, node) {
  const page = await open('/chains/' + chainId);
  await page.waitForFunction(() => document.getElementById('editor').dataset.ready === '1');
  if (!(await page.$(`#node-table button.select-node[data-node-id="${node}"]`))) await page.click('#table-show-all'); // a long list shows its first rows
  await page.focus(`#node-table button.select-node[data-node-id="${node}"]`);
  await page.keyboard.press('Enter');
  await page.waitForSelector(`.props[data-target="node"][data-id="${node}"]`);
  return page;
}

const options = (page) => page.$$eval('.exprdit-list:not([hidden]) [role=option] .exprdit-label', (xs) => xs.map((x) => x.textContent));
const previewText = (page, sel) => page.$eval(sel, (inp) => { const b = inp.parentElement.querySelector('.exprdit-preview'); return b ? b.textContent : ''; });

async function clearAndType(page, sel, text) {
  await page.focus(sel);
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Delete');
  await page.keyboard.type(text, { delay: 15 });
}

test('completion: names, the last run\'s fields and functions, from the keyboard; the preview shows the value', async () => {
  const ch = await api('POST', '/v1/chains', routedDoc('exprdit-' + uniq()));
  assert.equal((await runChain(ch.id, INPUT)).status, 'completed');
  const page = await openNode(ch.id, 'route');
  const cond = 'input.expr[data-f="condition"]';

  await clearAndType(page, cond, 'out');
  await page.waitForFunction(() => document.querySelector('.exprdit-list:not([hidden]) [role=option]'));
  assert.equal((await options(page))[0], 'output', 'typing out offers output first');
  // ARIA combobox: expanded, controls the listbox, the active option named
  assert.equal(await page.$eval(cond, (x) => x.getAttribute('role')), 'combobox');
  assert.equal(await page.$eval(cond, (x) => x.getAttribute('aria-expanded')), 'true');
  const active = await page.$eval(cond, (x) => x.getAttribute('aria-activedescendant'));
  assert.equal(await page.$eval('#' + active, (x) => x.getAttribute('aria-selected')), 'true');
  await page.screenshot({ path: join(SHOTS, 'exprdit-names.png') });
  assert.deepEqual(await violations(page), [], 'the open completion list passes axe');
  await page.keyboard.press('Enter');
  assert.equal(await page.$eval(cond, (x) => x.value), 'output');
  assert.equal(await page.$eval(cond, (x) => x.getAttribute('aria-expanded')), 'false', 'Enter accepts and closes');

  // output. → the fields output had in the last run
  await page.keyboard.type('.');
  await page.waitForFunction(() => [...document.querySelectorAll('.exprdit-list:not([hidden]) [role=option] .exprdit-label')].some((x) => x.textContent === 'items'));
  assert.deepEqual(await options(page), ['category', 'items']);
  await page.keyboard.press('ArrowDown');
  await page.screenshot({ path: join(SHOTS, 'exprdit-fields.png') });
  await page.keyboard.press('Tab'); // Tab accepts too
  assert.equal(await page.$eval(cond, (x) => x.value), 'output.items');
  // the live preview: the value from the last run
  await page.waitForFunction((s) => (document.querySelector(s).parentElement.querySelector('.exprdit-preview') || {}).textContent?.includes('"a1"'), cond);
  const pv = await previewText(page, cond);
  assert.match(pv, /= array/);
  assert.match(pv, /last run/);
  await page.screenshot({ path: join(SHOTS, 'exprdit-preview.png') });
  assert.deepEqual(await violations(page), [], 'the preview passes axe');

  // functions with their signature; Escape closes without accepting
  await clearAndType(page, cond, 'len');
  await page.waitForFunction(() => document.querySelector('.exprdit-list:not([hidden]) [role=option]'));
  assert.equal((await options(page))[0], 'length()');
  assert.match(await page.$eval('.exprdit-list:not([hidden]) [role=option] .exprdit-detail', (x) => x.textContent), /length\(array\|string\|object\) → number/);
  await page.keyboard.press('Escape');
  assert.equal(await page.$eval(cond, (x) => x.getAttribute('aria-expanded')), 'false');
  assert.equal(await page.$eval(cond, (x) => x.value), 'len', 'Escape keeps what was typed');

  // upstream node ids, and what they produced
  await clearAndType(page, cond, 'fet');
  await page.waitForFunction(() => document.querySelector('.exprdit-list:not([hidden]) [role=option]'));
  assert.deepEqual(await options(page), ['fetch']);
  await page.keyboard.press('Enter');
  await page.keyboard.type('.output.cat');
  await page.waitForFunction(() => [...document.querySelectorAll('.exprdit-list:not([hidden]) [role=option] .exprdit-label')].some((x) => x.textContent === 'category'));
  await page.keyboard.press('Enter');
  assert.equal(await page.$eval(cond, (x) => x.value), 'fetch.output.category');
  await page.waitForFunction((s) => (document.querySelector(s).parentElement.querySelector('.exprdit-preview') || {}).textContent?.includes('"billing"'), cond);

  // the chain saved what was typed
  await page.waitForFunction(() => document.getElementById('save-state').dataset.state === 'saved');
  const saved = await api('GET', '/v1/chains/' + ch.id);
  assert.equal(saved.doc.nodes.find((n) => n.node_id === 'route').condition, 'fetch.output.category');
  await page.done();
});

test('a typo gets "did you mean", and the bare comparison is fixed in one click', async () => {
  const ch = await api('POST', '/v1/chains', routedDoc('exprdit-fix-' + uniq()));
  await runChain(ch.id, INPUT);
  const page = await openNode(ch.id, 'route');
  const cond = 'input.expr[data-f="condition"]';

  await clearAndType(page, cond, 'outptu.items');
  await page.keyboard.press('Escape');
  await page.waitForSelector('.exprdit-fix[data-alt="output"]');
  assert.match(await previewText(page, cond), /Did you mean output\?/);
  await page.screenshot({ path: join(SHOTS, 'exprdit-didyoumean.png') });
  await page.click('.exprdit-fix[data-alt="output"]');
  assert.equal(await page.$eval(cond, (x) => x.value), 'output.items');
  await page.waitForFunction((s) => (document.querySelector(s).parentElement.querySelector('.exprdit-preview') || {}).textContent?.includes('"a1"'), cond);

  // a typo in a function name: the preview's error says where and what was meant
  await clearAndType(page, cond, 'lenght(output.items)');
  await page.keyboard.press('Escape');
  await page.waitForFunction((s) => (document.querySelector(s).parentElement.querySelector('.exprdit-preview') || {}).textContent?.includes('did you mean length()?'), cond);
  assert.match(await previewText(page, cond), /column 1/);

  // the bare two-path comparison: reads billing as a path; one click quotes it
  await clearAndType(page, cond, 'output.category == billing');
  await page.keyboard.press('Escape');
  await page.waitForSelector('.exprdit-fix[data-expr]');
  assert.match(await previewText(page, cond), /= boolean false/, 'as written it compares with null');
  await page.screenshot({ path: join(SHOTS, 'exprdit-barefix.png') });
  await page.focus('.exprdit-fix[data-expr]');
  await page.keyboard.press('Enter'); // one keystroke (or click) applies it
  assert.equal(await page.$eval(cond, (x) => x.value), "output.category == 'billing'");
  await page.waitForFunction((s) => (document.querySelector(s).parentElement.querySelector('.exprdit-preview') || {}).textContent?.includes('= boolean true'), cond);
  await page.waitForFunction(() => document.getElementById('save-state').dataset.state === 'saved');
  const saved = await api('GET', '/v1/chains/' + ch.id);
  assert.equal(saved.doc.nodes.find((n) => n.node_id === 'route').condition, "output.category == 'billing'");
  await page.screenshot({ path: join(SHOTS, 'exprdit-fixed.png') });
  await page.done();
});

test('preview latency on a 500-node chain (reported: target p95 < 50 ms)', async () => {
  const n = 500;
  const nodes = [];
  const edges = [];
  for (let i = 0; i < n; i++) {
    const node = { node_id: 'n' + i, kind: 'tool', name: 'echo', position: { x: (i % 25) * 200, y: Math.floor(i / 25) * 120 } };
    node.input_map = i === 0 ? { v: 'input.v', tags: 'input.tags' } : { v: `n${i - 1}.output.v`, tags: `n${i - 1}.output.tags` };
    nodes.push(node);
    if (i > 0) edges.push({ source: 'n' + (i - 1), target: 'n' + i });
  }
  const ch = await api('POST', '/v1/chains', { name: 'exprdit-500-' + uniq(), nodes, edges });
  assert.equal((await runChain(ch.id, { v: 7, tags: ['a', 'b', 'c'] })).status, 'completed');
  // select the node on the canvas, as a click would (the node list shows its first 200 rows)
  const page = await open('/chains/' + ch.id);
  await page.waitForFunction(() => document.getElementById('editor').dataset.ready === '1');
  await loadModule(page, 'canvas');
  await page.evaluate(() => { const cy = window.__editor.cy; window.__modules.canvas.loadAll(cy); cy.$(':selected').unselect(); cy.getElementById('n499').select(); });
  await page.waitForSelector('.props[data-target="node"][data-id="n499"]');
  const field = '.props [data-f="input_map"] .kv-row input.expr';
  await page.focus(field);
  await page.keyboard.press('End');
  // type and erase a path, waiting for each preview, many times
  await page.evaluate(() => {
    window.__exprdit.latencies.length = 0; window.__exprdit.network.length = 0;
    // main-thread tasks over 50 ms while typing (the editor's own work per edit), for the report
    window.__longTasks = [];
    new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__longTasks.push(e.duration); }).observe({ type: 'longtask' });
  });
  const expr = '[0]';
  for (let round = 0; round < 20; round++) {
    for (const ch of expr) {
      const before = await page.evaluate(() => window.__exprdit.latencies.length);
      await page.keyboard.type(ch);
      await page.waitForFunction((b) => window.__exprdit.latencies.length > b, before);
    }
    for (let k = 0; k < expr.length; k++) {
      const before = await page.evaluate(() => window.__exprdit.latencies.length);
      await page.keyboard.press('Backspace');
      await page.waitForFunction((b) => window.__exprdit.latencies.length > b, before);
    }
  }
  assert.match(await previewText(page, field), /= array/);
  const lat = (await page.evaluate(() => window.__exprdit.latencies.slice())).sort((a, b) => a - b);
  const net = (await page.evaluate(() => window.__exprdit.network.slice())).sort((a, b) => a - b);
  const p = (q, xs = lat) => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))];
  console.log(`exprdit preview on ${n} nodes: ${lat.length} previews, request to rendered p50 ${p(0.5).toFixed(1)} ms, p95 ${p(0.95).toFixed(1)} ms, max ${lat[lat.length - 1].toFixed(1)} ms; request alone p50 ${p(0.5, net).toFixed(1)} ms, p95 ${p(0.95, net).toFixed(1)} ms`);
  const long = await page.evaluate(() => window.__longTasks.slice().sort((a, b) => b - a));
  console.log(`  main-thread tasks over 50 ms meanwhile: ${long.length}, longest ${long.slice(0, 5).map((x) => x.toFixed(0)).join(', ')} ms`);
  await page.screenshot({ path: join(SHOTS, 'exprdit-500.png') });
  // The target is on the preview's round trip as the browser times it
  // (resource timing). Request-to-rendered also waits for whatever the page's
  // main thread is doing: on 500 nodes, the canvas redrawing after each
  // autosave. The target is reported, not asserted (a timing on a shared
  // machine says how busy it was; the server's part is BenchmarkExprPreview500),
  // under a ceiling far above it.
  assert.ok(net.length > 0, 'the previews were timed by the browser');
  console.log(`FIGURE expression preview round trip, 500 nodes: p50 ${p(0.5, net).toFixed(1)} ms, p95 ${p(0.95, net).toFixed(1)} ms over ${net.length} previews; target p95 50 ms: ${p(0.95, net) < 50 ? 'met' : 'MISSED'}`);
  // a ceiling far above the target catches a preview that went wrong (one
  // request per keystroke queued behind another, a whole-document read)
  assert.ok(p(0.95, net) < Number(process.env.E2E_PREVIEW_MAX_MS || 500), 'preview round trip p95 within the ceiling, was ' + p(0.95, net).toFixed(1));
  await page.done();
});

test('the Validation panel\'s bare-word warning carries its fix: one click, one undo step', async () => {
  const doc = routedDoc('exprdit-issue-' + uniq());
  doc.nodes[1].condition = 'output.category == billing';
  const ch = await api('POST', '/v1/chains', doc);
  assert.ok(ch.issues.some((i) => i.rule === 'bare_word_comparison'));
  const page = await open('/chains/' + ch.id);
  await page.waitForFunction(() => document.getElementById('editor').dataset.ready === '1');
  await page.click('#tab-issues'); // the side panel's Validation tab
  const fix = await page.waitForSelector('#issues .exprdit-issue-fix');
  assert.equal(await fix.textContent(), "Fix: output.category == 'billing'");
  await page.screenshot({ path: join(SHOTS, 'exprdit-issue-fix.png') });
  await fix.focus();
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.getElementById('save-state').dataset.state === 'saved' && !document.querySelector('#issues .exprdit-issue-fix'));
  const saved = await api('GET', '/v1/chains/' + ch.id);
  assert.equal(saved.doc.nodes.find((n) => n.node_id === 'route').condition, "output.category == 'billing'");
  await page.waitForFunction(() => ![...document.querySelectorAll('#issues .rule')].some((r) => r.textContent === 'bare_word_comparison'));
  // one undo step puts it back
  await page.click('#btn-undo');
  await page.waitForFunction(() => window.__editor.doc.nodes.find((n) => n.node_id === 'route').condition === 'output.category == billing');
  await page.done();
});
