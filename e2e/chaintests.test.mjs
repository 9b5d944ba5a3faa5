// Browser test of tests that live with the chain: a run saved as a test
// opens in the designer with the test passing (green badge); breaking the
// node it checks turns the badge red and marks the node, with expected and
// actual. Screenshots go to CHAINTESTS_SHOTS (default: the OS temp dir).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, close, open, api, waitSaved } from './lib.mjs';

const SHOTS = process.env.CHAINTESTS_SHOTS || join(tmpdir(), 'chaintests-shots');
mkdirSync(SHOTS, { recursive: true });

before(async () => { await launch(); });
after(async () => { await close(); });

const uniq = () => Date.now().toString(36) + Math.random().toString(36).slice(2, 6);

async function runAndWait(id, input) {
  const r = await api('POST', '/v1/chains/' + id + '/runs', { input });
  for (let i = 0; i < 200; i++) {
    const m = await api('GET', '/v1/runs/' + r.run_id);
    if (m.status !== 'running' && !m.active) return m;
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error('run did not stop');
}

// testsDone waits until the tests of the version just saved have run (edits
// close together may be saved as one version, or as several).
async function testsDone(page) {
  try {
    await page.waitForFunction(() => {
      const p = document.getElementById('tests-panel');
      return document.getElementById('save-state').dataset.state === 'saved' &&
        p.dataset.state === 'done' && p.dataset.version === String(window.__editor.version);
    }, null, { timeout: 30000 });
  } catch (err) {
    const seen = await page.evaluate(() => ({ panel: { ...document.getElementById('tests-panel').dataset }, save: document.getElementById('save-state').textContent, version: window.__editor.version }));
    throw new Error(`the tests did not run: ${JSON.stringify(seen)}: ${err.message}`);
  }
}

test('save a run as a test, see it pass, break the node, see it fail on the node', async () => {
  // wait is a delay (not pure: the test must mock it); score reshapes its output.
  const chain = await api('POST', '/v1/chains', {
    name: 'scored ' + uniq(),
    nodes: [
      { node_id: 'wait', kind: 'tool', name: 'delay', input_map: { ms: 'input.ms', n: 'input.n' }, position: { x: 0, y: 0 } },
      { node_id: 'score', kind: 'tool', name: 'transform', input: { expression: '{value: n}' }, input_map: { data: 'wait.output' }, position: { x: 220, y: 0 } },
      { node_id: 'small', kind: 'tool', name: 'echo', input: { size: 'small' }, position: { x: 220, y: 140 } },
    ],
    edges: [{ source: 'wait', target: 'score', condition: 'output.n > `5`' }, { source: 'wait', target: 'small', default: true }],
  });
  const run = await runAndWait(chain.id, { ms: 1, n: 7 });
  assert.equal(run.status, 'completed');

  const page = await open('/runs/' + run.id);
  await page.waitForFunction(() => document.getElementById('runpage').dataset.ready === '1');
  // keyboard: the button opens the dialog, the name is typed, Enter saves
  await page.focus('#btn-save-test');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#save-test-dialog[open]');
  await page.fill('#save-test-name', 'seven is scored');
  await page.screenshot({ path: join(SHOTS, 'save-test-dialog.png') });
  await Promise.all([page.waitForURL(/\/chains\/[^/]+\?test=0$/), page.keyboard.press('Enter')]);

  // The designer opens on the test; it passes.
  await page.waitForFunction(() => window.__editor && window.__editor.cy && window.__editor.doc);
  await testsDone(page);
  assert.equal((await page.textContent('#tests-badge')).trim(), '1 passed');
  assert.match(await page.getAttribute('#tests-badge', 'class'), /\bok\b/);
  const li = page.locator('#tests-list li.test[data-name="seven is scored"]');
  assert.equal(await li.locator('details').first().getAttribute('open'), '', 'the saved test is open');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'test-0-name', 'its form has the focus');
  const saved = JSON.parse(await page.inputValue('#test-json-0'));
  assert.deepEqual(saved.mocks, { wait: { ms: 1, n: 7 } }, 'the delay node is mocked with what it gave');
  assert.deepEqual(saved.assert.not_ran, ['small']);
  await page.screenshot({ path: join(SHOTS, 'editor-test-pass.png') });

  // Break the node the test checks: the badge turns red, the node is marked.
  await page.evaluate(() => window.__editor.edit(() => {
    window.__editor.doc.nodes.find((n) => n.node_id === 'score').input.expression = '{value: ms}';
  }));
  await waitSaved(page);
  await testsDone(page);
  assert.equal((await page.textContent('#tests-badge')).trim(), '1 failed · 0 passed');
  assert.match(await page.getAttribute('#tests-badge', 'class'), /sev-error/);
  assert.equal(await page.getAttribute('#editor', 'data-test-fail-nodes'), 'score');
  assert.ok(await page.evaluate(() => window.__editor.cy.getElementById('score').hasClass('test-fail')), 'the canvas marks the node');
  const failure = li.locator('.test-failure').first();
  assert.equal(await failure.getAttribute('data-node-id'), 'score');
  assert.match(await failure.textContent(), /`output` is \{"value":1\}, want \{"value":7\}/);
  // Selecting the node shows its failing assertion, expected beside actual.
  await failure.locator('button.select-node').click();
  await page.waitForSelector('#tests-node:not([hidden])');
  const box = await page.textContent('#tests-node');
  assert.match(box, /Failing on score/);
  assert.match(box, /expected/);
  assert.match(box, /"value": 7/);
  assert.match(box, /"value": 1/);
  await page.screenshot({ path: join(SHOTS, 'editor-test-fail.png') });
  // (selecting the node showed the Properties tab: back to Tests)
  await page.click('#tab-tests');

  // Edit the test as JSON (the advanced view): an invalid JSON is refused on the spot.
  await li.locator('details.test-json > summary').click();
  await page.fill('#test-json-0', '{ nope');
  await li.locator('button', { hasText: 'Apply' }).click();
  assert.match(await li.locator('.test-msg').textContent(), /not JSON/);

  // Add a test with the keyboard: its form opens focused on the name; its
  // JSON (advanced) takes a test whole, Ctrl+Enter applies it.
  await page.focus('#btn-add-test');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#test-1-name');
  await testsDone(page);
  assert.equal(await page.evaluate(() => document.activeElement.id), 'test-1-name');
  const li2 = page.locator('#tests-list li.test[data-index="1"]');
  await li2.locator('details.test-json > summary').click();
  await page.fill('#test-json-1', JSON.stringify({ name: 'small numbers', input: { n: 2 }, mocks: { wiat: { n: 2 } }, assert: { ran: ['small'] } }));
  await page.keyboard.press('Control+Enter');
  await waitSaved(page);
  // a mock of a node that does not exist is a validation issue naming the test and field
  await page.waitForFunction(() => document.getElementById('issues').textContent.includes('tests[1] "small numbers".mocks.wiat'));
  assert.match(await page.textContent('#issues'), /no node "wiat"/);
  await testsDone(page);
  assert.equal((await page.textContent('#tests-badge')).trim(), '2 failed · 0 passed');
  await page.screenshot({ path: join(SHOTS, 'editor-test-invalid.png') });
  // Fixed with the form: the mock's node picked from the chain's nodes,
  // score must not run; Apply. It passes; the first still fails.
  await li2.locator('details.test-json > summary').click(); // back to the form
  await page.waitForSelector('#tests-list li.test[data-index="1"] .tf-mock select');
  await li2.locator('.tf-mock select').selectOption('wait');
  await li2.locator('select[aria-label="Node score must"]').selectOption('not_ran');
  assert.equal(await li2.locator('select[aria-label="Node small must"]').inputValue(), 'ran');
  await page.screenshot({ path: join(SHOTS, 'editor-test-form.png') });
  await li2.locator('button', { hasText: 'Apply' }).click();
  await waitSaved(page);
  await testsDone(page);
  assert.equal((await page.textContent('#tests-badge')).trim(), '1 failed · 1 passed');
  // Delete the first test: one left, passing, no node marked.
  await li.locator('button', { hasText: 'Delete test' }).click();
  await waitSaved(page);
  await testsDone(page);
  assert.equal((await page.textContent('#tests-badge')).trim(), '1 passed');
  assert.equal(await page.getAttribute('#editor', 'data-test-fail-nodes'), '');
  const doc = await api('GET', '/v1/chains/' + chain.id);
  assert.deepEqual(doc.doc.tests.map((t) => t.name), ['small numbers'], 'the saved version keeps the edited tests');
  assert.deepEqual(doc.doc.tests[0], { name: 'small numbers', input: { n: 2 }, mocks: { wait: { n: 2 } }, assert: { ran: ['small'], not_ran: ['score'] } }, 'the form wrote the test');
  await page.done();
});

test('a run watched to its end can then be saved as a test', async () => {
  const chain = await api('POST', '/v1/chains', {
    name: 'slow ' + uniq(),
    nodes: [{ node_id: 'wait', kind: 'tool', name: 'delay', input_map: { ms: 'input.ms' } }],
  });
  const r = await api('POST', '/v1/chains/' + chain.id + '/runs', { input: { ms: 1500 } });
  const page = await open('/runs/' + r.run_id);
  await page.waitForFunction(() => document.getElementById('runpage').dataset.ready === '1');
  // the status and the button read at one moment: the run may end between two reads
  const now = await page.evaluate(() => {
    const b = document.getElementById('btn-save-test');
    return { status: document.getElementById('runpage').dataset.status, shown: !!b && !b.hidden && b.offsetParent !== null };
  });
  if (now.status === 'running') {
    assert.equal(now.shown, false, 'a running run cannot be saved as a test yet');
  }
  await page.waitForSelector('#btn-save-test', { state: 'visible', timeout: 10000 });
  assert.equal(await page.getAttribute('#runpage', 'data-status'), 'completed');
  await page.done();
});
