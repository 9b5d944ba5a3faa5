// Browser test: the "+" beside the selected node and the menu of kinds it
// opens (by mouse and by keyboard, A on the canvas), and an edge dragged
// from a node's handle onto empty canvas: each adds a node after that node,
// connected to it, in one undo step.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { launch, close, open, api, SHOTS, waitSaved } from './lib.mjs';

before(async () => { await launch(); });
after(async () => { await close(); });

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
async function axeViolations(page) {
  if (!(await page.evaluate(() => !!window.axe))) await page.evaluate(AXE + '\n;void 0');
  return page.evaluate(async () => {
    const r = await window.axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] } });
    return r.violations.map((v) => v.id + ': ' + v.nodes.map((n) => n.target.join(' ')).join(', '));
  });
}

const uniq = () => Date.now().toString(36) + Math.random().toString(36).slice(2, 6);

async function chainPage() {
  const chain = await api('POST', '/v1/chains', {
    name: 'plus ' + uniq(),
    nodes: [
      { node_id: 'start', kind: 'tool', name: 'echo', position: { x: 0, y: 0 } },
      { node_id: 'route', kind: 'condition', cases: [{ handle: 'big', when: 'output.n > `10`' }, { handle: 'small', when: 'output.n <= `10`' }], position: { x: 0, y: 220 } },
      { node_id: 'big_path', kind: 'tool', name: 'echo', position: { x: 260, y: 220 } },
    ],
    edges: [{ source: 'start', target: 'route' }, { source: 'route', target: 'big_path', label: 'big' }],
  });
  const page = await open(`/chains/${chain.id}`);
  await page.waitForSelector('#editor[data-ready="1"]');
  return { chain, page };
}

const doc = (page) => page.evaluate(() => window.__studio.doc);
const newest = (d) => d.nodes[d.nodes.length - 1];

test('the "+" on a selected node adds the picked kind after it, connected', async () => {
  const { chain, page } = await chainPage();
  await page.click('#node-table .select-node[data-node-id="start"]');
  await page.waitForSelector('#node-plus:not([hidden])');
  assert.equal(await page.getAttribute('#node-plus', 'aria-label'), 'Add a node after start');
  await page.screenshot({ path: join(SHOTS, 'plus-button.png') });
  await page.click('#node-plus');
  await page.waitForSelector('#kind-menu:not([hidden])');
  assert.deepEqual(await axeViolations(page), [], 'axe with the menu open');
  await page.screenshot({ path: join(SHOTS, 'plus-menu.png') });
  await page.click('#kind-menu .kind-item[data-kind="tool"]');
  await waitSaved(page);
  const d = await doc(page);
  const added = newest(d);
  assert.equal(added.kind, 'tool');
  assert.ok(d.edges.some((e) => e.source === 'start' && e.target === added.node_id), 'connected from start');
  assert.ok(added.position.x > 0, 'placed to the right of start');
  assert.ok(await page.isHidden('#kind-menu'));
  const saved = await api('GET', `/v1/chains/${chain.id}`);
  assert.ok(saved.doc.edges.some((e) => e.source === 'start' && e.target === added.node_id), 'the edge is saved');
  await page.done();
});

test('by keyboard: A on the canvas opens the menu, arrows and Enter pick, Esc closes; from a condition the next case', async () => {
  const { page } = await chainPage();
  await page.click('#node-table .select-node[data-node-id="route"]');
  await page.focus('#cy');
  await page.keyboard.press('a');
  await page.waitForSelector('#kind-menu:not([hidden])');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.kind), 'tool', 'the first kind has the focus');
  await page.keyboard.press('Escape');
  assert.ok(await page.isHidden('#kind-menu'));
  assert.equal(await page.evaluate(() => document.activeElement.id), 'cy', 'Esc gives the focus back to the canvas');

  await page.keyboard.press('a');
  await page.waitForSelector('#kind-menu:not([hidden])');
  // down to branch: the palette's order
  const kinds = await page.$$eval('#kind-menu .kind-item', (els) => els.map((e) => e.dataset.kind));
  const steps = kinds.indexOf('branch');
  assert.ok(steps > 0, 'branch is offered: ' + kinds);
  for (let i = 0; i < steps; i++) await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  await waitSaved(page);
  const d = await doc(page);
  const added = newest(d);
  assert.equal(added.kind, 'branch');
  assert.equal(d.edges.find((e) => e.target === added.node_id).label, 'small', 'the condition\'s free case');
  await page.done();
});

test('an edge dragged from a node onto empty canvas opens the menu there; the node lands at the drop, wired; one undo removes both', async () => {
  const { page } = await chainPage();
  const box = await page.$eval('#cy', (el) => { const r = el.getBoundingClientRect(); return { x: r.left, y: r.top }; });
  const rendered = (id) => page.evaluate((id) => { const p = window.__studio.cy.getElementById(id).renderedPosition(); return { x: p.x, y: p.y }; }, id);
  const start = await rendered('big_path');
  await page.mouse.move(box.x + start.x, box.y + start.y);
  await page.waitForFunction(() => { const h = window.__studio.cy.getElementById('__handle__'); return h.nonempty() && h.style('display') === 'element'; });
  const h = await rendered('__handle__');
  const drop = { x: box.x + h.x + 200, y: box.y + h.y + 120 };
  await page.mouse.move(box.x + h.x, box.y + h.y);
  await page.mouse.down();
  for (let i = 1; i <= 10; i++) await page.mouse.move(box.x + h.x + 20 * i, box.y + h.y + 12 * i);
  await page.mouse.up();
  await page.waitForSelector('#kind-menu:not([hidden])');
  assert.match(await page.textContent('#kind-menu-title'), /after big_path/);
  const before = (await doc(page)).nodes.length;
  await page.screenshot({ path: join(SHOTS, 'plus-drop.png') });
  await page.click('#kind-menu .kind-item[data-kind="tool"]');
  await waitSaved(page);
  let d = await doc(page);
  const added = newest(d);
  assert.equal(d.nodes.length, before + 1);
  assert.ok(d.edges.some((e) => e.source === 'big_path' && e.target === added.node_id), 'wired from big_path');
  const at = await rendered(added.node_id);
  assert.ok(Math.abs(box.x + at.x - drop.x) < 8 && Math.abs(box.y + at.y - drop.y) < 8, `placed at the drop: ${JSON.stringify(at)} vs ${JSON.stringify(drop)}`);

  await page.focus('#cy');
  await page.keyboard.press('Control+z');
  await waitSaved(page);
  d = await doc(page);
  assert.ok(!d.nodes.some((n) => n.node_id === added.node_id) && !d.edges.some((e) => e.target === added.node_id), 'one undo takes both back');

  // A drag dropped on empty canvas and then dismissed adds nothing.
  await page.mouse.move(box.x + start.x, box.y + start.y);
  await page.waitForFunction(() => window.__studio.cy.getElementById('__handle__').style('display') === 'element');
  await page.mouse.move(box.x + h.x, box.y + h.y);
  await page.mouse.down();
  for (let i = 1; i <= 10; i++) await page.mouse.move(box.x + h.x + 20 * i, box.y + h.y - 10 * i);
  await page.mouse.up();
  await page.waitForSelector('#kind-menu:not([hidden])');
  await page.keyboard.press('Escape');
  assert.ok(await page.isHidden('#kind-menu'));
  assert.equal((await doc(page)).nodes.length, before);
  await page.done();
});
