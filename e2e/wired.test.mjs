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
  let doc = await page.evaluate(() => window.__studio.doc);
  const added = doc.nodes[doc.nodes.length - 1];
  assert.deepEqual(doc.edges.find((e) => e.target === added.node_id), { id: 'big_path->' + added.node_id, source: 'big_path', target: added.node_id });
  const from = doc.nodes.find((n) => n.node_id === 'big_path');
  assert.ok(added.position.x > from.position.x, 'placed to the right of the node it follows');

  // From the condition: its free case is "small".
  await addAfter('route', 'tool');
  doc = await page.evaluate(() => window.__studio.doc);
  const second = doc.nodes[doc.nodes.length - 1];
  assert.equal(doc.edges.find((e) => e.target === second.node_id).label, 'small');

  // One undo takes back the node and its edge together.
  await page.click('#btn-undo');
  await waitSaved(page);
  doc = await page.evaluate(() => window.__studio.doc);
  assert.ok(!doc.nodes.some((n) => n.node_id === second.node_id) && !doc.edges.some((e) => e.target === second.node_id));
  const saved = await api('GET', `/v1/chains/${chain.id}`);
  assert.ok(saved.doc.edges.some((e) => e.source === 'big_path' && e.target === added.node_id), 'the edge is saved');
  await page.screenshot({ path: join(SHOTS, 'wired.png') });
  await page.done();
});
