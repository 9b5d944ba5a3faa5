// Browser test: the "+" beside the selected node and the menu of kinds it
// opens (by mouse and by keyboard, A on the canvas), and an edge dragged
// from a node's handle onto empty canvas: each adds a node after that node,
// connected to it, in one undo step. Keys pressed in the menu act on
// nothing behind it; the "+" leaves the edge handle free; a viewer gets
// neither.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { launch, close, open, api, SHOTS, waitSaved, nodePos, ownStudio } from './lib.mjs';

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

const doc = (page) => page.evaluate(() => window.__editor.doc);
const newest = (d) => d.nodes[d.nodes.length - 1];

test('the "+" on a selected node adds the picked kind after it, connected', async () => {
  const { chain, page } = await chainPage();
  await page.click('#node-table .select-node[data-node-id="start"]');
  await page.waitForSelector('#node-plus:not([hidden])');
  assert.equal(await page.getAttribute('#node-plus', 'aria-label'), 'Add a node after start');
  // hovering the node shows its edge handle beside the "+", not under it
  const p = await nodePos(page, 'start');
  await page.mouse.move(p.x, p.y);
  await page.waitForFunction(() => window.__editor.cy.getElementById('__handle__').style('display') === 'element');
  const [hb, pb] = await Promise.all([page.evaluate(() => {
    const cy = window.__editor.cy;
    const b = cy.getElementById('__handle__').renderedBoundingBox();
    const r = cy.container().getBoundingClientRect();
    const c = { x: r.left + (b.x1 + b.x2) / 2, y: r.top + (b.y1 + b.y2) / 2 };
    return { right: r.left + b.x2, top: r.top + b.y1, bottom: r.top + b.y2, at: document.elementFromPoint(c.x, c.y).tagName };
  }), page.locator('#node-plus').boundingBox()]);
  assert.ok(pb.x >= hb.right, 'the "+" starts past the handle: ' + JSON.stringify({ hb, pb }));
  assert.ok(Math.abs(pb.y + pb.height / 2 - (hb.top + hb.bottom) / 2) < 3, 'level with the handle');
  assert.equal(hb.at, 'CANVAS', 'the handle is not covered');
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
  // the canvas's shortcuts do not act behind the menu: Delete deletes
  // nothing, C opens no picker, N adds no note
  for (const k of ['Delete', 'Backspace', 'c', 'n', 'z']) await page.keyboard.press(k);
  assert.ok((await doc(page)).nodes.some((n) => n.node_id === 'route'), 'route is still there');
  assert.equal(await page.locator('dialog[open]').count(), 0, 'no dialog opened');
  assert.equal(((await doc(page)).notes || []).length, 0, 'no note added');
  assert.ok(await page.isVisible('#kind-menu'), 'the menu stays open');
  // a letter goes to the kind starting with it
  await page.keyboard.press('m');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.kind), 'map');
  await page.keyboard.press('Home');
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
  const rendered = (id) => page.evaluate((id) => { const p = window.__editor.cy.getElementById(id).renderedPosition(); return { x: p.x, y: p.y }; }, id);
  const start = await rendered('big_path');
  await page.mouse.move(box.x + start.x, box.y + start.y);
  await page.waitForFunction(() => { const h = window.__editor.cy.getElementById('__handle__'); return h.nonempty() && h.style('display') === 'element'; });
  const h = await rendered('__handle__');
  const drop = { x: box.x + h.x - 60, y: box.y + h.y + 150 }; // below big_path, inside the canvas
  await page.mouse.move(box.x + h.x, box.y + h.y);
  await page.mouse.down();
  for (let i = 1; i <= 10; i++) await page.mouse.move(box.x + h.x - 6 * i, box.y + h.y + 15 * i);
  await page.mouse.up();
  await page.waitForSelector('#kind-menu:not([hidden])');
  assert.match(await page.textContent('#kind-menu-title'), /after big_path/);
  const mb = await page.locator('#kind-menu').boundingBox();
  assert.ok(!(drop.x >= mb.x && drop.x <= mb.x + mb.width && drop.y >= mb.y && drop.y <= mb.y + mb.height), 'the menu leaves the drop point in sight: ' + JSON.stringify({ mb, drop }));
  const before = (await doc(page)).nodes.length;
  assert.equal(await page.isVisible('.kind-ghost'), true, 'the edge to be is drawn to the drop point');
  assert.deepEqual(await axeViolations(page), [], 'axe with the menu of a dropped edge open');
  await page.screenshot({ path: join(SHOTS, 'plus-drop.png') });
  await page.click('#kind-menu .kind-item[data-kind="tool"]');
  assert.equal(await page.isVisible('.kind-ghost'), false, 'and gone with the menu');
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
  await page.waitForFunction(() => window.__editor.cy.getElementById('__handle__').style('display') === 'element');
  await page.mouse.move(box.x + h.x, box.y + h.y);
  await page.mouse.down();
  for (let i = 1; i <= 10; i++) await page.mouse.move(box.x + h.x - 6 * i, box.y + h.y - 12 * i);
  await page.mouse.up();
  await page.waitForSelector('#kind-menu:not([hidden])');
  await page.keyboard.press('Escape');
  assert.ok(await page.isHidden('#kind-menu'));
  assert.equal((await doc(page)).nodes.length, before);
  await page.done();
});

test('read-only: a viewer gets neither the "+" nor the menu (A, an edge let go on empty canvas)', async () => {
  const studio = await ownStudio('studio-plus-', [['ada', 'admin'], ['vic', 'viewer']]);
  try {
    const res = await fetch(studio.base + '/v1/chains', {
      method: 'POST',
      headers: { Authorization: 'Bearer ' + studio.tokens.admin, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'plus viewer', nodes: [{ node_id: 'a', kind: 'tool', name: 'echo', position: { x: 0, y: 100 } }], edges: [] }),
    });
    const chain = await res.json();
    const page = await open(null);
    await page.goto(studio.base + '/login?next=' + encodeURIComponent('/chains/' + chain.id));
    await page.waitForFunction(() => document.activeElement && document.activeElement.name === 'token');
    await page.keyboard.type(studio.tokens.viewer);
    await Promise.all([page.waitForURL(studio.base + '/chains/' + chain.id), page.keyboard.press('Enter')]);
    await page.waitForSelector('#editor[data-ready="1"]');
    const p = await nodePos(page, 'a');
    await page.mouse.click(p.x, p.y);
    await page.waitForFunction(() => window.__editor.cy.nodes(':selected').length === 1);
    await page.keyboard.press('a');
    // drag from the handle to empty canvas
    await page.mouse.move(p.x, p.y - 150);
    await page.mouse.move(p.x, p.y);
    await page.waitForFunction(() => window.__editor.cy.getElementById('__handle__').style('display') === 'element');
    const h = await page.evaluate(() => {
      const cy = window.__editor.cy;
      const q = cy.getElementById('__handle__').renderedPosition();
      const r = cy.container().getBoundingClientRect();
      return { x: r.left + q.x, y: r.top + q.y };
    });
    await page.mouse.move(h.x, h.y);
    await page.mouse.down();
    for (let i = 1; i <= 10; i++) await page.mouse.move(h.x + 20 * i, h.y + 15 * i);
    await page.mouse.up();
    await page.waitForTimeout(200);
    assert.equal(await page.locator('#node-plus, #kind-menu').count(), 0, 'neither the "+" nor the menu exists');
    assert.equal(await page.evaluate(() => window.__editor.doc.nodes.length), 1);
    await page.done();
  } finally {
    studio.stop();
  }
});
