// Browser tests of the node view: one node at full size with its input,
// parameters and output, at 1400×900 and 1024×768. Opened by double-click
// and by keyboard (Enter on the canvas and on a node list row) and by
// "Open"; a code node edited with a 120-character line (nothing outside
// the view scrolls sideways), a field's path clicked into the script, a
// parameter saved as in the side panel, Run this step on an earlier run's
// input, Previous / Next, Escape giving the focus back, axe in light and
// dark, and the time to open a node whose input is about 1 MB (logged).
// Screenshots go to NODEVIEW_SHOTS (default: the OS temp dir).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, close, open, api, nodePos, waitSaved } from './lib.mjs';

const SHOTS = process.env.NODEVIEW_SHOTS || join(tmpdir(), 'nodeview-shots');
mkdirSync(SHOTS, { recursive: true });
// `make screenshots` (STUDIO_SHOTS) takes one picture of the view for the README
const README_SHOT = process.env.STUDIO_SHOTS ? join(process.env.STUDIO_SHOTS, 'nodeview.png') : '';
const SIZES = [[1400, 900], [1024, 768]];

before(async () => { await launch(); });
after(async () => { await close(); });

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

// a fetches, b is a script over what a gives, c sends it on
function chainDoc(name) {
  return {
    name,
    nodes: [
      { node_id: 'a', kind: 'tool', name: 'echo', label: 'Fetch', position: { x: 0, y: 0 } },
      { node_id: 'b', kind: 'tool', name: 'code', label: 'Shape', input: { code: 'return {n: output.items.length}' }, position: { x: 260, y: 0 } },
      { node_id: 'c', kind: 'tool', name: 'echo', label: 'Send', position: { x: 520, y: 0 } },
    ],
    edges: [{ source: 'a', target: 'b' }, { source: 'b', target: 'c' }],
  };
}

async function chainWithRun(input) {
  const ch = await api('POST', '/v1/chains', chainDoc('nodeview-' + uniq()));
  const r = await api('POST', '/v1/chains/' + ch.id + '/runs', { input });
  const run = await waitRun(r.run_id);
  assert.equal(run.status, 'completed');
  return { ch, run };
}

async function editor(id, [w, h], colorScheme) {
  const page = await open('/chains/' + id, { colorScheme });
  await page.setViewportSize({ width: w, height: h });
  await page.waitForFunction(() => document.getElementById('editor').dataset.ready === '1');
  return page;
}

// savedDoc waits until the editor has saved and the saved document
// (GET /v1/chains/{id}) passes ok.
async function savedDoc(page, id, ok) {
  for (let i = 0; i < 200; i++) {
    await waitSaved(page);
    if (ok(await api('GET', '/v1/chains/' + id))) return;
    await new Promise((res) => setTimeout(res, 50));
  }
  assert.fail('the saved document never passed: ' + ok);
}

const filled = (page, id) => page.waitForSelector(`#node-view[open][data-filled="${id}"] .props[data-target="node"][data-id="${id}"]`);

// nothing outside the view scrolls sideways: the page, the dialog, its
// columns (a long line scrolls inside the code editor only)
async function sideways(page) {
  return page.evaluate(() => {
    const out = [];
    const check = (name, el) => { if (el && el.scrollWidth > el.clientWidth + 1) out.push(name + ' ' + el.scrollWidth + '>' + el.clientWidth); };
    check('page', document.scrollingElement);
    check('body', document.body);
    const dlg = document.getElementById('node-view');
    check('dialog', dlg);
    for (const c of dlg.querySelectorAll('.nv-col, .nv-col-body, #props, #props .props')) check(c.id || c.className, c);
    return out;
  });
}

for (const size of SIZES) {
  const at = size.join('x');

  test(`node view at ${at}: open by double-click and by Enter, walk with Previous / Next, Escape gives the focus back`, async () => {
    const { ch } = await chainWithRun({ name: 'Ada', items: [1, 2, 3] });
    const page = await editor(ch.id, size);

    // double-click on b
    const p = await nodePos(page, 'b');
    await page.mouse.dblclick(p.x, p.y);
    await filled(page, 'b');
    assert.match(await page.textContent('#nv-title'), /Shape\s*b/);
    assert.match(await page.textContent('#nv-pos'), /node 2 of 3/);
    // Input: what b received from a, as a table of fields
    assert.match(await page.textContent('#nv-input .nv-from'), /output of a/);
    assert.deepEqual(await page.$$eval('#nv-received-table .nv-field', (bs) => bs.map((b) => b.textContent)), ['items', 'name']);
    // Output: b's output in that run
    assert.match(await page.textContent('#nv-output'), /done/i);
    assert.match(await page.textContent('#nv-output-table'), /n\s*number\s*3/);
    // the canvas stays visible around the view
    const box = await page.$eval('#node-view', (d) => { const r = d.getBoundingClientRect(); return { l: r.left, t: r.top, r: window.innerWidth - r.right, b: window.innerHeight - r.bottom }; });
    assert.ok(box.l > 0 && box.r > 0 && box.t > 0 && box.b > 0, 'the view leaves a margin of the page around it: ' + JSON.stringify(box));
    assert.deepEqual(await sideways(page), []);
    await page.screenshot({ path: join(SHOTS, `nodeview-${at}.png`) });
    assert.deepEqual(await violations(page), [], 'the node view passes axe (light)');

    // the JSON of the input, and back
    await page.click('#nv-input .nv-value[data-part="received"] .nv-mode button[data-mode="json"]');
    assert.deepEqual(JSON.parse(await page.textContent('#nv-received-json')), { name: 'Ada', items: [1, 2, 3] });
    // its shape as a JSON Schema
    await page.click('#nv-input .nv-value[data-part="received"] .nv-mode button[data-mode="schema"]');
    assert.equal(await page.isHidden('#nv-received-json'), true);
    assert.deepEqual(JSON.parse(await page.textContent('#nv-received-schema')).properties, { name: { type: 'string' }, items: { type: 'array', items: { type: 'integer' } } });
    await page.click('#nv-input .nv-value[data-part="received"] .nv-mode button[data-mode="table"]');

    // Escape closes; the focus is on the canvas with b selected
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => !document.getElementById('node-view').open);
    assert.equal(await page.evaluate(() => document.activeElement.id), 'cy');
    assert.deepEqual(await page.evaluate(() => window.__editor.cy.$('node:selected').map((n) => n.id())), ['b']);
    assert.ok(await page.$('aside.side #props .props[data-id="b"]') || await page.$('#props .props[data-id="b"]'), 'the property panel is back beside the canvas');
    assert.equal(await page.$eval('#props', (p) => !!p.closest('#node-view')), false);

    // Enter on the canvas opens the selected node
    await page.keyboard.press('Enter');
    await filled(page, 'b');
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => !document.getElementById('node-view').open);

    // Enter on a node list row: the first selects it, the second opens it
    await page.focus('#node-table button.select-node[data-node-id="a"]');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => window.__editor.cy.$('node:selected').map((n) => n.id()).join() === 'a');
    await page.keyboard.press('Enter');
    await filled(page, 'a');
    // a is a root: it received the run's input, read as `input`
    assert.match(await page.textContent('#nv-input .nv-from'), /run's input, read as input/);
    assert.ok(await page.$eval('#nv-prev', (b) => b.disabled), 'no node before a');

    // Next, Next: c, the last; Previous: b
    await page.click('#nv-next');
    await filled(page, 'b');
    await page.focus('#nv-next');
    await page.keyboard.press('Enter');
    await filled(page, 'c');
    assert.match(await page.textContent('#nv-title'), /Send\s*c/);
    assert.ok(await page.$eval('#nv-next', (b) => b.disabled), 'no node after c');
    assert.equal(await page.evaluate(() => document.activeElement.id), 'nv-prev', 'the focus stays on the buttons');
    assert.deepEqual(await page.evaluate(() => window.__editor.cy.$('node:selected').map((n) => n.id())), ['c'], 'the canvas follows');
    await page.keyboard.press('Enter');
    await filled(page, 'b');
    assert.ok(await page.$('#node-view[open]'), 'walking does not close the view');

    // Escape: back to the node list, on the row of the node shown last
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => !document.getElementById('node-view').open);
    // the focus settles on b's row within a frame or two of closing
    await page.waitForFunction(() => document.activeElement.dataset.nodeId === 'b', null, { timeout: 2000 }).catch(() => {});
    assert.equal(await page.evaluate(() => document.activeElement.dataset.nodeId), 'b');
    assert.ok(await page.evaluate(() => document.activeElement.matches('#node-table button.select-node')));

    // "Open" in the properties opens it too, and the focus comes back to it
    await page.waitForSelector('.props[data-id="b"] [data-open-node-view]');
    await page.click('.props[data-id="b"] [data-open-node-view]');
    await filled(page, 'b');
    await page.click('#nv-close');
    await page.waitForFunction(() => !document.getElementById('node-view').open);
    assert.ok(await page.evaluate(() => document.activeElement.matches('[data-open-node-view]')));
    await page.done();
  });

  test(`node view at ${at}: a code node with a 120-character line, a field's path clicked in, saved, Run this step`, async () => {
    const { ch, run } = await chainWithRun({ name: 'Ada', items: [1, 2, 3] });
    const page = await editor(ch.id, size);
    await page.click('#node-table button.select-node[data-node-id="b"]');
    await page.waitForSelector('.props[data-id="b"] [data-open-node-view]');
    await page.click('.props[data-id="b"] [data-open-node-view]');
    await filled(page, 'b');
    await page.waitForSelector('#node-view .props[data-id="b"] .cm-content');

    // a 120-character line: it scrolls inside the editor, nothing else does
    const long = '// ' + 'x'.repeat(117);
    assert.equal(long.length, 120);
    await page.click('#node-view .props[data-id="b"] .cm-content');
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Backspace');
    await page.keyboard.type(long);
    await page.keyboard.press('Enter');
    await page.keyboard.type('const who = ');
    // the field `name` of the input, clicked, goes into the script at the caret
    await page.click('#nv-received-table .nv-field[data-segs=\'["name"]\']');
    await page.waitForFunction(() => /output\.name/.test(document.getElementById('nv-said').textContent));
    await page.keyboard.press('End');
    await page.keyboard.press('Enter');
    await page.keyboard.type('return {n: output.items.length, who}');
    // saved as typed (GET /v1/chains/{id}), the long line with it
    await savedDoc(page, ch.id, (d) => /const who = output\.name\s*\nreturn \{n: output\.items\.length, who\}/.test(d.doc.nodes.find((n) => n.node_id === 'b').input.code));
    const code = (await api('GET', '/v1/chains/' + ch.id)).doc.nodes.find((n) => n.node_id === 'b').input.code;
    assert.ok(code.includes(long), 'the long line is saved');
    assert.deepEqual(await sideways(page), [], 'nothing outside the code editor scrolls sideways');
    const cm = await page.evaluate(() => {
      const host = document.querySelector('#node-view .sf-code-host');
      const sc = host.shadowRoot.querySelector('.cm-scroller');
      return { scrolls: sc.scrollWidth > sc.clientWidth, width: host.getBoundingClientRect().width };
    });
    assert.ok(cm.scrolls, 'the long line scrolls inside the editor');
    await page.screenshot({ path: join(SHOTS, `nodeview-code-${at}.png`) });

    // Escape in the code editor is the editor's (then Tab leaves it): the view stays
    await page.click('#node-view .props[data-id="b"] .cm-content');
    await page.keyboard.press('Escape');
    assert.ok(await page.$('#node-view[open]'), 'one Escape in the code editor does not close the view');
    assert.match(await page.textContent('#nv-said'), /Escape again closes/);

    // a parameter edited in the view saves as in the side panel
    await page.fill('#node-view .props[data-id="b"] input[data-f="label"]', 'Shape it');
    await savedDoc(page, ch.id, (d) => d.doc.nodes.find((n) => n.node_id === 'b').label === 'Shape it');
    assert.match(await page.textContent('#node-table tr[data-node-id="b"]'), /Shape it/, 'the node list shows it too');

    // Run this step: b alone on the first run's input, its result in place
    await page.click('#nv-run-step');
    await page.waitForSelector('#nv-step-status', { timeout: 20000 });
    assert.match(await page.textContent('#nv-step-status'), /completed/);
    await page.waitForFunction(() => /who/.test(document.getElementById('nv-output').textContent));
    await page.click('#nv-output .nv-value[data-part="output"] .nv-mode button[data-mode="json"]');
    assert.deepEqual(JSON.parse(await page.textContent('#nv-output-json')), { n: 3, who: 'Ada' });
    const nodeRun = (await page.getAttribute('#nv-output #nv-run-link', 'href')).split('/').pop();
    const nr = await api('GET', '/v1/runs/' + nodeRun);
    assert.equal(nr.kind, 'node');
    assert.equal(nr.parent_run_id, run.id, 'the upstream outputs came from the run shown');
    assert.equal(nr.nodes_run, 1, 'only b ran');
    assert.ok(await page.$('#node-view[open]'), 'the view stays open');
    await page.screenshot({ path: join(SHOTS, `nodeview-run-${at}.png`) });
    if (README_SHOT && size === SIZES[0]) await page.screenshot({ path: README_SHOT });
    assert.deepEqual(await violations(page), [], 'the view with a result passes axe');
    await page.done();
  });
}

test('node view in the dark theme passes axe', async () => {
  const { ch } = await chainWithRun({ name: 'Ada', items: [1, 2, 3] });
  const page = await editor(ch.id, SIZES[0], 'dark');
  const p = await nodePos(page, 'b');
  await page.mouse.dblclick(p.x, p.y);
  await filled(page, 'b');
  await page.waitForSelector('#node-view .props[data-id="b"] .cm-content');
  await page.screenshot({ path: join(SHOTS, 'nodeview-dark.png') });
  assert.deepEqual(await violations(page), [], 'the node view passes axe (dark)');
  await page.done();
});

test('node view of a node whose input is about 1 MB: opens with a preview, Show all gives the rest (time logged)', async () => {
  const rows = Array.from({ length: 9000 }, (_, i) => ({ id: i, name: 'row ' + i, text: 'x'.repeat(80) }));
  const input = { name: 'Ada', items: rows };
  const { ch } = await chainWithRun(input);
  const page = await editor(ch.id, SIZES[0]);
  const times = [];
  for (let i = 0; i < 3; i++) {
    await page.click('#node-table button.select-node[data-node-id="b"]');
    await page.waitForSelector('.props[data-id="b"] [data-open-node-view]');
    await page.click('.props[data-id="b"] [data-open-node-view]');
    await filled(page, 'b');
    const t = await page.evaluate(() => window.__nodeview.opens.at(-1));
    times.push(t);
    if (i < 2) {
      await page.keyboard.press('Escape');
      await page.waitForFunction(() => !document.getElementById('node-view').open);
    }
  }
  console.log('# node view open, input ~1.1 MB (gesture to filled, ms): ' + times.map((t) => Math.round(t.ms) + ' (data ' + Math.round(t.data) + ', params ' + Math.round(t.params) + ')').join('; '));
  assert.ok(times.every((t) => t.ms < 10000), 'opens in well under 10 s');
  // the preview: the table and the first 16 KB of the JSON
  assert.match(await page.textContent('#nv-received-table'), /list \(9000 items\)/);
  const cut = await page.textContent('#nv-received-json');
  assert.ok(cut.length < 20000, 'the JSON is a preview: ' + cut.length);
  await page.click('#nv-input .nv-show-all[data-part="received"]');
  await page.waitForFunction(() => { const p = document.getElementById('nv-received-json'); return p && !p.hidden && p.textContent.length > 1000000; });
  const all = JSON.parse(await page.textContent('#nv-received-json'));
  assert.equal(all.items.length, 9000);
  assert.deepEqual(await sideways(page), []);
  await page.screenshot({ path: join(SHOTS, 'nodeview-1mb.png') });
  await page.done();
});

test('node view: pin the output shown, see the pin on the canvas, make it a test mock; a pinned run shows that the pin stood in', async () => {
  const { ch } = await chainWithRun({ name: 'Ada', items: [1, 2, 3] });
  const page = await editor(ch.id, SIZES[0]);
  const p = await nodePos(page, 'b');
  await page.mouse.dblclick(p.x, p.y);
  await filled(page, 'b');
  // Pin this output, by keyboard: the whole output is read and pinned in the draft
  await page.waitForSelector('#nv-pin .pin-controls[data-pinned="false"]');
  await page.focus('#nv-pin [data-pin-action="pin"]');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#nv-pin .pin-controls[data-pinned="true"]');
  assert.match(await page.textContent('#nv-pin .pin-status'), /Pinned/);
  await savedDoc(page, ch.id, (c) => c.doc.pinned_outputs && c.doc.pinned_outputs.b && c.doc.pinned_outputs.b.n === 3);
  assert.equal(await page.evaluate(() => window.__editor.cy.getElementById('b').hasClass('pinned')), true, 'the canvas marks b');
  // Make a test mock: the test "pinned outputs" mocks b with its pin
  await page.click('#nv-pin [data-pin-action="mock"]');
  await savedDoc(page, ch.id, (c) => (c.doc.tests || []).some((t) => t.name === 'pinned outputs' && t.mocks && t.mocks.b));
  assert.deepEqual(await violations(page), [], 'the view with pin controls passes axe');
  await page.keyboard.press('Escape');
  await page.waitForFunction(() => !document.getElementById('node-view').open);

  // a run of the draft with its pins: b's pin stood in, so the view offers no pin for it
  const r = await api('POST', '/v1/chains/' + ch.id + '/runs', { input: { name: 'Ada', items: [] }, version: 'draft', use_pins: true });
  const run = await waitRun(r.run_id);
  assert.equal(run.status, 'completed');
  assert.equal(run.outputs.c.n, 3, 'the pin flowed on');
  await page.click('#node-table button.select-node[data-node-id="b"]');
  await page.waitForSelector('.props[data-id="b"] [data-open-node-view]');
  await page.click('.props[data-id="b"] [data-open-node-view]');
  await page.waitForSelector('#nv-pinned-stood-in');
  assert.equal(await page.$('#nv-pin'), null, 'a pin that stood in is not offered to pin again');
  await page.done();
});

test('two quick clicks on two nodes, or a click and a Shift+click, select; they do not open the view', async () => {
  const { ch } = await chainWithRun({ name: 'Ada', items: [1] });
  const page = await editor(ch.id, SIZES[0]);
  const a = await nodePos(page, 'a');
  const b = await nodePos(page, 'b');
  await page.mouse.click(a.x, a.y);
  await page.mouse.click(b.x, b.y);
  await page.waitForFunction(() => window.__editor.cy.getElementById('b').selected());
  await page.keyboard.down('Shift');
  await page.mouse.click(a.x, a.y);
  await page.keyboard.up('Shift');
  await page.waitForFunction(() => window.__editor.cy.nodes(':selected').length === 2);
  assert.equal(await page.evaluate(() => document.getElementById('node-view').open), false, 'no node view opened');
  // a double-click on one node still opens it
  await page.mouse.dblclick(b.x, b.y);
  await filled(page, 'b');
  await page.done();
});
