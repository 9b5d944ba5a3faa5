// Browser tests of pinned outputs at 1400×900: run the draft, pin a node's
// output from the run page, run again and see the node marked pinned with
// its pin flowing downstream, turn the pin into a test mock and see the
// test pass, unpin. Screenshots go to SHOTS (lib.mjs).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { launch, close, open, api, waitSaved, SHOTS } from './lib.mjs';

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

// fetch gives {score: 3} when it runs; its pin will say 99. shape reads it.
function chainDoc(name) {
  return {
    name,
    sample_input: { who: 'ana' },
    nodes: [
      { node_id: 'fetch', kind: 'tool', name: 'echo', label: 'Fetch score', input: { score: 3 }, position: { x: 0, y: 0 } },
      { node_id: 'shape', kind: 'tool', name: 'echo', label: 'Shape', input_map: { got: 'fetch.output.score' }, position: { x: 240, y: 0 } },
    ],
    edges: [{ source: 'fetch', target: 'shape' }],
  };
}

async function openEditor(id) {
  const page = await open('/chains/' + id);
  await page.setViewportSize({ width: 1400, height: 900 });
  await page.waitForFunction(() => document.getElementById('editor').dataset.ready === '1');
  return page;
}

// runFromEditor presses Run…, starts the run and waits on its page for its end.
async function runFromEditor(page) {
  await page.click('#btn-run');
  await page.waitForSelector('#run-dialog[open]');
  await Promise.all([page.waitForURL((u) => u.pathname.startsWith('/runs/')), page.click('#run-submit')]);
  await page.waitForFunction(() => document.getElementById('runpage').dataset.ready === '1');
  await page.waitForFunction(() => document.getElementById('runpage').dataset.status === 'completed', null, { timeout: 10000 });
  return new URL(page.url()).pathname.split('/').pop();
}

async function selectRunNode(page, id) {
  await page.click(`#node-table button.select-node[data-node-id="${id}"]`);
  await page.waitForSelector(`#drawer .drawer[data-node-id="${id}"]`);
}

test('pin an output on the run page, run again with it, make a test mock, unpin', async () => {
  const ch = await api('POST', '/v1/chains', chainDoc('pins-' + uniq()));

  // 1. A run of the draft runs fetch.
  const page = await openEditor(ch.id);
  const first = await runFromEditor(page);
  assert.equal((await api('GET', '/v1/runs/' + first)).outputs.shape.got, 3);

  // 2. On the run page, fetch's drawer pins its output (keyboard).
  await selectRunNode(page, 'fetch');
  await page.waitForSelector('#pin-controls #btn-pin');
  assert.equal(await page.isHidden('#btn-unpin'), true, 'nothing to unpin yet');
  await page.focus('#btn-pin');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.getElementById('pin-controls').dataset.pinned === 'true');
  assert.match(await page.textContent('#pin-status'), /Pinned/);
  await page.screenshot({ path: join(SHOTS, 'pins-drawer.png') });
  assert.deepEqual(await violations(page), [], 'the drawer with its pin controls passes axe');
  let doc = (await api('GET', '/v1/chains/' + ch.id)).doc;
  assert.deepEqual(doc.pinned_outputs, { fetch: { score: 3 } }, 'the draft pins what the run gave');

  // Change the pin in the document, as an API user or an import would.
  const cur = await api('GET', '/v1/chains/' + ch.id);
  cur.doc.pinned_outputs.fetch = { score: 99 };
  await api('PUT', '/v1/chains/' + ch.id, { version: cur.version, doc: cur.doc });

  // 3. The designer shows the pin: the canvas, the node list, the Run dialog.
  const ed = await openEditor(ch.id);
  assert.equal(await ed.evaluate(() => window.__editor.cy.getElementById('fetch').hasClass('pinned')), true, 'the canvas marks fetch');
  assert.equal(await ed.evaluate(() => window.__editor.cy.getElementById('shape').hasClass('pinned')), false);
  assert.match(await ed.evaluate(() => window.__editor.cy.getElementById('fetch').data('display')), /⚲ pinned/);
  assert.match(await ed.textContent('#node-table tr[data-node-id="fetch"]'), /pinned/);
  assert.doesNotMatch(await ed.textContent('#node-table tr[data-node-id="shape"]'), /pinned/);
  await ed.focus('#node-table button.select-node[data-node-id="fetch"]');
  await ed.keyboard.press('Enter');
  await ed.waitForSelector('.props[data-target="node"][data-id="fetch"] #pin-section #pin-value');
  assert.equal(JSON.parse(await ed.textContent('#pin-value')).score, 99);
  await ed.screenshot({ path: join(SHOTS, 'pins-editor.png') });
  assert.deepEqual(await violations(ed), [], 'the editor with a pinned node passes axe');

  // 4. Run again: fetch is pinned (not run) and shape got the pin.
  const second = await runFromEditor(ed);
  await ed.waitForFunction(() => {
    const row = document.querySelector('#node-table tr[data-node-id="fetch"] .note-cell');
    return row && /pinned/.test(row.textContent);
  });
  assert.equal(await ed.evaluate(() => window.__run.cy.getElementById('fetch').hasClass('pinned')), true, 'the run\'s canvas marks fetch');
  assert.match(await ed.textContent('.legend'), /pinned/);
  const run2 = await api('GET', '/v1/runs/' + second);
  assert.equal(run2.kind, 'pinned');
  assert.equal(run2.outputs.shape.got, 99, 'the pinned output flowed on');
  assert.equal(run2.nodes.find((n) => n.node_id === 'fetch').pinned, true);
  await selectRunNode(ed, 'fetch');
  await ed.waitForSelector('#drawer-pinned');
  assert.match(await ed.textContent('#drawer'), /not run: the output is the chain's pinned output/);
  await ed.screenshot({ path: join(SHOTS, 'pins-run.png') });
  assert.deepEqual(await violations(ed), [], 'the run page of a pinned run passes axe');
  await ed.done();

  // 5. Make a test mock from the pin: the test "pinned outputs" passes.
  const ed2 = await openEditor(ch.id);
  await ed2.click('#node-table button.select-node[data-node-id="fetch"]');
  await ed2.waitForSelector('#pin-section #btn-pin-mock-props');
  await ed2.focus('#btn-pin-mock-props');
  await ed2.keyboard.press('Enter');
  await ed2.waitForFunction(() => /mocks fetch/.test(document.getElementById('pin-section-status').textContent));
  await waitSaved(ed2);
  await ed2.waitForFunction(() => {
    const li = document.querySelector('#tests-list li.test[data-name="pinned outputs"]');
    return li && li.classList.contains('pass');
  }, null, { timeout: 10000 });
  doc = (await api('GET', '/v1/chains/' + ch.id)).doc;
  const t = doc.tests.find((x) => x.name === 'pinned outputs');
  assert.deepEqual(t.mocks, { fetch: { score: 99 } });
  assert.deepEqual(t.input, { who: 'ana' }, 'the test runs the sample input');
  const report = await api('POST', '/v1/chains/' + ch.id + '/tests/run', { name: 'pinned outputs' });
  assert.equal(report.failed, 0);

  // Dark: the pinned node's panel and the pinned run's drawer pass axe too.
  const dark = await open('/chains/' + ch.id, { colorScheme: 'dark' });
  await dark.setViewportSize({ width: 1400, height: 900 });
  await dark.waitForFunction(() => document.getElementById('editor').dataset.ready === '1');
  await dark.click('#node-table button.select-node[data-node-id="fetch"]');
  await dark.waitForSelector('#pin-section #pin-value');
  await dark.screenshot({ path: join(SHOTS, 'pins-editor-dark.png') });
  assert.deepEqual(await violations(dark), [], 'the pinned node in the dark editor passes axe');
  await dark.goto(new URL('/runs/' + second, dark.url()).href);
  await dark.waitForFunction(() => document.getElementById('runpage').dataset.ready === '1');
  await selectRunNode(dark, 'fetch');
  await dark.waitForSelector('#drawer-pinned');
  await dark.screenshot({ path: join(SHOTS, 'pins-run-dark.png') });
  assert.deepEqual(await violations(dark), [], 'the pinned run in the dark passes axe');
  await dark.done();

  // 6. Unpin: the marks go, the focus stays in the section, runs run fetch again.
  await ed2.focus('#btn-pin-unpin');
  await ed2.keyboard.press('Enter');
  await ed2.waitForSelector('#pin-section #pin-none');
  assert.equal(await ed2.evaluate(() => document.activeElement.id), 'pin-section', 'the focus stays in the section');
  await waitSaved(ed2);
  assert.equal(await ed2.evaluate(() => window.__editor.cy.getElementById('fetch').hasClass('pinned')), false);
  await ed2.waitForFunction(() => !/pinned/.test(document.querySelector('#node-table tr[data-node-id="fetch"]').textContent));
  doc = (await api('GET', '/v1/chains/' + ch.id)).doc;
  assert.equal(doc.pinned_outputs, undefined);
  const third = await runFromEditor(ed2);
  const run3 = await api('GET', '/v1/runs/' + third);
  assert.equal(run3.kind, 'run');
  assert.equal(run3.outputs.shape.got, 3);
  await ed2.done();
  await page.done();
});

test('Run this node: pin its result in the node\'s panel; undo takes the pin back', async () => {
  const ch = await api('POST', '/v1/chains', chainDoc('pins-runnode-' + uniq()));
  const page = await openEditor(ch.id);
  await page.click('#node-table button.select-node[data-node-id="fetch"]');
  await page.waitForSelector('.props[data-target="node"][data-id="fetch"] #btn-run-node');
  assert.ok(await page.$('#pin-section #pin-none'), 'the panel says nothing is pinned');
  await page.click('#btn-run-node');
  await page.waitForSelector('#runnode-dialog[open] #runnode-form');
  await page.click('#runnode-submit');
  await page.waitForSelector('#runnode-result .pin-controls [data-pin-action="pin"]', { timeout: 10000 });
  await page.click('#runnode-result [data-pin-action="pin"]');
  await page.waitForSelector('#pin-section #pin-value');
  await waitSaved(page);
  assert.deepEqual(JSON.parse(await page.textContent('#pin-value')), { score: 3 });
  assert.equal(await page.isVisible('#runnode-result [data-pin-action="mock"]'), true, 'a pinned node offers the mock');
  assert.equal(await page.evaluate(() => window.__editor.cy.getElementById('fetch').hasClass('pinned')), true);
  assert.deepEqual((await api('GET', '/v1/chains/' + ch.id)).doc.pinned_outputs, { fetch: { score: 3 } });
  await page.screenshot({ path: join(SHOTS, 'pins-runnode.png') });
  assert.deepEqual(await violations(page), [], 'the panel with the pin passes axe');
  // a pin is an edit like any other: undo takes it back
  await page.click('#btn-undo');
  await page.waitForSelector('#pin-section #pin-none');
  await waitSaved(page);
  assert.equal(await page.evaluate(() => window.__editor.cy.getElementById('fetch').hasClass('pinned')), false);
  await page.waitForSelector('#runnode-result [data-pin-action="unpin"]', { state: 'hidden' });
  assert.equal((await api('GET', '/v1/chains/' + ch.id)).doc.pinned_outputs, undefined);
  await page.done();
});

test('a pin of no node is a validation error with an Unpin beside it', async () => {
  const doc = chainDoc('pins-stale-' + uniq());
  doc.pinned_outputs = { gone: { score: 1 } };
  const ch = await api('POST', '/v1/chains', doc);
  const page = await openEditor(ch.id);
  // the Validation tab counts the error; its panel names the pin
  await page.waitForFunction(() => /1/.test(document.getElementById('tab-issues-count').textContent));
  await page.click('#tab-issues');
  await page.waitForSelector('#issues .issue-link[data-field="pinned_outputs.gone"]');
  assert.match(await page.textContent('#issues'), /no node "gone"/);
  assert.equal(await page.isDisabled('#btn-run'), true, 'a run with the pins would be refused');
  await page.focus('#issues .pin-unpin-issue[data-node-id="gone"]');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => !document.querySelector('#issues .issue-link[data-field="pinned_outputs.gone"]'));
  await waitSaved(page);
  assert.equal(await page.isDisabled('#btn-run'), false);
  assert.equal((await api('GET', '/v1/chains/' + ch.id)).doc.pinned_outputs, undefined);
  await page.done();
});
