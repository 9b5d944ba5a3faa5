// The editor's behaviour, driven like a person would: the new-chain name
// dialog, import problems, keyboard connect and undo, renaming nodes, error
// positions, the node list pane, the palette. Screenshots go to /tmp.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { BASE, launch, close, open, api, waitSaved, nodePos } from './lib.mjs';

const SHOTS = process.env.EDITOR_SHOTS || '/tmp/editor/shots';
mkdirSync(SHOTS, { recursive: true });

before(async () => { await launch(); });
after(async () => { await close(); });

const uniq = (p) => p + '-' + Date.now() + '-' + Math.floor(Math.random() * 1000);

async function openEditor(doc) {
  const ch = await api('POST', '/v1/chains', doc);
  const page = await open('/chains/' + ch.id);
  await page.waitForSelector('#editor[data-ready="1"]');
  return { page, id: ch.id };
}

const edgesOf = (page) => page.evaluate(() => window.__editor.doc.edges.map((e) => ({ id: e.id, s: e.source, t: e.target, label: e.label })));

async function clickCanvasBlank(page) {
  await page.click('#cy', { position: { x: 6, y: 6 } });
}

test('a new chain asks for its name; refused names say why inline, nothing is created', async () => {
  const page = await open('/');
  await page.click('#new-chain');
  await page.waitForSelector('#new-dialog[open]');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'new-name', 'the name field has the focus');
  const before = (await api('GET', '/v1/chains?limit=1')).total;

  await page.keyboard.press('Enter'); // empty
  await page.waitForSelector('#new-name-error');
  assert.match(await page.textContent('#new-name-error'), /Give the chain a name/);
  await page.waitForFunction(() => document.getElementById('new-name').getAttribute('aria-invalid') === 'true', null, { timeout: 3000 });

  await page.keyboard.type('branch'); // an example's name
  assert.equal(await page.getAttribute('#new-name', 'aria-invalid'), null, 'typing clears the mark');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => /already exists/.test(document.querySelector('#new-result').textContent));
  await page.screenshot({ path: join(SHOTS, 'new-chain-dialog.png') });

  await page.fill('#new-name', 'x'.repeat(300));
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => /limit is 256/.test(document.querySelector('#new-result').textContent));
  assert.equal((await api('GET', '/v1/chains?limit=1')).total, before, 'nothing was created');
  assert.ok(page.url().endsWith('/'), 'still on the list');

  const name = uniq('Invoices');
  await page.fill('#new-name', name);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#editor[data-ready="1"]');
  assert.equal(await page.textContent('#chain-title'), name);
  assert.equal((await api('GET', '/v1/chains?limit=1')).total, before + 1);
  // A blank chain is not published: no trigger can run it before a real Publish.
  assert.equal(await page.getAttribute('#btn-publish', 'data-state'), 'none');
  assert.match(await page.getAttribute('#btn-publish', 'title'), /Nothing is published/);
  await page.done();
});

test('import from the page: a taken name becomes "name (2)"; every problem of a bad document is listed', async () => {
  const page = await open('/');
  const bad = `{
  "name": "broken",
  "timeout": "soon",
  "nodes": [
    {"node_id": "a", "kind": "tool", "retry": {"max_attempts": "3"}},
    {"node_id": "b", "kind": "nope"},
    {"node_id": "c", "kind": "tool", "labl": "x"}
  ],
  "edges": [{"source": "a", "target": "b", "max_iterations": "many"}]
}`;
  await page.click('#open-import');
  await page.fill('#import-json', bad);
  await page.click('#import-submit');
  await page.waitForSelector('#import-problems li');
  const items = await page.$$eval('#import-problems li', (lis) => lis.map((li) => li.textContent.replace(/\s+/g, ' ').trim()));
  assert.equal(items.length, 5, 'five problems: ' + JSON.stringify(items));
  assert.match(items[0], /^timeout line 3, column 14: wrong type/);
  assert.match(items[1], /nodes\[0\] "a"\.retry\.max_attempts line 5, column \d+: wrong type/);
  assert.match(items[2], /nodes\[1\] "b"\.kind line 6, column \d+: unknown kind "nope"/);
  assert.match(items[3], /nodes\[2\] "c"\.labl line 7, column \d+: unknown field/);
  assert.match(items[4], /edges\[0\] "a" -> "b"\.max_iterations line 9, column \d+: wrong type/);
  assert.match(await page.textContent('#import-result'), /5 problems/);
  await page.screenshot({ path: join(SHOTS, 'import-problems.png') });

  // the name of an example is taken: imported as "branch (2)" like the API
  const list = (await api('GET', '/v1/chains?q=branch')).chains.map((c) => c.name);
  let n = 2;
  while (list.includes('branch (' + n + ')')) n++;
  await page.fill('#import-json', JSON.stringify({ name: 'branch', nodes: [{ node_id: 'a', kind: 'tool', name: 'echo' }] }));
  await page.click('#import-submit');
  await page.waitForSelector('#editor[data-ready="1"]');
  assert.equal(await page.textContent('#chain-title'), 'branch (' + n + ')');
  await page.done();
});

test('keyboard: Ctrl+A then C connects in order without duplicates, self-loops or cycles, as one undo step', async () => {
  const at = (i) => ({ x: 200 * i, y: 100 });
  const { page } = await openEditor({
    name: uniq('connect'),
    nodes: [
      { node_id: 'a', kind: 'branch', condition: 'input.ok', position: at(0) },
      { node_id: 'b', kind: 'tool', name: 'echo', position: at(1) },
      { node_id: 'c', kind: 'tool', name: 'echo', position: at(2) },
      { node_id: 'd', kind: 'tool', name: 'echo', position: at(3) },
      { node_id: 'e', kind: 'tool', name: 'echo', position: at(4) },
    ],
    edges: [{ source: 'a', target: 'b', label: 'true' }, { source: 'c', target: 'a', label: 'back', max_iterations: 3 }],
  });
  const start = await edgesOf(page);
  await clickCanvasBlank(page);
  await page.keyboard.press('Control+a');
  await page.keyboard.press('c');
  // a→b is there already (the branch would have got a second, "false" edge);
  // b→c would close b→c→a→b; c→d and d→e are new
  await page.waitForFunction((n) => window.__editor.doc.edges.length === n + 2, start.length);
  await waitSaved(page);
  const after = await edgesOf(page);
  const pairs = after.map((e) => e.s + '>' + e.t);
  assert.deepEqual(pairs.filter((p) => !start.some((e) => e.s + '>' + e.t === p)), ['c>d', 'd>e']);
  assert.equal(new Set(pairs).size, pairs.length, 'no duplicate edge: ' + pairs);
  assert.ok(!after.some((e) => e.s === e.t), 'no self-loop');
  assert.match(await page.textContent('#flash'), /Connected 2 pairs; 1 already connected; 1 would close a cycle/);

  // again: nothing new
  await page.keyboard.press('c');
  await page.waitForFunction(() => /Nothing new to connect; 3 already connected; 1 would close a cycle/.test(document.getElementById('flash').textContent));
  assert.equal((await edgesOf(page)).length, after.length);

  // one undo step removes both edges
  await page.keyboard.press('Control+z');
  await page.waitForFunction((n) => window.__editor.doc.edges.length === n, start.length);
  assert.deepEqual(await edgesOf(page), start);
  await page.keyboard.press('Control+Shift+z');
  await page.waitForFunction((n) => window.__editor.doc.edges.length === n, after.length);

  // deleting several nodes is one step too
  await page.keyboard.press('Control+a');
  await page.keyboard.press('Delete');
  await page.waitForFunction(() => window.__editor.doc.nodes.length === 0);
  await page.keyboard.press('Control+z');
  await page.waitForFunction(() => window.__editor.doc.nodes.length === 5);
  assert.equal((await edgesOf(page)).length, after.length);

  // pasting several nodes is one step
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: BASE });
  await page.keyboard.press('Control+a');
  await page.keyboard.press('Control+c');
  await page.keyboard.press('Control+v');
  await page.waitForFunction(() => window.__editor.doc.nodes.length === 10);
  await page.keyboard.press('Control+z');
  await page.waitForFunction(() => window.__editor.doc.nodes.length === 5);
  await clickCanvasBlank(page);

  // auto-layout is one step
  const pos = () => page.evaluate(() => JSON.stringify(window.__editor.doc.nodes.map((n) => n.position)));
  const laid = await pos();
  await page.click('#btn-layout');
  await page.waitForFunction((p) => JSON.stringify(window.__editor.doc.nodes.map((n) => n.position)) !== p, laid);
  await clickCanvasBlank(page);
  await page.keyboard.press('Control+z');
  await page.waitForFunction((p) => JSON.stringify(window.__editor.doc.nodes.map((n) => n.position)) === p, laid);

  // renaming the chain letter by letter is one step
  await clickCanvasBlank(page);
  await page.waitForSelector('.props[data-target="chain"]');
  const oldName = await page.inputValue('.props[data-target="chain"] input[data-f="name"]');
  await page.click('.props[data-target="chain"] input[data-f="name"]');
  await page.keyboard.press('End');
  for (const ch of '-renamed') { await page.keyboard.type(ch); await page.waitForTimeout(150); }
  await page.waitForFunction((n) => window.__editor.doc.name === n, oldName + '-renamed');
  await waitSaved(page);
  await clickCanvasBlank(page);
  await page.keyboard.press('Control+z');
  await page.waitForFunction((n) => window.__editor.doc.name === n, oldName);
  await waitSaved(page);
  await page.done();
});

test('drawing an edge that exists already adds nothing; no console warnings while drawing', async () => {
  const { page } = await openEditor({
    name: uniq('draw'),
    nodes: [
      { node_id: 'a', kind: 'tool', name: 'echo', position: { x: 0, y: 100 } },
      { node_id: 'b', kind: 'tool', name: 'echo', position: { x: 300, y: 100 } },
    ],
    edges: [],
  });
  async function drag() {
    const pa = await nodePos(page, 'a');
    await page.mouse.move(pa.x, pa.y);
    await page.waitForFunction(() => { const h = window.__editor.cy.getElementById('__handle__'); return h.nonempty() && h.visible(); });
    const hp = await page.evaluate(() => {
      const cy = window.__editor.cy;
      const p = cy.getElementById('__handle__').renderedPosition();
      const r = cy.container().getBoundingClientRect();
      return { x: r.left + p.x, y: r.top + p.y };
    });
    const pb = await nodePos(page, 'b');
    await page.mouse.move(hp.x, hp.y);
    await page.mouse.down();
    await page.mouse.move((hp.x + pb.x) / 2, (hp.y + pb.y) / 2, { steps: 6 });
    await page.mouse.move(pb.x, pb.y, { steps: 8 });
    await page.waitForTimeout(150);
    await page.mouse.up();
  }
  await drag();
  await page.waitForFunction(() => window.__editor.doc.edges.length === 1);
  await waitSaved(page);
  await drag();
  await page.waitForFunction(() => /already connected/.test((document.getElementById('flash') || {}).textContent || ''));
  assert.equal((await edgesOf(page)).length, 1);
  await page.done(); // fails on any console warning (Cytoscape's style warnings among them)
});

test('renaming a node: a taken id is refused inline; edges, their ids and references follow', async () => {
  const { page, id } = await openEditor({
    name: uniq('rename'),
    entry_node: 'fetch',
    nodes: [
      { node_id: 'fetch', kind: 'tool', name: 'echo', position: { x: 0, y: 0 } },
      { node_id: 'check', kind: 'branch', condition: 'length(fetch.output.items) > `0`', position: { x: 250, y: 0 } },
      { node_id: 'each', kind: 'map', items_path: 'node_results.fetch.items', map_node: 'work', position: { x: 500, y: 0 } },
      { node_id: 'work', kind: 'tool', name: 'echo', input_map: { v: 'item', src: '"fetch".output' }, position: { x: 750, y: 0 } },
    ],
    edges: [{ source: 'fetch', target: 'check' }, { source: 'check', target: 'each', label: 'true' }, { id: 'mine', source: 'fetch', target: 'each', condition: 'fetch.output.more' }],
  });
  await page.click('#node-table .select-node[data-node-id="fetch"]');
  const field = '.props[data-target="node"] input[data-f="node_id"]';
  await page.waitForSelector(field);
  await page.fill(field, 'check');
  await page.waitForSelector('#node-id-error');
  assert.match(await page.textContent('#node-id-error'), /Another node already has the id “check”/);
  await page.keyboard.press('Enter');
  await page.click('#cy', { position: { x: 6, y: 6 } }); // leaving the field does not rename
  assert.ok(await page.evaluate(() => !!window.__editor.doc.nodes.find((n) => n.node_id === 'fetch')), 'nothing renamed');
  await page.click('#node-table .select-node[data-node-id="fetch"]');
  await page.waitForSelector(field);
  await page.fill(field, 'input');
  await page.waitForFunction(() => /reserved/.test(document.getElementById('node-id-error').textContent));
  await page.fill(field, 'load');
  await page.waitForFunction(() => !document.getElementById('node-id-error'));
  await page.keyboard.press('Tab');
  await page.waitForFunction(() => !!window.__editor.doc.nodes.find((n) => n.node_id === 'load'));
  await waitSaved(page);
  const doc = (await api('GET', '/v1/chains/' + id)).doc;
  assert.equal(doc.entry_node, 'load');
  assert.deepEqual(doc.edges.map((e) => [e.id, e.source, e.target]), [['load->check', 'load', 'check'], ['check->each', 'check', 'each'], ['mine', 'load', 'each']]);
  assert.equal(doc.edges[2].condition, 'load.output.more');
  const by = Object.fromEntries(doc.nodes.map((n) => [n.node_id, n]));
  assert.equal(by.check.condition, 'length(load.output.items) > `0`');
  assert.equal(by.each.items_path, 'node_results.load.items');
  assert.equal(by.work.input_map.src, 'load.output');
  assert.equal(by.work.input_map.v, 'item');
  // one undo step puts every one back
  await clickCanvasBlank(page);
  await page.keyboard.press('Control+z');
  await page.waitForFunction(() => !!window.__editor.doc.nodes.find((n) => n.node_id === 'fetch') && window.__editor.doc.edges[0].id === 'fetch->check');
  await waitSaved(page);
  await page.done();
});

test('error positions: the field and the Validation panel both say line and column', async () => {
  const { page } = await openEditor({ name: uniq('pos'), nodes: [{ node_id: 'b', kind: 'branch', condition: 'input.ok', position: { x: 0, y: 0 } }] });
  await page.click('#node-table .select-node[data-node-id="b"]');
  await page.waitForSelector('.props input[data-f="condition"]');
  await page.fill('.props input[data-f="condition"]', 'length(input.items');
  await page.waitForSelector('.props .expr-err');
  assert.match(await page.textContent('.props .expr-err'), /line 1, column 19/);
  await waitSaved(page);
  await page.waitForFunction(() => [...document.querySelectorAll('#issues .issue-link')].some((b) => /line 1, column 19/.test(b.textContent)));
  assert.ok(!/position/.test(await page.textContent('#issues')), 'no byte positions in the panel');
  await page.done();
});

test('the node list pane is below the canvas, never over it, and the page fits the window; a branch diamond is selected by a click on its centre', async () => {
  const nodes = [];
  const edges = [];
  for (let i = 0; i < 40; i++) {
    nodes.push({ node_id: 'n' + i, kind: i === 0 ? 'branch' : 'tool', ...(i === 0 ? { condition: 'input.ok' } : { name: 'echo' }), position: { x: (i % 8) * 200, y: Math.floor(i / 8) * 110 } });
    if (i > 0) edges.push({ source: 'n' + (i - 1), target: 'n' + i, ...(i === 1 ? { label: 'true' } : {}) });
  }
  const { page } = await openEditor({ name: uniq('pane'), nodes, edges });
  const box = () => page.evaluate(() => {
    const r = document.getElementById('cy').getBoundingClientRect();
    const canvas = document.querySelector('#cy canvas').getBoundingClientRect();
    const l = document.querySelector('.node-list').getBoundingClientRect();
    return { w: r.width, h: r.height, bottom: r.bottom + window.scrollY, cw: canvas.width, ch: canvas.height, listTop: l.top + window.scrollY };
  });
  assert.equal(await page.evaluate(() => document.getElementById('node-list-pane').open), true);
  const open1 = await box();
  assert.ok(open1.listTop >= open1.bottom, 'the list starts below the canvas: ' + JSON.stringify(open1));
  assert.ok(open1.h > 450, 'the canvas keeps most of the height: ' + open1.h);
  assert.ok(await page.evaluate(() => document.scrollingElement.scrollHeight <= window.innerHeight), 'the list open, the page still fits the window');
  const rows = await page.evaluate(() => { const p = document.querySelector('.node-list-rows'); return { sh: p.scrollHeight, chh: p.clientHeight }; });
  assert.ok(rows.sh > rows.chh, 'the rows scroll in their own pane: ' + JSON.stringify(rows));
  await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
  await page.screenshot({ path: join(SHOTS, 'editor-list-open.png') });
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.click('#node-list-pane summary');
  await page.waitForFunction(() => !document.getElementById('node-list-pane').open);
  await page.waitForTimeout(100);
  const closed = await box();
  // closed, the canvas takes the list's room back; Cytoscape follows its box
  assert.equal(closed.w, open1.w, 'the canvas keeps its width');
  assert.ok(closed.h > open1.h, 'the canvas grows when the list closes: ' + JSON.stringify([open1.h, closed.h]));
  await page.waitForFunction(() => { const c = document.querySelector('#cy canvas'); return Math.abs(c.getBoundingClientRect().height - document.getElementById('cy').getBoundingClientRect().height) < 1; });
  await page.screenshot({ path: join(SHOTS, 'editor-list-closed.png') });
  // the choice is remembered
  await page.reload();
  await page.waitForSelector('#editor[data-ready="1"]');
  assert.equal(await page.evaluate(() => document.getElementById('node-list-pane').open), false);
  // opening the list scrolls it into view when its toggle event arrives (a
  // task after the click): wait for that before measuring the canvas
  const toggled = page.evaluate(() => new Promise((r) => document.getElementById('node-list-pane').addEventListener('toggle', () => requestAnimationFrame(() => r()), { once: true })));
  await page.click('#node-list-pane summary');
  await toggled;

  // the exact centre of the diamond (integer view so the click lands on it)
  await page.evaluate(() => window.scrollTo(0, 0));
  const p = await page.evaluate(() => {
    const cy = window.__editor.cy;
    const r = cy.container().getBoundingClientRect();
    const x = Math.ceil(r.left) + 300, y = Math.ceil(r.top) + 200;
    cy.viewport({ zoom: 1, pan: { x: x - r.left, y: y - r.top } }); // n0 sits at (0, 0)
    return { x, y };
  });
  assert.ok(Number.isInteger(p.x) && Number.isInteger(p.y), 'integer page coordinates ' + JSON.stringify(p));
  await page.mouse.click(p.x, p.y);
  await page.waitForFunction(() => window.__editor.cy.getElementById('n0').selected());
  await page.done();
});

test('the palette says in one line what each kind is for', async () => {
  const { page } = await openEditor({ name: uniq('palette'), nodes: [] });
  const items = await page.$$eval('.palette-item', (bs) => bs.map((b) => ({ kind: b.dataset.kind, label: b.querySelector('.kind-name').textContent.replace(/^\S+\s+/, ''), help: b.querySelector('.help').textContent, shown: b.querySelector('.help').getBoundingClientRect().height > 0 })));
  assert.equal(items.length, 9);
  for (const it of items) {
    assert.ok(it.shown && it.help.length > 20, 'help shown for ' + it.kind);
  }
  const by = Object.fromEntries(items.map((i) => [i.kind, i]));
  assert.equal(by.interrupt.label, 'Add an interrupt'); // read before the kind's help (the button's name is what it shows)
  assert.equal(by.agent.label, 'Add an agent'); // read before the kind's help (the button's name is what it shows)
  assert.equal(by.tool.label, 'Add a tool'); // read before the kind's help (the button's name is what it shows)
  assert.match(by.branch.help, /true or the false/);
  assert.match(by.condition.help, /first case/);
  assert.match(by.skill.help, /another saved chain/);
  assert.match(by.proc.help, /program/);
  assert.ok(!/seed/i.test(await page.textContent('body')), 'no "seed" on the page');
  await page.goto(BASE + '/');
  await page.waitForSelector('#chain-rows tr[data-chain-id]');
  assert.ok(!/seed/i.test(await page.textContent('body')), 'no "seed" on the chain list');
  await page.done();
});
