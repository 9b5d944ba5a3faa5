// Browser test of "Extract to sub-chain": select two nodes of a
// simple chain with the mouse, extract them from the keyboard, and check
// that the parent shows one skill node, both chains validate, and a run of
// the parent ends with the same output as before. Screenshots go to
// EXTRACT_SHOTS (default: the OS temp dir).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, close, open, api, waitSaved, nodePos } from './lib.mjs';

const SHOTS = process.env.EXTRACT_SHOTS || join(tmpdir(), 'extract-shots');
mkdirSync(SHOTS, { recursive: true });

before(async () => { await launch(); });
after(async () => { await close(); });

const uniq = () => Date.now().toString(36) + Math.random().toString(36).slice(2, 6);

async function waitRun(id) {
  for (let i = 0; i < 400; i++) {
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

function chainDoc(name) {
  return {
    name,
    nodes: [
      { node_id: 'a', kind: 'tool', name: 'echo', label: 'Fetch', input_map: { v: 'input.x' }, position: { x: 0, y: 0 } },
      { node_id: 'b', kind: 'tool', name: 'echo', label: 'Pass on', position: { x: 220, y: 0 } },
      { node_id: 'c', kind: 'tool', name: 'echo', label: 'Shape', input: { tag: 'c' }, input_map: { from_b: 'b.output.v' }, position: { x: 440, y: 0 } },
      { node_id: 'd', kind: 'tool', name: 'echo', label: 'Send', input_map: { got: 'c.output.from_b' }, position: { x: 660, y: 0 } },
    ],
    edges: [{ source: 'a', target: 'b' }, { source: 'b', target: 'c' }, { source: 'c', target: 'd', condition: "output.tag == 'c'" }],
  };
}

test('extract two nodes to a sub-chain: one skill node, both valid, same run output', async () => {
  const name = 'extract-' + uniq();
  const ch = await api('POST', '/v1/chains', chainDoc(name));
  const before = await runChain(ch.id, { x: 41 });
  assert.equal(before.status, 'completed');
  assert.deepEqual(before.final_output, { got: 41 });

  const page = await open('/chains/' + ch.id);
  await page.waitForFunction(() => document.getElementById('editor').dataset.ready === '1');
  // select b, then c with Shift, as a person does
  const pb = await nodePos(page, 'b');
  await page.mouse.click(pb.x, pb.y);
  const pc = await nodePos(page, 'c');
  await page.keyboard.down('Shift');
  await page.mouse.click(pc.x, pc.y);
  await page.keyboard.up('Shift');
  await page.waitForFunction(() => window.__editor.cy.nodes(':selected').length === 2);
  await page.locator('#btn-extract').waitFor();
  await page.screenshot({ path: join(SHOTS, 'extract-1-selected.png') });

  // `?` lists the shortcut
  await page.keyboard.press('?');
  await page.locator('#shortcuts-dialog').getByText('Extract the selected nodes').waitFor();
  await page.keyboard.press('Escape');

  // E opens the dialog; a name taken is refused in the dialog
  await page.locator('#cy').focus();
  await page.keyboard.press('e');
  const dlg = page.locator('#extract-dialog');
  await dlg.waitFor();
  assert.match(await dlg.locator('h2').textContent(), /Extract 2 nodes/);
  assert.equal(await page.evaluate(() => document.activeElement.id), 'extract-name');
  await page.keyboard.type(name);
  await page.keyboard.press('Enter');
  await dlg.locator('#extract-error').getByText('already exists').waitFor();
  await page.screenshot({ path: join(SHOTS, 'extract-2-refused.png') });
  // Chromium logs the refused request (409) itself; that one is expected
  const i = page.errors.findIndex((e) => e.includes('status of 409'));
  assert.ok(i >= 0);
  page.errors.splice(i, 1);

  const sub = name + '-inner';
  await page.fill('#extract-name', sub);
  await page.keyboard.press('Enter');
  await dlg.waitFor({ state: 'hidden' });
  await waitSaved(page);
  await page.screenshot({ path: join(SHOTS, 'extract-3-done.png') });

  // the canvas: a, the skill node in c's place, d
  const shown = await page.evaluate(() => window.__editor.cy.nodes().not('.eh-handle').map((n) => n.id()).sort());
  assert.deepEqual(shown, ['a', 'c', 'd']);
  const saved = await api('GET', '/v1/chains/' + ch.id);
  const skill = saved.doc.nodes.find((n) => n.node_id === 'c');
  assert.equal(skill.kind, 'skill');
  assert.equal(skill.name, sub);
  assert.deepEqual(saved.doc.edges.map((e) => e.source + '>' + e.target).sort(), ['a>c', 'c>d']);

  // both chains validate
  const list = await api('GET', '/v1/chains?limit=1000');
  const subRow = (list.chains || list.items || list).find((c) => c.name === sub);
  assert.ok(subRow, 'the new chain is listed');
  const subDoc = (await api('GET', '/v1/chains/' + subRow.id)).doc;
  assert.deepEqual(subDoc.nodes.map((n) => n.node_id), ['b', 'c']);
  assert.equal((await api('POST', '/v1/validate', subDoc)).valid, true);
  assert.equal((await api('POST', '/v1/validate', saved.doc)).valid, true);

  // the same final output as before
  const after = await runChain(ch.id, { x: 41 });
  assert.equal(after.status, 'completed');
  assert.deepEqual(after.final_output, before.final_output);

  // one undo step brings the four nodes back
  await page.locator('#cy').focus();
  await page.keyboard.press('Control+z');
  await page.waitForFunction(() => window.__editor.cy.nodes().not('.eh-handle').length === 4);
  await page.done();
});

test('a selection whose hidden node is read downstream is refused, naming the node and expression', async () => {
  const doc = chainDoc('extract-refused-' + uniq());
  doc.nodes[3].input_map = { got: 'b.output.v' };
  const ch = await api('POST', '/v1/chains', doc);
  const page = await open('/chains/' + ch.id);
  await page.waitForFunction(() => document.getElementById('editor').dataset.ready === '1');
  // select b and c, then the panel's button
  await page.evaluate(() => { const cy = window.__editor.cy; cy.getElementById('b').select(); cy.getElementById('c').select(); });
  await page.locator('#btn-extract').click();
  await page.fill('#extract-name', 'never-' + uniq());
  await page.keyboard.press('Enter');
  const err = page.locator('#extract-error');
  await err.getByText('node "d"').waitFor();
  assert.match(await err.textContent(), /input_map\.got: "b\.output\.v" reads node "b"/);
  await page.screenshot({ path: join(SHOTS, 'extract-4-hidden-read.png') });
  const i = page.errors.findIndex((e) => e.includes('status of 422'));
  assert.ok(i >= 0);
  page.errors.splice(i, 1);
  // Esc closes the dialog; nothing changed
  await page.keyboard.press('Escape');
  await page.locator('#extract-dialog').waitFor({ state: 'hidden' });
  assert.equal(await page.evaluate(() => window.__editor.doc.nodes.length), 4);
  await page.done();
});
