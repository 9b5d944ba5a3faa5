// Keyboard and canvas navigation, and large chains, driven as a
// person would: the mouse wheel, Ctrl+F, `?`, Z, the arrow keys, C with the
// target picker, Ctrl+D, the minimap; a 1,000-node chain without positions;
// how long 1,000 / 5,000 / 10,000-node chains take to open interactive and
// the save round-trip of one edit at 5,000 nodes. Screenshots go to
// CANVAS_SHOTS (default /tmp/canvas/shots).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { BASE, launch, close, open, api, waitSaved, nodePos, percentile, bigChain } from './lib.mjs';

const SHOTS = process.env.CANVAS_SHOTS || '/tmp/canvas/shots';
mkdirSync(SHOTS, { recursive: true });

before(async () => { await launch(); });
after(async () => { await close(); });

const uniq = (p) => p + '-' + Date.now() + '-' + Math.floor(Math.random() * 1000);

function smallChain() {
  return {
    name: uniq('e2e-canvas'),
    entry_node: 'start',
    nodes: [
      { node_id: 'start', kind: 'tool', name: 'echo', label: 'Start', position: { x: 0, y: 0 } },
      { node_id: 'fetch', kind: 'tool', name: 'echo', label: 'Fetch page', position: { x: 250, y: 0 } },
      { node_id: 'check', kind: 'branch', condition: 'output != null', label: 'Check', position: { x: 500, y: 0 } },
      { node_id: 'fetch_more', kind: 'tool', name: 'echo', label: 'Fetch more', position: { x: 750, y: -100 } },
      { node_id: 'done', kind: 'tool', name: 'echo', label: 'Done', position: { x: 750, y: 100 } },
    ],
    edges: [
      { id: 'e1', source: 'start', target: 'fetch' },
      { id: 'e2', source: 'fetch', target: 'check' },
      { id: 'e3', source: 'check', target: 'fetch_more', label: 'true' },
    ],
  };
}

async function openEditor(doc) {
  const ch = await api('POST', '/v1/chains', doc);
  const page = await open('/chains/' + ch.id);
  await page.waitForSelector('#editor[data-ready="1"][data-navigate="1"]');
  return { page, id: ch.id };
}

async function clickNode(page, id) {
  const p = await nodePos(page, id);
  await page.mouse.click(p.x, p.y);
  await page.waitForFunction((id) => window.__editor.cy.getElementById(id).selected(), id);
}

const zoomOf = (page) => page.evaluate(() => window.__editor.cy.zoom());
const selected = (page) => page.evaluate(() => window.__editor.cy.nodes(':selected').map((n) => n.id()));
const posOf = (page, id) => page.evaluate((id) => window.__editor.doc.nodes.find((n) => n.node_id === id).position, id);
// how far a node is from the middle of the canvas, in screen pixels
const offCentre = (page, id) => page.evaluate((id) => {
  const cy = window.__editor.cy;
  const p = cy.getElementById(id).renderedPosition();
  return Math.hypot(p.x - cy.width() / 2, p.y - cy.height() / 2);
}, id);
const settle = (page) => page.waitForFunction(() => !window.__editor.cy.animated(), null, { timeout: 3000 });

test('wheel zooms 1.2× a notch about the pointer; Z zooms to the selection; + and − zoom', async () => {
  const { page } = await openEditor(smallChain());
  const box = await page.locator('#cy').boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  const z0 = await zoomOf(page);
  await page.mouse.wheel(0, -100);
  await page.waitForFunction((z) => window.__editor.cy.zoom() !== z, z0);
  const z1 = await zoomOf(page);
  assert.ok(Math.abs(z1 / z0 - 1.2) < 0.01, 'one notch in zooms 1.2×, was ' + (z1 / z0).toFixed(3));
  await page.mouse.wheel(0, 100);
  await page.waitForFunction((z) => window.__editor.cy.zoom() !== z, z1);
  assert.ok(Math.abs((await zoomOf(page)) / z0 - 1) < 0.01, 'one notch out undoes it');

  await clickNode(page, 'done');
  await page.keyboard.press('z');
  await settle(page);
  assert.ok(await offCentre(page, 'done') < 5, 'Z centres the selected node');
  assert.ok(Math.abs((await zoomOf(page)) - 1.5) < 0.01, 'and zooms in on it (capped at 150%)');
  await page.keyboard.press('-');
  assert.ok(Math.abs((await zoomOf(page)) - 1.25) < 0.01, '− zooms out 1.2×');
  await page.click('#btn-zoom-in');
  assert.ok(Math.abs((await zoomOf(page)) - 1.5) < 0.01, 'the + button zooms in 1.2×');
  await page.done();
});

test('Ctrl+F finds nodes by id, label or kind and centres each match; Enter goes to the next', async () => {
  const { page } = await openEditor(smallChain());
  await page.click('#cy', { position: { x: 6, y: 6 } });
  await page.keyboard.press('Control+f');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'find-input');
  await page.keyboard.type('fetch');
  await page.waitForFunction(() => document.getElementById('find-count').textContent === '1 of 2');
  await settle(page);
  assert.deepEqual(await selected(page), ['fetch']);
  assert.ok(await offCentre(page, 'fetch') < 5, 'the match is centred');
  await page.screenshot({ path: join(SHOTS, 'find.png') });
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.getElementById('find-count').textContent === '2 of 2');
  await settle(page);
  assert.deepEqual(await selected(page), ['fetch_more']);
  assert.ok(await offCentre(page, 'fetch_more') < 5);
  await page.keyboard.press('Enter'); // wraps round
  await page.waitForFunction(() => document.getElementById('find-count').textContent === '1 of 2');
  // by kind
  await page.fill('#find-input', 'branch');
  await page.waitForFunction(() => document.getElementById('find-count').textContent === '1 of 1');
  assert.deepEqual(await selected(page), ['check']);
  await page.fill('#find-input', 'nothing-like-it');
  await page.waitForFunction(() => document.getElementById('find-count').textContent === 'no match');
  await page.keyboard.press('Escape');
  assert.ok(await page.isHidden('#find-bar'));
  await page.done();
});

test('? lists every shortcut in a dialog; Esc closes it', async () => {
  const { page } = await openEditor(smallChain());
  await page.click('#cy', { position: { x: 6, y: 6 } });
  await page.keyboard.press('?');
  await page.waitForSelector('#shortcuts-dialog[open]');
  const keys = await page.$$eval('#shortcuts-dialog kbd', (ks) => ks.map((k) => k.textContent));
  for (const k of ['Ctrl+F', 'Z', 'Arrow keys', 'C', 'Ctrl+D', 'Ctrl+A', 'Delete', '?']) assert.ok(keys.includes(k), 'lists ' + k);
  await page.screenshot({ path: join(SHOTS, 'shortcuts.png') });
  await page.keyboard.press('Escape');
  await page.waitForSelector('#shortcuts-dialog:not([open])', { state: 'attached' });
  // the button opens it too
  await page.click('#btn-shortcuts');
  await page.waitForSelector('#shortcuts-dialog[open]');
  await page.click('#shortcuts-dialog .close-dialog');
  await page.done();
});

test('C with one node selected connects it to a node picked by typing; one undo step', async () => {
  const { page } = await openEditor(smallChain());
  await clickNode(page, 'check');
  await page.keyboard.press('c');
  await page.waitForSelector('#pick-dialog[open]');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'pick-input');
  await page.keyboard.type('don');
  await page.waitForFunction(() => [...document.querySelectorAll('#pick-list li[data-id]')].map((l) => l.dataset.id).join() === 'done');
  await page.screenshot({ path: join(SHOTS, 'picker.png') });
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => window.__editor.doc.edges.some((e) => e.source === 'check' && e.target === 'done'));
  const e = await page.evaluate(() => window.__editor.doc.edges.find((e) => e.source === 'check' && e.target === 'done'));
  assert.equal(e.label, 'false', "a branch's second edge is its false way");
  await waitSaved(page);
  // arrow keys pick among several
  await clickNode(page, 'start');
  await page.keyboard.press('c');
  await page.waitForSelector('#pick-dialog[open]');
  await page.keyboard.type('fetch');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => window.__editor.doc.edges.some((e) => e.source === 'start' && e.target === 'fetch_more'));
  await page.keyboard.press('Control+z');
  await page.waitForFunction(() => !window.__editor.doc.edges.some((e) => e.source === 'start' && e.target === 'fetch_more'));
  assert.ok(await page.evaluate(() => window.__editor.doc.edges.some((e) => e.source === 'check' && e.target === 'done')), 'one undo takes back one connection');
  await waitSaved(page);
  await page.done();
});

test('arrow keys move the selection, Ctrl+D duplicates, Ctrl+A and Delete; each one undo step', async () => {
  const { page } = await openEditor(smallChain());
  await clickNode(page, 'fetch');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('Shift+ArrowDown');
  assert.deepEqual(await posOf(page, 'fetch'), { x: 290, y: 200 });
  await page.keyboard.press('Control+z');
  assert.deepEqual(await posOf(page, 'fetch'), { x: 290, y: 0 }, 'one press, one undo step');
  assert.deepEqual(await page.evaluate(() => window.__editor.cy.getElementById('fetch').position()), { x: 290, y: 0 }, 'the canvas follows');
  await waitSaved(page);
  const saved = await api('GET', '/v1/chains/' + (await page.getAttribute('#editor', 'data-chain-id')));
  const doc = saved.doc || saved;
  assert.deepEqual(doc.nodes.find((n) => n.node_id === 'fetch').position, { x: 290, y: 0 }, 'the move is saved');

  await clickNode(page, 'done');
  await page.keyboard.press('Control+d');
  await page.waitForFunction(() => window.__editor.doc.nodes.length === 6);
  assert.deepEqual(await selected(page), ['done_2'], 'the copy is selected');
  assert.deepEqual(await posOf(page, 'done_2'), { x: 790, y: 140 });

  await page.keyboard.press('Control+a');
  assert.equal((await selected(page)).length, 6);
  await page.keyboard.press('Delete');
  assert.equal(await page.evaluate(() => window.__editor.doc.nodes.length), 0);
  await page.keyboard.press('Control+z');
  assert.equal(await page.evaluate(() => window.__editor.doc.nodes.length), 6, 'one undo brings every node back');
  await page.keyboard.press('Control+z');
  assert.equal(await page.evaluate(() => window.__editor.doc.nodes.length), 5, 'the next undoes the duplicate');
  await waitSaved(page);
  await page.done();
});

test('adding a node from the palette by keyboard puts the focus in its properties', async () => {
  const { page } = await openEditor(smallChain());
  await page.focus('.palette-item[data-kind="tool"]');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.activeElement && document.activeElement.closest('#props .props[data-target="node"]'));
  const id = await page.evaluate(() => document.activeElement.closest('.props').dataset.id);
  assert.equal(id, 'tool');
  await page.keyboard.type('_x'); // typing goes to the field, not the canvas shortcuts
  assert.equal(await page.evaluate(() => window.__editor.doc.nodes.length), 6);
  await page.done();
});

test('the minimap shows the chain, moves the view on click, and its collapse is remembered', async () => {
  const { page } = await openEditor(bigChain(uniq('e2e-minimap'), 300));
  await page.waitForSelector('#minimap');
  const pan0 = await page.evaluate(() => window.__editor.cy.pan());
  const mm = await page.locator('#minimap').boundingBox();
  await page.mouse.click(mm.x + mm.width - 10, mm.y + mm.height - 10);
  const pan1 = await page.evaluate(() => window.__editor.cy.pan());
  assert.ok(pan1.x < pan0.x - 100 && pan1.y < pan0.y - 100, 'a click at the bottom right moves the view there');
  await page.screenshot({ path: join(SHOTS, 'minimap.png') });
  await page.click('#minimap-toggle');
  assert.ok(await page.isHidden('#minimap'));
  await page.reload();
  await page.waitForSelector('#editor[data-navigate="1"]');
  assert.ok(await page.isHidden('#minimap'), 'still collapsed after a reload');
  await page.click('#minimap-toggle');
  assert.ok(await page.isVisible('#minimap'));
  await page.done();
});

test('sticky notes: N adds one, typing, dragging and deleting are saved in the chain; undo brings it back', async () => {
  const { page, id } = await openEditor(smallChain());
  await page.click('#cy', { position: { x: 6, y: 6 } });
  await page.keyboard.press('n');
  await page.waitForSelector('.note[data-id="note1"] textarea');
  assert.equal(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), 'Note note1', 'the new note has the focus');
  await page.keyboard.type('Ask Ana before changing the URL');
  await page.click('#cy', { position: { x: 6, y: 6 } }); // blur: the text is committed
  await waitSaved(page);
  let saved = await api('GET', '/v1/chains/' + id);
  let notes = (saved.doc || saved).notes;
  assert.equal(notes.length, 1);
  assert.equal(notes[0].text, 'Ask Ana before changing the URL');
  const before = notes[0].position;
  // drag it by its top bar
  const grip = await page.locator('.note[data-id="note1"] .note-grip').boundingBox();
  const z = await zoomOf(page);
  await page.mouse.move(grip.x + 30, grip.y + 5);
  await page.mouse.down();
  await page.mouse.move(grip.x + 130, grip.y + 65, { steps: 5 });
  await page.mouse.up();
  await waitSaved(page);
  saved = await api('GET', '/v1/chains/' + id);
  notes = (saved.doc || saved).notes;
  assert.ok(Math.abs(notes[0].position.x - (before.x + 100 / z)) <= 1 && Math.abs(notes[0].position.y - (before.y + 60 / z)) <= 1, 'the drag is saved: ' + JSON.stringify([before, notes[0].position, z]));
  // the note follows the canvas when it pans
  const nb = await page.locator('.note[data-id="note1"]').boundingBox();
  await page.evaluate(() => window.__editor.cy.panBy({ x: 50, y: 0 }));
  const na = await page.locator('.note[data-id="note1"]').boundingBox();
  assert.ok(Math.abs(na.x - nb.x - 50) < 1, 'the note moves with the canvas');
  await page.screenshot({ path: join(SHOTS, 'note.png') });
  // delete, then undo
  await page.click('.note[data-id="note1"] .note-del');
  await page.waitForSelector('.note[data-id="note1"]', { state: 'detached' });
  await waitSaved(page);
  saved = await api('GET', '/v1/chains/' + id);
  assert.equal((saved.doc || saved).notes, undefined, 'no notes left in the document');
  await page.keyboard.press('Control+z');
  await page.waitForSelector('.note[data-id="note1"]');
  assert.equal(await page.inputValue('.note[data-id="note1"] textarea'), 'Ask Ana before changing the URL');
  await waitSaved(page);
  // a reload draws it again
  await page.reload();
  await page.waitForSelector('.note[data-id="note1"] textarea');
  assert.equal(await page.inputValue('.note[data-id="note1"] textarea'), 'Ask Ana before changing the URL');
  await page.done();
});

test('a bad note is refused with the note and field named', async () => {
  const doc = smallChain();
  doc.notes = [{ id: 'a', text: 'x', position: { x: 0, y: 0 } }, { id: 'a', text: 'y', position: { x: 0, y: 0 } }];
  const res = await fetch(BASE + '/v1/chains', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(doc) });
  assert.equal(res.status, 400);
  assert.match(await res.text(), /notes\[1\] \\?"a\\?"\.id: duplicate note id/);
});

test('panels resize by drag and keyboard, collapse, and the layout is remembered', async () => {
  const { page } = await openEditor(smallChain());
  const w0 = (await page.locator('.side').boundingBox()).width;
  assert.ok(Math.abs(w0 - 380) < 2, 'the side panel starts at 380 px, was ' + w0);
  const sp = await page.locator('#side-splitter').boundingBox();
  await page.mouse.move(sp.x + 3, sp.y + 200);
  await page.mouse.down();
  await page.mouse.move(sp.x - 97, sp.y + 200, { steps: 5 });
  await page.mouse.up();
  assert.ok(Math.abs((await page.locator('.side').boundingBox()).width - 480) < 2, 'dragging the splitter 100 px left widens the panel by 100 px');
  await page.focus('#side-splitter');
  await page.keyboard.press('ArrowLeft');
  assert.ok(Math.abs((await page.locator('.side').boundingBox()).width - 500) < 2, 'ArrowLeft on the splitter widens it by 20 px');
  const cyW = (await page.locator('#cy').boundingBox()).width;
  await page.click('#btn-toggle-palette');
  assert.ok(await page.isHidden('.palette'));
  await page.waitForFunction((w) => document.getElementById('cy').getBoundingClientRect().width > w + 100, cyW);
  await page.screenshot({ path: join(SHOTS, 'panels.png') });
  await page.reload();
  await page.waitForSelector('#editor[data-navigate="1"]');
  assert.ok(Math.abs((await page.locator('.side').boundingBox()).width - 500) < 2, 'the width is remembered');
  assert.ok(await page.isHidden('.palette'), 'the collapsed palette is remembered');
  await page.click('#btn-toggle-side');
  assert.ok(await page.isHidden('.side'));
  await page.click('#btn-toggle-side');
  await page.click('#btn-toggle-palette');
  assert.ok(await page.isVisible('.side') && await page.isVisible('.palette'));
  await page.done();
});

test('a 1,000-node chain without positions opens laid out in layers, folded to the screen, not one row', async () => {
  const doc = bigChain(uniq('e2e-nopos-1000'), 1000, false);
  // a branch every 50 nodes so ranks are not all one node
  for (let i = 50; i < 1000; i += 50) doc.edges.push({ source: 'n' + (i - 50), target: 'n' + (i - 1) });
  const ch = await api('POST', '/v1/chains', doc);
  const page = await open();
  await page.goto(BASE + '/chains/' + ch.id);
  await page.waitForSelector('#editor[data-ready="1"]', { timeout: 20000 });
  const tti = await page.evaluate(() => window.__editor.readyAt);
  const shape = await page.evaluate(() => {
    const ps = window.__editor.doc.nodes.map((n) => n.position);
    const xs = ps.map((p) => p.x), ys = ps.map((p) => p.y);
    const w = Math.max(...xs) - Math.min(...xs), h = Math.max(...ys) - Math.min(...ys);
    const overlap = new Set(ps.map((p) => p.x + ',' + p.y)).size !== ps.length;
    return { w, h, rows: new Set(ys).size, overlap, zoom: window.__editor.cy.zoom(), all: ps.every(Boolean) };
  });
  assert.ok(shape.all, 'every node has a position');
  assert.ok(!shape.overlap, 'no two nodes share a place');
  assert.ok(shape.rows > 10, 'many rows, was ' + shape.rows);
  assert.ok(shape.w / shape.h < 4 && shape.w / shape.h > 0.5, 'screen-shaped, was ' + (shape.w / shape.h).toFixed(2));
  assert.ok(shape.zoom >= 0.5, 'opens at a readable zoom, was ' + shape.zoom);
  await page.screenshot({ path: join(SHOTS, 'nopos-1000-open.png') });
  await page.click('#btn-fit');
  await page.waitForSelector('#editor[data-canvas-loaded="1"]', { timeout: 20000 });
  await page.screenshot({ path: join(SHOTS, 'nopos-1000-fit.png') });
  console.log(`FIGURE editor open, 1000 nodes without positions: interactive after ${Math.round(tti)} ms`);
  // Auto-layout gives the same readable shape (one undo step)
  await page.evaluate(() => window.__editor.edit(() => { for (const n of window.__editor.doc.nodes) n.position = { x: 0, y: 0 }; }));
  await page.click('#btn-layout');
  const rows = await page.evaluate(() => new Set(window.__editor.doc.nodes.map((n) => n.position.y)).size);
  assert.ok(rows > 10, 'Auto-layout folds the chain into rows, was ' + rows);
  await waitSaved(page);
  await page.done();
});

// Large chains: the time to open interactive (navigation start → the page
// answers: its ready mark, then a click selects a node and shows its
// properties), and the save + validation round-trip of one edit at 5,000.
test('large chains: 1,000, 5,000 and 10,000 nodes open interactive; one edit at 5,000 round-trips', { timeout: 600000 }, async () => {
  const figures = {};
  for (const n of [1000, 5000, 10000]) {
    const ch = await api('POST', '/v1/chains', bigChain(uniq('e2e-open-' + n), n));
    const page = await open();
    await page.goto(BASE + '/chains/' + ch.id);
    await page.waitForSelector('#editor[data-ready="1"]', { timeout: 60000 });
    const ready = await page.evaluate(() => window.__editor.readyAt);
    const t0 = await page.evaluate(() => performance.now());
    await clickNode(page, 'n1');
    await page.waitForSelector('.props[data-id="n1"]');
    const click = (await page.evaluate(() => performance.now())) - t0;
    await page.waitForSelector('#editor[data-canvas-loaded="1"]', { timeout: 120000 });
    const all = await page.evaluate(() => window.__editor.canvasLoadedAt);
    figures[n] = { ready: Math.round(ready), click: Math.round(click), all: Math.round(all) };
    console.log(`FIGURE editor open, ${n} nodes: interactive after ${Math.round(ready)} ms, first click answered in ${Math.round(click)} ms, every node drawn after ${Math.round(all)} ms`);
    if (n === 5000) {
      await page.screenshot({ path: join(SHOTS, 'open-5000.png') });
      await page.waitForSelector('.props[data-id="n1"] input[data-f="label"]');
      const rtts = [];
      for (let i = 0; i < 30; i++) {
        const saves = Number((await page.getAttribute('#editor', 'data-saves')) || 0);
        await page.fill('.props[data-id="n1"] input[data-f="label"]', 'Step 1 edit ' + i);
        await page.waitForFunction((k) => Number(document.getElementById('editor').dataset.saves || 0) > k && document.getElementById('save-state').dataset.state === 'saved', saves, { timeout: 20000 });
        rtts.push(Number(await page.getAttribute('#editor', 'data-rtt')));
      }
      const p50 = percentile(rtts, 50), p95 = percentile(rtts, 95);
      figures.rtt5000 = { p50, p95 };
      console.log(`FIGURE save + validation round-trip, 5000 nodes: p50 ${p50.toFixed(1)} ms, p95 ${p95.toFixed(1)} ms over ${rtts.length} edits; target p95 150 ms: ${p95 < 150 ? 'met' : 'MISSED'}`);
      // The 150 ms target is MISSED today (docs/benchmarks.md says why); the
      // ceiling catches a regression past what is measured now.
      assert.ok(p95 < Number(process.env.E2E_RTT5000_MAX_MS || 5000), 'p95 within the ceiling, was ' + p95.toFixed(1));
    }
    await page.done();
  }
  console.log(`FIGURE target 5000 nodes interactive < 3000 ms: ${figures[5000].ready < 3000 ? 'met' : 'MISSED'} (${figures[5000].ready} ms)`);
  // fails only past a ceiling (3x the target) so a loaded machine does not fail CI
  assert.ok(figures[5000].ready < Number(process.env.E2E_TTI5000_MAX_MS || 9000));
});
