// Browser tests of "why did it go this way" on the run page (static/js/why.js):
// hovering or focusing an edge says why it fired or not; a skipped node's
// drawer lists the chain of causes, each a button that centres the canvas.
// Screenshots go to WHY_SHOTS (default: the OS temp dir).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, close, open, api } from './lib.mjs';

const SHOTS = process.env.WHY_SHOTS || join(tmpdir(), 'why-shots');
mkdirSync(SHOTS, { recursive: true });

before(async () => { await launch(); });
after(async () => { await close(); });

const uniq = () => Date.now().toString(36) + Math.random().toString(36).slice(2, 6);

function whyChain() {
  return {
    name: 'why ' + uniq(),
    nodes: [
      { node_id: 'score', kind: 'tool', name: 'echo', label: 'Score', input_map: { score: 'input.score' } },
      { node_id: 'high', kind: 'tool', name: 'echo', label: 'High road' },
      { node_id: 'low', kind: 'tool', name: 'echo', label: 'Low road' },
      { node_id: 'after', kind: 'tool', name: 'echo', label: 'After high' },
    ],
    edges: [
      { source: 'score', target: 'high', condition: 'output.score > `5`' },
      { source: 'score', target: 'low', default: true },
      { source: 'high', target: 'after' },
    ],
  };
}

async function runAndWait(chainId, input) {
  const r = await api('POST', '/v1/chains/' + chainId + '/runs', { input });
  for (let i = 0; i < 200; i++) {
    const m = await api('GET', '/v1/runs/' + r.run_id);
    if (m.status !== 'running' && !m.active) return m;
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error('run did not stop');
}

async function openRun(id) {
  const page = await open('/runs/' + id);
  await page.waitForFunction(() => document.getElementById('runpage').dataset.whyReady === '1');
  return page;
}

// edgeMid: an edge's midpoint in page coordinates, and the canvas's centre.
function edgeMid(page, id) {
  return page.evaluate((id) => {
    const cy = window.__run.cy;
    const m = cy.getElementById(id).renderedMidpoint();
    const r = cy.container().getBoundingClientRect();
    return { x: r.left + m.x, y: r.top + m.y, cx: r.left + r.width / 2, cy: r.top + r.height / 2 };
  }, id);
}

async function tipText(page) {
  await page.waitForSelector('#why-tip:not([hidden])');
  return (await page.textContent('#why-tip .why-text')).trim();
}

test('hovering an edge says why it fired or was not taken, with the values read', async () => {
  const c = await api('POST', '/v1/chains', whyChain());
  const run = await runAndWait(c.id, { score: 7 });
  const page = await openRun(run.id);

  let m = await edgeMid(page, 'score->high');
  await page.mouse.move(m.x, m.y);
  assert.equal(await tipText(page), 'fired: output.score > `5` — output.score was 7');
  assert.match(await page.textContent('#why-tip .why-edge-name'), /score → high/);
  await page.screenshot({ path: join(SHOTS, 'why-hover-fired.png') });

  await page.mouse.move(5, 5); // off the canvas: the tip goes
  await page.waitForSelector('#why-tip', { state: 'hidden' });
  m = await edgeMid(page, 'score->low');
  await page.mouse.move(m.x, m.y);
  await page.waitForFunction(() => document.getElementById('why-tip').dataset.edge === 'score->low');
  assert.equal(await tipText(page), 'not taken: an earlier edge matched');
  await page.done();
});

test('the edges take keyboard focus: Tab reaches them, arrows move, each says why', async () => {
  const c = await api('POST', '/v1/chains', whyChain());
  const run = await runAndWait(c.id, { score: 3 });
  const page = await openRun(run.id);
  // from the toolbar's last button, Tab walks into the edge list (one stop)
  await page.focus('#btn-fit');
  let onEdge = false;
  for (let i = 0; i < 15 && !onEdge; i++) {
    await page.keyboard.press('Tab');
    onEdge = await page.evaluate(() => document.activeElement.classList.contains('why-edge'));
  }
  assert.ok(onEdge, 'Tab reaches the edges');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.edgeId), 'score->high');
  assert.equal(await tipText(page), 'not taken: output.score > `5` — output.score was 3');
  // the focused edge is named for a screen reader with the same words
  await page.waitForFunction(() => /not taken: output\.score > `5` — output\.score was 3/.test(document.activeElement.getAttribute('aria-label')));
  assert.ok(await page.evaluate(() => window.__run.cy.getElementById('score->high').hasClass('why-focus')), 'the edge is highlighted');
  await page.screenshot({ path: join(SHOTS, 'why-focus-edge.png') });

  await page.keyboard.press('ArrowDown');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.edgeId), 'score->low');
  await page.waitForFunction(() => document.getElementById('why-tip').dataset.edge === 'score->low');
  assert.equal(await tipText(page), 'default: nothing matched');
  await page.keyboard.press('ArrowDown');
  await page.waitForFunction(() => document.getElementById('why-tip').dataset.edge === 'high->after');
  assert.equal(await tipText(page), 'not taken: its source high was skipped');
  // one tab stop: Tab leaves the list, and the tip goes with the focus
  await page.keyboard.press('Tab');
  assert.ok(await page.evaluate(() => !document.activeElement.classList.contains('why-edge')));
  await page.waitForSelector('#why-tip', { state: 'hidden' });
  await page.done();
});

test("a skipped node's drawer lists the chain of causes; a cause centres the canvas on its edge", async () => {
  const c = await api('POST', '/v1/chains', whyChain());
  const run = await runAndWait(c.id, { score: 3 });
  const page = await openRun(run.id);
  await page.click('#node-table button.select-node[data-node-id="after"]');
  await page.waitForSelector('#why-panel .why-step');
  assert.equal(await page.textContent('#why-panel h3'), 'Why skipped');
  const steps = await page.$$eval('#why-panel .why-step', (bs) => bs.map((b) => b.textContent.replace(/\s+/g, ' ').trim()));
  assert.deepEqual(steps, [
    'edge high → afternot taken: its source high was skipped',
    'edge score → highnot taken: output.score > `5` — output.score was 3',
  ]);
  await page.screenshot({ path: join(SHOTS, 'why-drawer-causes.png') });

  // move the chain out of the way, then ask for the deciding step
  await page.evaluate(() => { const cy = window.__run.cy; cy.zoom(1); cy.pan({ x: -2000, y: -2000 }); });
  const last = page.locator('#why-panel .why-step').nth(1);
  await last.focus();
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => {
    const cy = window.__run.cy;
    const m = cy.getElementById('score->high').renderedMidpoint();
    return Math.abs(m.x - cy.width() / 2) < 20 && Math.abs(m.y - cy.height() / 2) < 20;
  }, null, { timeout: 5000 });
  const m = await edgeMid(page, 'score->high');
  assert.ok(Math.abs(m.x - m.cx) < 20 && Math.abs(m.y - m.cy) < 20, 'the edge is at the canvas centre: ' + JSON.stringify(m));
  assert.equal(await tipText(page), 'not taken: output.score > `5` — output.score was 3');
  await page.screenshot({ path: join(SHOTS, 'why-cause-centred.png') });

  // a node that ran says why it ran
  await page.click('#node-table button.select-node[data-node-id="low"]');
  await page.waitForSelector('#drawer .drawer[data-node-id="low"] #why-panel .why-step');
  assert.equal(await page.textContent('#why-panel h3'), 'Why it ran');
  assert.match(await page.textContent('#why-panel .why-step'), /default: nothing matched/);
  await page.done();
});
