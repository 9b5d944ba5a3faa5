// End-to-end tests of the designer, driven through the pages like a person
// would (the large-chain set-up alone uses the API). Run by `make e2e`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BASE, SHOTS, launch, close, open, api, waitSaved, nodePos, percentile, bigChain, loadModule } from './lib.mjs';

before(async () => { await launch(); });
after(async () => { await close(); });

const figures = {};
let builtChainId = '';

async function chainIdByName(name) {
  const list = await api('GET', '/v1/chains?q=' + encodeURIComponent(name));
  const items = list.chains || list.items || list;
  const c = items.find((x) => x.name === name);
  assert.ok(c, 'chain ' + name + ' exists');
  return c.id;
}

async function issues(page) {
  return page.evaluate(() => [...document.querySelectorAll('#issues .issue-link')].map((b) => ({ node: b.dataset.nodeId, edge: b.dataset.edgeId, sev: b.dataset.severity, text: b.textContent.trim() })));
}

// addFromPalette adds a node with nothing selected, so it comes unconnected
// (a node added while one is selected is wired after it: wired.test.mjs).
async function addFromPalette(page, kind) {
  // (braces: returning the Cytoscape collection would make Playwright
  // serialize the whole graph, which can crash the page)
  await page.evaluate(() => { window.__editor.cy.$(':selected').unselect(); });
  const before = await page.evaluate(() => window.__editor.doc.nodes.length);
  await page.click(`.palette-item[data-kind="${kind}"]`);
  await page.waitForFunction((n) => window.__editor.doc.nodes.length === n + 1, before);
  return page.evaluate(() => window.__editor.doc.nodes.at(-1).node_id);
}

async function selectNode(page, id, additive) {
  for (let attempt = 0; attempt < 3; attempt++) {
    const p = await nodePos(page, id);
    if (additive) await page.keyboard.down('Shift');
    // a little off centre: a click exactly level with a diamond's side
    // vertices misses it in Cytoscape's hit test
    await page.mouse.click(p.x + 3, p.y + 4);
    if (additive) await page.keyboard.up('Shift');
    if (await page.evaluate((id) => window.__editor.cy.getElementById(id).selected(), id)) return;
    await page.waitForTimeout(250); // the canvas was still settling after a gesture
  }
  assert.fail('could not select node ' + id + ' by clicking it');
}

test('chain list: examples, search, hostile names render as text', async () => {
  const page = await open('/');
  await page.waitForSelector('#chain-rows tr[data-chain-id]');
  const names = await page.$$eval('#chain-rows .chain-name', (as) => as.map((a) => a.textContent));
  assert.ok(names.includes('approval') && names.includes('branch'), 'examples are listed: ' + names);
  // other tests' chains may match too ("Designer approval …"): every row shown matches
  const all = names.length;
  await page.fill('#chain-search', 'appro');
  await page.waitForFunction((all) => document.querySelectorAll('#chain-rows tr[data-chain-id]').length < all, all);
  const found = await page.$$eval('#chain-rows .chain-name', (as) => as.map((a) => a.textContent));
  assert.ok(found.includes('approval') && found.every((n) => /appro/i.test(n)), 'the search keeps the matching chains: ' + found);
  await page.fill('#chain-search', '');
  await page.waitForFunction(() => document.querySelectorAll('#chain-rows tr[data-chain-id]').length > 1);
  await page.screenshot({ path: join(SHOTS, 'chains.png') });
  await page.done();
});

test('build a 4-node chain with a branch, with live validation, drag and connect', async () => {
  const page = await open('/');
  await page.click('#new-chain');
  await page.fill('#new-name', 'e2e-new-' + Date.now());
  await page.keyboard.press('Enter');
  await page.waitForSelector('#editor[data-ready="1"]');
  const a = await addFromPalette(page, 'tool');
  const b = await addFromPalette(page, 'branch');
  const c = await addFromPalette(page, 'tool');
  await waitSaved(page);
  // spread them out so edges can be drawn
  await page.click('#btn-layout');
  await waitSaved(page);
  // three nodes, no edges: every node is unreachable (an error)
  let found = await issues(page);
  assert.ok(found.some((i) => i.node === c && i.sev === 'error' && /unreachable|not connected|no edge/i.test(i.text)), 'unreachable error shown: ' + JSON.stringify(found));
  assert.equal(await page.isDisabled('#btn-run'), true, 'run is disabled while there are errors');
  assert.match(await page.getAttribute('#btn-run', 'title'), /fix \d+ error/);
  assert.ok(await page.evaluate((c) => window.__editor.cy.getElementById(c).hasClass('issue-error'), c), 'the node is marked on the canvas');

  // connect a → b by dragging from a's handle to b
  const pa = await nodePos(page, a);
  await page.mouse.move(pa.x, pa.y);
  await page.waitForFunction(() => { const h = window.__editor.cy.getElementById('__handle__'); return h.nonempty() && h.visible(); });
  const hp = await page.evaluate(() => {
    const cy = window.__editor.cy;
    const p = cy.getElementById('__handle__').renderedPosition();
    const r = cy.container().getBoundingClientRect();
    return { x: r.left + p.x, y: r.top + p.y };
  });
  const pb = await nodePos(page, b);
  await page.mouse.move(hp.x, hp.y);
  await page.mouse.down();
  await page.mouse.move((hp.x + pb.x) / 2, (hp.y + pb.y) / 2, { steps: 5 });
  await page.mouse.move(pb.x, pb.y, { steps: 8 });
  await page.waitForTimeout(200);
  await page.mouse.up();
  await page.waitForFunction(([a, b]) => window.__editor.doc.edges.some((e) => e.source === a && e.target === b), [a, b]);

  // the branch's condition, checked as typed: a syntax error shows a caret
  await page.waitForTimeout(300);
  await selectNode(page, b);
  await page.waitForSelector('.props[data-target="node"] input[data-f="condition"]');
  await page.fill('input[data-f="condition"]', 'length(input.items');
  await page.waitForSelector('.props .expr-err pre.caret');
  assert.match(await page.textContent('.props .expr-err'), /column/);
  await page.fill('input[data-f="condition"]', 'length(input.items) > `1`');
  await page.waitForSelector('.props .expr-ok');

  // connect b → c (true) with the keyboard-friendly Connect button
  await selectNode(page, b);
  await selectNode(page, c, true);
  await page.click('#btn-connect');
  await page.waitForFunction(([b, c]) => window.__editor.doc.edges.some((e) => e.source === b && e.target === c && e.label === 'true'), [b, c]);
  await waitSaved(page);
  found = await issues(page);
  assert.ok(!found.some((i) => i.node === c && i.sev === 'error'), 'the unreachable error is gone once connected: ' + JSON.stringify(found));

  // a fourth node on the false branch: unreachable until connected
  const d = await addFromPalette(page, 'tool');
  await waitSaved(page);
  found = await issues(page);
  assert.ok(found.some((i) => i.node === d && i.sev === 'error'), 'new node is unreachable');
  await page.click(`#node-table .select-node[data-node-id="${b}"]`);
  await selectNode(page, d, true);
  await page.click('#btn-connect');
  await page.waitForFunction(([b, d]) => window.__editor.doc.edges.some((e) => e.source === b && e.target === d && e.label === 'false'), [b, d]);
  await waitSaved(page);
  found = await issues(page);
  assert.ok(!found.some((i) => i.sev === 'error'), 'no errors left: ' + JSON.stringify(found));
  assert.equal(await page.isDisabled('#btn-run'), false, 'run is enabled');

  // undo / redo
  const edgesBefore = await page.evaluate(() => window.__editor.doc.edges.length);
  await page.click('#cy', { position: { x: 5, y: 5 } });
  await page.keyboard.press('Control+z');
  await page.waitForFunction((n) => window.__editor.doc.edges.length === n - 1, edgesBefore);
  await page.keyboard.press('Control+Shift+z');
  await page.waitForFunction((n) => window.__editor.doc.edges.length === n, edgesBefore);
  await waitSaved(page);

  // rename the chain from the chain panel
  await page.click('#cy', { position: { x: 5, y: 5 } });
  await page.waitForSelector('.props[data-target="chain"]');
  const name = 'e2e-branch-' + Date.now();
  await page.fill('.props[data-target="chain"] input[data-f="name"]', name);
  await waitSaved(page);
  await page.waitForFunction((n) => document.getElementById('chain-title').textContent === n, name);
  await page.click('#btn-layout');
  await waitSaved(page);
  await selectNode(page, b);
  await page.waitForSelector('.props[data-target="node"] input[data-f="condition"]');
  await page.screenshot({ path: join(SHOTS, 'editor.png') });

  // reload: everything was saved
  const id = await page.getAttribute('#editor', 'data-chain-id');
  builtChainId = id;
  await page.reload();
  await page.waitForSelector('#editor[data-ready="1"]');
  const doc = await page.evaluate(() => window.__editor.doc);
  assert.equal(doc.name, name);
  assert.equal(doc.nodes.length, 4);
  assert.equal(doc.edges.length, 3);
  assert.equal(doc.nodes.find((n) => n.node_id === b).condition, 'length(input.items) > `1`');
  assert.equal(await page.textContent('#node-count'), '4');

  // the chain's own properties come with the page, and edits there save
  await page.fill('#props [data-target="chain"] input[data-f="description"]', 'built in the browser');
  await waitSaved(page);
  assert.equal((await api('GET', '/v1/chains/' + id)).doc.description, 'built in the browser');

  // run it: phases arrive in order
  await page.click('#btn-run');
  await page.fill('#run-input', '{"items": [1, 2, 3]}');
  await page.click('#run-submit');
  await page.waitForURL(/\/runs\//);
  await page.waitForSelector('#runpage[data-ready="1"]');
  await page.waitForFunction(() => document.getElementById('runpage').dataset.status === 'completed', null, { timeout: 15000 });
  const phases = await page.evaluate(() => window.__run.phases);
  const idx = (node, ph) => phases.findIndex((p) => p[1] === node && p[2] === ph);
  assert.ok(idx(a, 'start') >= 0 && idx(a, 'start') < idx(a, 'done'), 'a starts then finishes: ' + JSON.stringify(phases));
  assert.ok(idx(a, 'done') < idx(b, 'start'), 'a before b');
  assert.ok(idx(b, 'done') < idx(c, 'start'), 'b before c');
  assert.ok(idx(d, 'skip') > idx(b, 'done'), 'd skipped after b decided');
  const seqs = phases.map((p) => p[0]);
  assert.deepEqual(seqs, [...seqs].sort((x, y) => x - y), 'events in seq order');
  assert.equal(new Set(seqs).size, seqs.length, 'no duplicates');
  const timelineSeqs = await page.$$eval('#timeline .ev', (lis) => lis.map((l) => Number(l.dataset.seq)));
  assert.equal(new Set(timelineSeqs).size, timelineSeqs.length, 'timeline has no duplicates');
  assert.ok(await page.evaluate((d) => !document.getElementById('editor') && document.querySelector(`#node-table tr[data-node-id="${d}"] .note-cell`).textContent.includes('branch not taken'), d), 'skip reason shown');
  // reload mid-page: same timeline, no duplicates
  await page.reload();
  await page.waitForSelector('#runpage[data-ready="1"]');
  const again = await page.$$eval('#timeline .ev', (lis) => lis.map((l) => Number(l.dataset.seq)));
  assert.deepEqual(again, timelineSeqs);
  await page.screenshot({ path: join(SHOTS, 'run.png') });
  await page.done();
});

test('approval: the run pauses, Approve resumes it from the page; re-run from a node', async () => {
  const page = await open('/');
  await page.click('#chain-rows a.chain-name:text-is("approval")');
  await page.waitForSelector('#editor[data-ready="1"]');
  await page.click('#btn-run');
  await page.fill('#run-input', '{"amount": "oops"');
  await page.waitForSelector('#run-input-check.expr-err');
  assert.equal(await page.isDisabled('#run-submit'), true, 'bad JSON cannot be submitted');
  await page.fill('#run-input', '{"amount": 120, "customer": "Ann <script>x</script>"}');
  await page.click('#run-submit');
  await page.waitForURL(/\/runs\//);
  await page.waitForSelector('#btn-approve', { timeout: 15000 });
  assert.match(await page.textContent('#prompt'), /Approve this refund/);
  await page.waitForFunction(() => !document.getElementById('editor') && window.__run && window.__run.phases.some((p) => p[1] === 'approve' && p[2] === 'paused'));
  assert.ok(await page.evaluate(() => window.cytoscape && document.querySelector('#node-table tr[data-node-id="approve"] .phase-cell').textContent === 'paused'));
  await page.screenshot({ path: join(SHOTS, 'run-paused.png') });
  const pausedURL = page.url();
  // Approve reloads the same URL: the page to read is the new one, once its
  // script has applied the run's events (a run this short is rendered
  // completed before the script has read them)
  await page.evaluate(() => { window.__beforeApprove = true; });
  await page.click('#btn-approve');
  await page.waitForFunction(() => !window.__beforeApprove && document.getElementById('runpage')?.dataset.ready === '1' && document.getElementById('runpage').dataset.status === 'completed', null, { timeout: 15000 });
  assert.equal(page.url(), pausedURL, 'same run, resumed');
  const phases = await page.evaluate(() => window.__run.phases);
  assert.ok(phases.some((p) => p[1] === 'pay' && p[2] === 'done'), 'approved: pay ran ' + JSON.stringify(phases));
  assert.ok(phases.some((p) => p[1] === 'notify' && p[2] === 'skip'), 'notify skipped');

  // the drawer shows a node's input and output; hostile text stays text
  await page.click('#node-table .select-node[data-node-id="prepare"]');
  await page.waitForSelector('#drawer .drawer[data-node-id="prepare"]');
  assert.match(await page.textContent('#drawer'), /Ann <script>x<\/script>/);
  assert.equal(await page.$$eval('#drawer script', (s) => s.length), 0);

  // re-run from "pay": a new run that keeps the upstream outputs
  await page.click('#node-table .select-node[data-node-id="pay"]');
  await page.waitForSelector('#drawer .drawer[data-node-id="pay"] #btn-rerun');
  await page.click('#btn-rerun');
  await page.click('#rerun-submit'); // the re-run asks first
  await page.waitForURL((u) => u.href !== pausedURL && /\/runs\//.test(u.href));
  await page.waitForFunction(() => document.getElementById('runpage')?.dataset.ready === '1' && document.getElementById('runpage').dataset.status === 'completed', null, { timeout: 15000 });
  const rerun = await page.evaluate(() => window.__run.phases);
  assert.ok(rerun.some((p) => p[1] === 'pay' && p[2] === 'done'), 'pay re-ran');
  assert.ok(!rerun.some((p) => p[1] === 'approve' && p[2] === 'paused'), 'the approval was not asked again');
  assert.ok(await page.isVisible('a.button:text("Parent run")'));
  await page.done();
});

test('map progress and loop iterations show on the run page', async () => {
  for (const [name, input, node, note] of [['map', { files: ['a.txt', 'b.txt'] }, 'batch', '2/2'], ['loop', {}, 'draft', 'iteration 3']]) {
    const page = await open('/');
    await page.click(`#chain-rows a.chain-name:text-is("${name}")`);
    await page.waitForSelector('#editor[data-ready="1"]');
    await page.click('#btn-run');
    await page.fill('#run-input', JSON.stringify(input));
    await page.click('#run-submit');
    await page.waitForURL(/\/runs\//);
    await page.waitForSelector('#runpage[data-ready="1"]');
    await page.waitForFunction(() => document.getElementById('runpage').dataset.status === 'completed', null, { timeout: 15000 });
    await page.waitForFunction(([node, note]) => document.querySelector(`#node-table tr[data-node-id="${node}"] .note-cell`).textContent.includes(note), [node, note]);
    const phases = await page.$$eval('#node-table .phase-cell', (cells) => cells.map((c) => c.textContent));
    assert.ok(phases.every((p) => p === 'done'), name + ': every node done: ' + phases);
    await page.done();
  }
});

test('runs and versions pages: history, visual diff, restore', async () => {
  assert.ok(builtChainId, 'the chain built earlier');
  const page = await open('/chains/' + builtChainId + '/runs');
  await page.waitForSelector('#runs-table tr[data-run-id]');
  assert.match(await page.textContent('#runs-table'), /completed/);
  await page.screenshot({ path: join(SHOTS, 'runs.png') });
  await page.click('a#btn-versions, a.button:text("Versions")');
  await page.waitForSelector('.version-list li');
  // the build's autosaves are folded into bursts: unfold them
  await page.$$eval('.version-list details', (ds) => ds.forEach((d) => { d.open = true; }));
  const versions = await page.$$eval('.version-list li.version a', (as) => as.map((a) => a.getAttribute('href')));
  assert.ok(versions.length > 5, 'autosave made versions');
  // a version from the middle of the build: some nodes and edges differ
  await page.locator('.version-list li.version a').nth(Math.ceil(versions.length / 2) - 1).click();
  await page.waitForSelector('#versions[data-ready="1"]');
  const classes = await page.evaluate(() => window.__versions.cy.elements().map((e) => e.classes().join(' ')).join(' '));
  assert.match(classes, /diff-(added|removed|changed)/, 'differences are highlighted on the canvas');
  assert.ok(await page.isVisible('.diff-summary li'));
  await page.screenshot({ path: join(SHOTS, 'versions.png') });
  const cur = Number(await page.getAttribute('#versions', 'data-current'));
  await page.click('#btn-restore');
  await page.waitForSelector('#editor[data-ready="1"]');
  assert.equal(Number(await page.getAttribute('#editor', 'data-version')), cur + 1, 'restoring made a new version');
  await page.done();
});

test('export matches the API, import a file, import errors are shown before saving', async () => {
  const page = await open('/chains/' + builtChainId);
  await page.waitForSelector('#editor[data-ready="1"]');
  const [download] = await Promise.all([page.waitForEvent('download'), (async () => { await page.click('#export-menu > summary'); await page.click('#btn-export'); })()]);
  const file = await download.path();
  const exported = readFileSync(file, 'utf8');
  const fromAPI = await (await fetch(BASE + '/v1/chains/' + builtChainId + '/export?format=studio&version=draft')).text();
  assert.deepEqual(JSON.parse(exported), JSON.parse(fromAPI));
  const doc = JSON.parse(exported);
  await page.done();

  const list = await open('/');
  // a broken document: the decoder's path and message, nothing saved
  await list.click('#open-import');
  await list.fill('#import-json', '{"name": "broken", "nodes": [{"node_id": "a", "kind": "tool", "retry": {"max_attempts": "3"}}]}');
  await list.click('#import-submit');
  await list.waitForSelector('#import-result .form-error');
  assert.match(await list.textContent('#import-result'), /nodes\[0\].*retry\.max_attempts/);
  await list.click('#import-dialog .close-dialog');
  assert.equal(await list.$$eval('#chain-rows .chain-name', (as) => as.filter((a) => a.textContent === 'broken').length), 0);

  // a file with a hostile name and label
  const dir = mkdtempSync(join(tmpdir(), 'studio-e2e-'));
  const hostile = '<script>alert(1)</script> & "friends"';
  doc.name = hostile;
  doc.nodes[0].label = '<img src=x onerror=alert(2)>';
  const path = join(dir, 'hostile.json');
  writeFileSync(path, JSON.stringify(doc));
  await list.click('#open-import');
  await list.setInputFiles('#import-file', path);
  await list.click('#import-submit');
  await list.waitForSelector('#editor[data-ready="1"]');
  assert.equal(await list.textContent('#chain-title'), hostile);
  assert.equal(await list.$$eval('main script, main img', (x) => x.length), 0, 'no markup was injected');
  assert.equal(await list.evaluate(() => window.__editor.doc.nodes.length), doc.nodes.length);
  await list.goto(BASE + '/');
  assert.ok((await list.$$eval('#chain-rows .chain-name', (as) => as.map((a) => a.textContent))).includes(hostile), 'the name is listed as text');
  // delete it (with confirmation)
  const row = list.locator('#chain-rows tr', { hasText: 'alert(1)' });
  await row.locator('button', { hasText: 'Delete' }).click();
  await list.waitForFunction(() => ![...document.querySelectorAll('#chain-rows .chain-name')].some((a) => a.textContent.includes('alert(1)')));
  await list.done();
});

test('two tabs: the second save is a conflict, nothing is overwritten', async () => {
  const a = await open('/chains/' + builtChainId);
  const b = await open('/chains/' + builtChainId);
  await a.waitForSelector('#editor[data-ready="1"]');
  await b.waitForSelector('#editor[data-ready="1"]');
  await a.click('.palette-item[data-kind="interrupt"]');
  await waitSaved(a);
  await b.click('.palette-item[data-kind="tool"]');
  await b.waitForSelector('#conflict:not([hidden])');
  assert.equal(await b.getAttribute('#save-state', 'data-state'), 'conflict');
  const doc = await api('GET', '/v1/chains/' + builtChainId);
  const nodes = (doc.doc || doc).nodes;
  assert.ok(nodes.some((n) => n.kind === 'interrupt'), 'the first tab\'s edit is kept');
  await b.click('#btn-reload');
  await b.waitForSelector('#editor[data-ready="1"]');
  assert.ok(await b.evaluate(() => window.__editor.doc.nodes.some((n) => n.kind === 'interrupt')));
  await a.done();
  await b.done();
});

test('large chains: 1,000 nodes open interactive; validation round-trip at 500 nodes', async () => {
  const big = await api('POST', '/v1/chains', bigChain('e2e-big-1000-' + Date.now(), 1000));
  const page = await open();
  const t0 = Date.now();
  await page.goto(BASE + '/chains/' + big.id);
  await page.waitForSelector('#editor[data-ready="1"]', { timeout: 20000 });
  const wall = Date.now() - t0;
  const tti = await page.evaluate(() => window.__editor.readyAt);
  // interactive: a click selects a node and shows its properties
  await selectNode(page, 'n0');
  await page.waitForSelector('.props[data-id="n0"]');
  // The canvas opened on the entry node at a readable zoom and fills in the
  // rest behind: every node and edge arrives, with nothing left in the queue.
  await page.waitForSelector('#editor[data-canvas-loaded="1"]', { timeout: 20000 });
  const loaded = await page.evaluate(() => ({ at: window.__editor.canvasLoadedAt, nodes: window.__editor.cy.nodes().not('.eh-handle').length, edges: window.__editor.cy.edges().length, zoom: window.__editor.cy.zoom() }));
  assert.deepEqual([loaded.nodes, loaded.edges], [1000, 999]);
  assert.ok(loaded.zoom >= 0.5, 'a large chain opens at a readable zoom, was ' + loaded.zoom);
  assert.ok(await page.isHidden('#cy-loading'));
  await page.click('#btn-fit');
  assert.ok(await page.evaluate(() => window.__editor.cy.zoom()) < 0.3, 'Fit shows the whole chain');
  figures.open1000 = { tti_ms: Math.round(tti), wall_ms: wall, all_drawn_ms: Math.round(loaded.at) };
  console.log(`FIGURE editor open, 1000 nodes: interactive after ${Math.round(tti)} ms (navigation start → ready), ${wall} ms wall clock, every node drawn after ${Math.round(loaded.at)} ms; target 2000 ms (interactive): ${tti < 2000 ? 'met' : 'MISSED'}`);
  // The target is 2 s (1.5-1.8 s here) and the FIGURE line says whether it
  // was met; the suite fails only past a ceiling (E2E_TTI_MAX_MS, default 3x
  // the target) so that a loaded machine does not fail CI. The progressive
  // opening itself is asserted above (readable zoom, still loading at ready).
  assert.ok(tti < Number(process.env.E2E_TTI_MAX_MS || 6000), '1,000-node chain interactive within the ceiling, was ' + Math.round(tti) + ' ms');

  // An edit while the canvas is still filling in finishes the load first, so
  // the canvas and the document never disagree.
  await page.reload();
  await page.waitForSelector('#editor[data-ready="1"]', { timeout: 20000 });
  // (whether the loader is still busy when the test gets to look is a race;
  // what was drawn at the moment the page became ready is not)
  assert.ok(await page.evaluate(() => window.__editor.nodesAtReady) < 1000, 'ready before every node is drawn');
  const added = await addFromPalette(page, 'tool');
  await loadModule(page, 'canvas');
  assert.deepEqual(await page.evaluate((id) => [window.__editor.cy.nodes().not('.eh-handle').length, window.__editor.cy.edges().length, window.__editor.cy.getElementById(id).nonempty(), window.__modules.canvas.loading(window.__editor.cy)], added), [1001, 999, true, false]);
  assert.equal(await page.getAttribute('#editor', 'data-canvas-loaded'), '1');
  await waitSaved(page);
  await page.done();

  // The versions page of a large chain opens on the first difference, drawn
  // with its highlight, and fills in the rest.
  const vp = await open('/chains/' + big.id + '/versions?v=1');
  await vp.waitForSelector('#versions[data-ready="1"]', { timeout: 20000 });
  const first = await vp.evaluate((id) => {
    const cy = window.__versions.cy, n = cy.getElementById(id), ext = cy.extent(), p = n.position();
    return { present: n.nonempty(), added: n.hasClass('diff-added'), inView: p.x >= ext.x1 && p.x <= ext.x2 && p.y >= ext.y1 && p.y <= ext.y2, partAtReady: window.__versions.nodesAtReady < 1001 };
  }, added);
  assert.deepEqual(first, { present: true, added: true, inView: true, partAtReady: true });
  await loadModule(vp, 'canvas');
  await vp.waitForFunction(() => !window.__modules.canvas.loading(window.__versions.cy), null, { timeout: 20000 });
  assert.equal(await vp.evaluate(() => window.__versions.cy.nodes().length), 1001);
  await vp.done();

  // The run page of a large chain opens the same way; nodes and edges drawn
  // after the page is ready still show what the run did.
  const runChain = await api('POST', '/v1/chains', bigChain('e2e-big-run-' + Date.now(), 1000));
  const started = await api('POST', '/v1/chains/' + runChain.id + '/runs', { input: {} });
  const rp = await open();
  await rp.goto(BASE + '/runs/' + started.run_id);
  await rp.waitForSelector('#runpage[data-ready="1"]', { timeout: 20000 });
  const runReady = await rp.evaluate(() => window.__run.readyAt);
  await rp.waitForSelector('#runpage[data-status="completed"]', { timeout: 20000 });
  await rp.waitForSelector('#runpage[data-canvas-loaded="1"]', { timeout: 20000 });
  const states = await rp.evaluate(() => {
    const cy = window.__run.cy;
    return { nodes: cy.nodes().length, done: cy.nodes('.ph-done').length, edges: cy.edges().length, fired: cy.edges('.fired').length };
  });
  assert.deepEqual(states, { nodes: 1000, done: 1000, edges: 999, fired: 999 });
  console.log(`FIGURE run page, 1000 nodes: ready after ${Math.round(runReady)} ms`);
  await rp.done();

  const mid = await api('POST', '/v1/chains', bigChain('e2e-big-500-' + Date.now(), 500));
  const p = await open('/chains/' + mid.id);
  await p.waitForSelector('#editor[data-ready="1"]', { timeout: 20000 });
  await selectNode(p, 'n2');
  await p.waitForSelector('.props[data-id="n2"] input[data-f="label"]');
  const rtts = [];
  for (let i = 0; i < 40; i++) {
    const saves = Number((await p.getAttribute('#editor', 'data-saves')) || 0);
    await p.fill('.props[data-id="n2"] input[data-f="label"]', 'Step 2 edit ' + i);
    await p.waitForFunction((n) => Number(document.getElementById('editor').dataset.saves || 0) > n && document.getElementById('save-state').dataset.state === 'saved', saves);
    rtts.push(Number(await p.getAttribute('#editor', 'data-rtt')));
  }
  const p50 = percentile(rtts, 50), p95 = percentile(rtts, 95);
  figures.rtt500 = { p50, p95, n: rtts.length };
  console.log(`FIGURE validation round-trip, 500 nodes: p50 ${p50.toFixed(1)} ms, p95 ${p95.toFixed(1)} ms over ${rtts.length} edits; target p95 100 ms: ${p95 < 100 ? 'met' : 'MISSED'}`);
  assert.ok(p95 < Number(process.env.E2E_RTT_MAX_MS || 400), 'p95 within the ceiling, was ' + p95.toFixed(1));
  await p.done();
});

test('copy and paste nodes through the clipboard, across tabs', async () => {
  const a = await open('/chains/' + builtChainId);
  await a.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: BASE });
  await a.waitForSelector('#editor[data-ready="1"]');
  await a.click('#node-table .select-node[data-node-id="tool"]');
  await a.keyboard.press('Control+c');
  const copied = await a.evaluate(() => navigator.clipboard.readText());
  assert.match(copied, /"node_id":"tool"/);
  const b = await a.context().newPage();
  b.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') a.errors.push('tab b console ' + m.type() + ': ' + m.text()); });
  b.on('pageerror', (e) => a.errors.push('tab b pageerror: ' + e.message));
  await b.goto(BASE + '/');
  await b.click('#new-chain');
  await b.fill('#new-name', 'e2e-paste-' + Date.now());
  await b.keyboard.press('Enter');
  await b.waitForSelector('#editor[data-ready="1"]');
  await b.locator('#cy').click({ position: { x: 20, y: 20 } });
  await b.keyboard.press('Control+v');
  await b.waitForFunction(() => window.__editor.doc.nodes.length === 1);
  await b.keyboard.press('Control+v');
  await b.waitForFunction(() => window.__editor.doc.nodes.length === 2);
  const ids = await b.evaluate(() => window.__editor.doc.nodes.map((n) => n.node_id));
  assert.equal(new Set(ids).size, 2, 'pasted ids are unique: ' + ids);
  await waitSaved(b);
  await a.done();
});

test('dark theme renders', async () => {
  const page = await open('/chains/' + builtChainId, { colorScheme: 'dark' });
  await page.waitForSelector('#editor[data-ready="1"]');
  const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.notEqual(bg, 'rgb(245, 247, 250)', 'dark background');
  await page.screenshot({ path: join(SHOTS, 'editor-dark.png') });
  await page.done();
});
