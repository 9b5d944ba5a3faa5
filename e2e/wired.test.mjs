// Browser test: a node added from the palette while another is selected
// comes after it, connected; from a condition node the new edge takes the
// next case with no edge yet. All by keyboard: the node list selects, Tab
// reaches the palette, Enter adds.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { launch, close, open, api, SHOTS, waitSaved } from './lib.mjs';

before(async () => { await launch(); });
after(async () => { await close(); });

const uniq = () => Date.now().toString(36) + Math.random().toString(36).slice(2, 6);

test('a node added while another is selected is placed after it and connected', async () => {
  const chain = await api('POST', '/v1/chains', {
    name: 'wired ' + uniq(),
    nodes: [
      { node_id: 'start', kind: 'tool', name: 'echo', position: { x: 0, y: 0 } },
      { node_id: 'route', kind: 'condition', cases: [{ handle: 'big', when: 'output.n > `10`' }, { handle: 'small', when: 'output.n <= `10`' }], position: { x: 260, y: 0 } },
      { node_id: 'big_path', kind: 'tool', name: 'echo', position: { x: 520, y: -100 } },
    ],
    edges: [{ source: 'start', target: 'route' }, { source: 'route', target: 'big_path', label: 'big' }],
  });
  const page = await open(`/chains/${chain.id}`);
  await page.waitForSelector('#editor[data-ready="1"]');

  const addAfter = async (nodeID, kind) => {
    await page.click(`#node-table .select-node[data-node-id="${nodeID}"]`);
    await page.focus(`.palette-item[data-kind="${kind}"]`);
    await page.keyboard.press('Enter');
    await waitSaved(page);
  };
  await addAfter('big_path', 'tool');
  let doc = await page.evaluate(() => window.__editor.doc);
  const added = doc.nodes[doc.nodes.length - 1];
  assert.deepEqual(doc.edges.find((e) => e.target === added.node_id), { id: 'big_path->' + added.node_id, source: 'big_path', target: added.node_id });
  const from = doc.nodes.find((n) => n.node_id === 'big_path');
  assert.ok(added.position.x > from.position.x, 'placed to the right of the node it follows');

  // From the condition: its free case is "small".
  await addAfter('route', 'tool');
  doc = await page.evaluate(() => window.__editor.doc);
  const second = doc.nodes[doc.nodes.length - 1];
  assert.equal(doc.edges.find((e) => e.target === second.node_id).label, 'small');

  // One undo takes back the node and its edge together.
  await page.click('#btn-undo');
  await waitSaved(page);
  doc = await page.evaluate(() => window.__editor.doc);
  assert.ok(!doc.nodes.some((n) => n.node_id === second.node_id) && !doc.edges.some((e) => e.target === second.node_id));
  const saved = await api('GET', `/v1/chains/${chain.id}`);
  assert.ok(saved.doc.edges.some((e) => e.source === 'big_path' && e.target === added.node_id), 'the edge is saved');
  await page.screenshot({ path: join(SHOTS, 'wired.png') });
  await page.done();
});

test('a node added after another keeps receiving its output when its tool takes a static input', async () => {
  const chain = await api('POST', '/v1/chains', {
    name: 'flows on ' + uniq(),
    nodes: [{ node_id: 'hello', kind: 'tool', name: 'echo', position: { x: 0, y: 0 } }],
    edges: [],
  });
  const page = await open(`/chains/${chain.id}`);
  await page.waitForSelector('#editor[data-ready="1"]');
  await page.click('#node-table .select-node[data-node-id="hello"]');
  await page.focus('.palette-item[data-kind="tool"]');
  await page.keyboard.press('Enter');
  await waitSaved(page);
  // The new node is selected: pick delay, which has a static input (ms).
  await page.waitForSelector('#props #tool-select');
  await page.selectOption('#props #tool-select', 'delay');
  await page.fill('#props .sf-field[data-path="input.ms"] input', '5');
  await waitSaved(page);
  let doc = await page.evaluate(() => window.__editor.doc);
  const wait = doc.nodes[doc.nodes.length - 1];
  assert.equal(wait.name, 'delay');
  assert.deepEqual(wait.input, { ms: 5 });
  assert.deepEqual(wait.input_map, { data: 'output' }, 'the data flows on through a visible input_map entry');
  await page.waitForFunction(() => /Receives: the output of `hello` as `data`/.test(document.querySelector('#receives')?.textContent || ''));
  await page.screenshot({ path: join(SHOTS, 'flows-on.png') });

  const started = await api('POST', `/v1/chains/${chain.id}/runs`, { input: { greeting: 'hi Ada' }, version: 'current' });
  let run;
  for (let i = 0; i < 200; i++) {
    run = await api('GET', '/v1/runs/' + started.run_id);
    if (run.status !== 'running' && run.status !== 'queued') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(run.status, 'completed', JSON.stringify(run.error));
  const out = run.nodes.find((n) => n.node_id === wait.node_id).output;
  assert.deepEqual(out, { greeting: 'hi Ada' }, 'the delay passes the greeting on');

  // Removing the entry is the user saying otherwise: it stays removed.
  await page.click('#props fieldset[data-f="input_map"] .remove-row');
  await waitSaved(page);
  doc = await page.evaluate(() => window.__editor.doc);
  assert.equal(doc.nodes.find((n) => n.node_id === wait.node_id).input_map, undefined);
  await page.done();
});

test('at 1366×768 the toolbar (one line), the canvas and the properties are all in view', async () => {
  const chain = await api('POST', '/v1/chains', { name: 'room to edit ' + uniq(), nodes: [{ node_id: 'a', kind: 'tool', name: 'echo', position: { x: 0, y: 0 } }], edges: [] });
  const page = await open();
  await page.setViewportSize({ width: 1366, height: 768 });
  await page.goto((await import('./lib.mjs')).BASE + `/chains/${chain.id}`);
  await page.waitForSelector('#editor[data-ready="1"]');
  const boxes = await page.evaluate(() => {
    const box = (sel) => { const r = document.querySelector(sel).getBoundingClientRect(); return { top: r.top, bottom: r.bottom, left: r.left, right: r.right, height: r.height, width: r.width }; };
    const tools = [...document.querySelectorAll('.toolbar > *:not(.sep):not(.visually-hidden)')].filter((e) => e.offsetParent !== null).map((e) => e.getBoundingClientRect().top);
    return { toolbar: box('.toolbar'), canvas: box('#cy'), props: box('#props'), tops: tools, scroll: document.documentElement.scrollHeight, inner: window.innerHeight, scrollW: document.documentElement.scrollWidth, innerW: window.innerWidth };
  });
  const rows = new Set(boxes.tops.map((t) => Math.round(t / 10)));
  assert.ok(rows.size <= 2 && Math.max(...boxes.tops) - Math.min(...boxes.tops) < 12, 'the toolbar keeps one line: ' + JSON.stringify(boxes.tops));
  for (const [name, b] of Object.entries({ toolbar: boxes.toolbar, canvas: boxes.canvas, properties: boxes.props })) {
    assert.ok(b.top >= 0 && b.bottom <= 768 && b.left >= 0 && b.right <= 1366 && b.height > 40, `${name} is in view: ${JSON.stringify(b)}`);
  }
  assert.ok(boxes.canvas.width >= 600 && boxes.canvas.height >= 300, 'the canvas has room: ' + JSON.stringify(boxes.canvas));
  assert.ok(boxes.scrollW <= boxes.innerW, 'no sideways scrolling');
  await page.screenshot({ path: join(SHOTS, 'editor-1366.png') });
  await page.done();
});
