// Browser test of comparing two runs: from a run's page, "Compare with…"
// (the previous run chosen, used with the keyboard) opens the comparison,
// whose canvas has the first divergence highlighted and centred.
// Screenshots go to RUNDIFF_SHOTS (default: the OS temp dir), never to docs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, close, open, api, ROOT } from './lib.mjs';

const SHOTS = process.env.RUNDIFF_SHOTS || join(tmpdir(), 'rundiff-shots');
mkdirSync(SHOTS, { recursive: true });

before(async () => { await launch(); });
after(async () => { await close(); });

// axe-core's WCAG A and AA rules, as e2e/a11y.test.mjs runs them on the other pages
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
async function axeViolations(page) {
  if (!(await page.evaluate(() => !!window.axe))) await page.evaluate(AXE + '\n;void 0');
  return page.evaluate(async () => {
    const r = await window.axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] } });
    return r.violations.map((v) => v.id + ': ' + v.nodes.map((n) => n.target.join(' ')).join(', '));
  });
}

const uniq = () => Date.now().toString(36) + Math.random().toString(36).slice(2, 6);

async function runAndWait(id, input) {
  const r = await api('POST', '/v1/chains/' + id + '/runs', { input });
  for (let i = 0; i < 200; i++) {
    const m = await api('GET', '/v1/runs/' + r.run_id);
    if (m.status !== 'running' && m.status !== 'queued' && !m.active) return m;
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error('run did not stop');
}

// divergenceOffset: how far the divergence node is from the canvas's centre,
// in screen pixels.
function divergenceOffset(page) {
  return page.evaluate(() => {
    const { cy, divergence } = window.__rundiff;
    const p = cy.getElementById(divergence).renderedPosition();
    return { dx: Math.abs(p.x - cy.width() / 2), dy: Math.abs(p.y - cy.height() / 2) };
  });
}

test('Compare with… the previous run opens the comparison with the divergence centred', async () => {
  // A branch chain of its own, so other tests' runs are not in its list.
  const doc = JSON.parse(readFileSync(join(ROOT, 'examples/branch.json'), 'utf8'));
  doc.name = 'branch-diff-' + uniq();
  const chain = await api('POST', '/v1/chains', doc);
  const a = await runAndWait(chain.id, { items: [1, 2] });
  const b = await runAndWait(chain.id, { items: [] });
  assert.equal(a.status, 'completed');
  assert.equal(b.status, 'completed');

  const page = await open('/runs/' + b.id);
  await page.waitForFunction(() => document.getElementById('runpage').dataset.ready === '1');
  // the control arrives after the page; the previous run is chosen
  await page.waitForSelector('#compare-select');
  assert.equal(await page.inputValue('#compare-select'), a.id, 'the previous run of the chain is the default');
  assert.match(await page.textContent('#compare-select option:checked'), /previous run/);
  await page.screenshot({ path: join(SHOTS, 'run-compare-with.png') });
  assert.deepEqual(await axeViolations(page), [], 'the run page with its Compare with… control');

  // keyboard only: focus the select, Tab to Compare, Enter
  await page.focus('#compare-select');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'btn-compare');
  await Promise.all([page.waitForURL('**/runs/' + a.id + '/diff/' + b.id), page.keyboard.press('Enter')]);
  await page.waitForFunction(() => document.getElementById('rundiff').dataset.ready === '1');

  // the verdict names the divergence; the canvas highlights and centres it
  assert.match(await page.textContent('#rundiff-verdict'), /First divergence:\s*Fetch items\s*fetch\s*\(output\)/);
  const st = await page.evaluate(() => {
    const { cy, divergence } = window.__rundiff;
    const n = cy.getElementById(divergence);
    return { divergence, highlighted: n.hasClass('rd-divergence'), changed: n.hasClass('diff-changed'),
      processSkipped: cy.getElementById('process').data('display').includes('done → skipped'),
      firedB: cy.getElementById('check->skip_log').hasClass('rd-route-b'), firedA: cy.getElementById('check->process').hasClass('rd-route-a') };
  });
  assert.deepEqual(st, { divergence: 'fetch', highlighted: true, changed: true, processSkipped: true, firedB: true, firedA: true });
  let off = await divergenceOffset(page);
  assert.ok(off.dx < 4 && off.dy < 4, 'the divergence is centred: ' + JSON.stringify(off));

  // the table: one row per differing node, the divergence marked, output paths listed
  const rows = await page.$$eval('#rundiff-table > tbody > tr', (trs) => trs.map((tr) => tr.dataset.nodeId));
  assert.deepEqual(rows, ['fetch', 'check', 'process', 'skip_log', 'report']);
  assert.match(await page.textContent('#rundiff-table tr.rd-divergence'), /first divergence/);
  assert.match(await page.textContent('#rundiff-table tr[data-node-id="fetch"] .rd-output'), /items\[0\]/);
  assert.match(await page.textContent('#rundiff-table tr[data-node-id="check"] .rd-route'), /Fired: A check->process; B check->skip_log/);
  await page.screenshot({ path: join(SHOTS, 'rundiff.png'), fullPage: true });
  assert.deepEqual(await axeViolations(page), [], 'no accessibility violation (light)');

  // a row's node, chosen with the keyboard, is centred on the canvas
  await page.focus('#rundiff-table tr[data-node-id="report"] button.select-node');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => {
    const cy = window.__rundiff.cy;
    const p = cy.getElementById('report').renderedPosition();
    return cy.getElementById('report').selected() && Math.abs(p.x - cy.width() / 2) < 4 && Math.abs(p.y - cy.height() / 2) < 4;
  });
  assert.equal(await page.getAttribute('#rundiff-table tr[data-node-id="report"]', 'aria-selected'), 'true');
  // and "Centre the first divergence" brings it back
  await page.click('#btn-divergence');
  await page.waitForFunction(() => {
    const { cy, divergence } = window.__rundiff;
    const p = cy.getElementById(divergence).renderedPosition();
    return Math.abs(p.x - cy.width() / 2) < 4 && Math.abs(p.y - cy.height() / 2) < 4;
  });
  await page.done();

  // the dark theme draws the same page
  const dark = await open('/runs/' + a.id + '/diff/' + b.id, { colorScheme: 'dark' });
  await dark.waitForFunction(() => document.getElementById('rundiff').dataset.ready === '1');
  off = await divergenceOffset(dark);
  assert.ok(off.dx < 4 && off.dy < 4, 'centred in the dark theme too: ' + JSON.stringify(off));
  await dark.screenshot({ path: join(SHOTS, 'rundiff-dark.png'), fullPage: true });
  assert.deepEqual(await axeViolations(dark), [], 'no accessibility violation (dark)');
  await dark.done();
});

test('the comparison of a run with itself says nothing differs', async () => {
  const doc = JSON.parse(readFileSync(join(ROOT, 'examples/branch.json'), 'utf8'));
  doc.name = 'branch-same-' + uniq();
  const chain = await api('POST', '/v1/chains', doc);
  const a = await runAndWait(chain.id, { items: [1] });
  const page = await open('/runs/' + a.id);
  await page.waitForSelector('#compare-none');
  assert.match(await page.textContent('#compare-none'), /No other run/);
  await page.goto(process.env.STUDIO_URL + '/runs/' + a.id + '/diff/' + a.id);
  await page.waitForFunction(() => document.getElementById('rundiff').dataset.ready === '1');
  assert.match(await page.textContent('#rundiff-verdict'), /same path and produced the same outputs/);
  assert.equal(await page.isDisabled('#btn-divergence'), true);
  await page.done();
});

test('runs of two versions: the nodes and edges only A\'s chain had are drawn, marked removed', async () => {
  const name = 'versions-diff-' + uniq();
  const node = (id, x) => ({ node_id: id, kind: 'tool', name: 'echo', position: { x, y: 0 } });
  const chain = await api('POST', '/v1/chains', { name, nodes: [node('a', 0), node('b', 220), node('c', 440)], edges: [{ source: 'a', target: 'b' }, { source: 'b', target: 'c' }] });
  const a = await runAndWait(chain.id, {});
  await api('PUT', '/v1/chains/' + chain.id + '?version=1', { name, nodes: [node('a', 0), node('b', 220), node('d', 440)], edges: [{ source: 'a', target: 'b' }, { source: 'b', target: 'd' }] });
  await api('POST', '/v1/chains/' + chain.id + '/publish', {}); // a run by id runs the published version
  const b = await runAndWait(chain.id, {});
  assert.equal(b.chain_version, 2);
  const page = await open('/runs/' + a.id + '/diff/' + b.id);
  await page.waitForFunction(() => document.getElementById('rundiff').dataset.ready === '1');
  const st = await page.evaluate(() => {
    const cy = window.__rundiff.cy;
    const cls = (id) => ['diff-removed', 'diff-added', 'faded', 'rd-fired', 'rd-route-a', 'rd-route-b'].filter((c) => cy.getElementById(id).hasClass(c));
    return { nodes: cy.nodes().map((n) => n.id()).sort(), c: cls('c'), d: cls('d'), bc: cls('b->c'), bd: cls('b->d'), ab: cls('a->b') };
  });
  assert.deepEqual(st, { nodes: ['a', 'b', 'c', 'd'], c: ['diff-removed'], d: ['diff-added'], bc: ['rd-route-a'], bd: ['rd-route-b'], ab: ['rd-fired'] });
  await page.done();
});
