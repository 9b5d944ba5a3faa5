// Approvals carry their context: a run pauses at an approval whose prompt is
// a template over the run's data; the inbox card and the run page show the
// rendered prompt and the fields the approval names without opening
// "Proposed value"; the paused banner leaves the run page's canvas at least
// half the window (1400×900 and 1024×768); a "no" goes down the rejected
// edge and the run list says rejected, not failed. The designer offers an
// approval's approved and rejected edges as it adds nodes after it; a long
// streamed note stays inside its node; axe finds nothing on the run page
// and the inbox, light and dark.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { launch, close, open, api, SHOTS } from './lib.mjs';

before(async () => { await launch(); });
after(async () => { await close(); });

const uniq = (p) => p + ' ' + Date.now() + '-' + Math.floor(Math.random() * 1000);
const SIZES = [{ width: 1400, height: 900 }, { width: 1024, height: 768 }];

async function until(what, fn) {
  for (let i = 0; i < 400; i++) {
    const v = await fn();
    if (v) return v;
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error('never: ' + what);
}
const runIn = (id, statuses) => until('run ' + id + ' is ' + statuses.join('/'), async () => {
  const r = await api('GET', '/v1/runs/' + id);
  return statuses.includes(r.status) ? r : null;
});

// refundChain: classify the request, ask a manager with the context, then
// pay or tell the customer no; rejectEdge false leaves the no without a path.
function refundChain(name, rejectEdge = true) {
  return {
    name,
    nodes: [
      { node_id: 'classify', kind: 'tool', name: 'echo', label: 'Classify', input_map: { category: 'input.kind', amount: 'input.amount' }, position: { x: 0, y: 100 } },
      { node_id: 'ask', kind: 'interrupt', label: 'Manager approval', position: { x: 240, y: 100 },
        config: { prompt: 'Refund {{ input.order }} for {{ classify.output.category }}?', fields: { Order: 'input.order', Amount: 'input.amount', Category: 'classify.output.category' } } },
      { node_id: 'pay', kind: 'tool', name: 'echo', label: 'Pay', position: { x: 480, y: 0 } },
      { node_id: 'tell', kind: 'tool', name: 'echo', label: 'Tell the customer no', position: { x: 480, y: 200 } },
    ],
    edges: rejectEdge
      ? [{ source: 'classify', target: 'ask' }, { source: 'ask', target: 'pay', label: 'approved' }, { source: 'ask', target: 'tell', label: 'rejected' }]
      : [{ source: 'classify', target: 'ask' }, { source: 'ask', target: 'pay' }, { source: 'pay', target: 'tell' }],
  };
}
const INPUT = { order: 'A-17', amount: 12.5, kind: 'billing' };
const PROMPT = 'Refund A-17 for billing?';
const FIELDS = [['Amount', '12.5'], ['Category', 'billing'], ['Order', 'A-17']];

async function pausedRun(chainId) {
  const r = await api('POST', '/v1/chains/' + chainId + '/runs', { input: INPUT });
  await runIn(r.run_id, ['paused']);
  return r.run_id;
}

// fieldsOf reads a fields table: [label, value] pairs, labels over values.
async function fieldsOf(page, sel) {
  return page.$eval(sel, (t) => {
    const hs = [...t.querySelectorAll('thead th')].map((x) => x.textContent.trim());
    const vs = [...t.querySelectorAll('tbody td')].map((x) => x.textContent.trim());
    return hs.map((h, i) => [h, vs[i]]);
  });
}

test('the inbox card shows the rendered prompt and the named fields without opening Proposed value', async () => {
  const ch = await api('POST', '/v1/chains', refundChain(uniq('Refund context inbox')));
  const runId = await pausedRun(ch.id);
  const run = await api('GET', '/v1/runs/' + runId);
  assert.equal(run.pending[0].prompt, PROMPT, 'the API carries the rendered prompt');
  const list = await api('GET', '/v1/interrupts?run=' + encodeURIComponent(runId));
  assert.deepEqual(list.interrupts[0].fields, [{ label: 'Amount', value: 12.5 }, { label: 'Category', value: 'billing' }, { label: 'Order', value: 'A-17' }]);

  for (const size of SIZES) {
    const page = await open(null);
    await page.setViewportSize(size);
    await page.goto(new URL('/inbox?run=' + encodeURIComponent(runId), process.env.STUDIO_URL || 'http://127.0.0.1:8080').href);
    const item = page.locator('.inbox-item[data-run-id="' + runId + '"]');
    await item.waitFor();
    assert.equal((await item.locator('.prompt').textContent()).trim(), PROMPT);
    assert.deepEqual(await fieldsOf(page, '.inbox-item[data-run-id="' + runId + '"] table.ask-fields'), FIELDS);
    assert.ok(await item.locator('table.ask-fields').isVisible(), 'the fields are in view');
    assert.equal(await item.locator('details.ib-proposed').getAttribute('open'), null, 'Proposed value stays closed');
    await page.screenshot({ path: join(SHOTS, `approvalsctx-inbox-${size.width}.png`) });
    await page.done();
  }
});

test('the run page shows the prompt and fields in a compact banner over a canvas of half the window; a no goes down the rejected edge', async () => {
  const ch = await api('POST', '/v1/chains', refundChain(uniq('Refund context run page')));
  const runs = [];
  for (const size of SIZES) {
    const runId = await pausedRun(ch.id);
    runs.push(runId);
    const page = await open(null);
    await page.setViewportSize(size);
    await page.goto(new URL('/runs/' + runId, process.env.STUDIO_URL || 'http://127.0.0.1:8080').href);
    await page.waitForSelector('#runpage[data-ready="1"]');
    await page.waitForSelector('#approval-form');
    assert.equal((await page.textContent('#prompt')).trim(), PROMPT);
    assert.deepEqual(await fieldsOf(page, '#ask-fields'), FIELDS);
    assert.match(await page.textContent('#approval-form h2'), /Waiting at\s+Manager approval\s+ask/);
    const m = await page.evaluate(() => {
      const box = (sel) => document.querySelector(sel).getBoundingClientRect();
      return { cy: box('#cy').height, banner: box('#approval-form').height, vh: window.innerHeight, scroll: document.documentElement.scrollHeight - window.innerHeight };
    });
    assert.ok(m.cy >= m.vh / 2, `the canvas is ${m.cy}px of a ${m.vh}px window (${size.width}×${size.height})`);
    assert.ok(m.banner <= 170, `the banner is compact: ${m.banner}px`);
    await page.screenshot({ path: join(SHOTS, `approvalsctx-run-paused-${size.width}.png`) });

    // a no, by keyboard: the comment, then Reject
    await page.focus('#resume-comment');
    await page.keyboard.type('not this one');
    await page.focus('#btn-reject');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.getElementById('runpage').dataset.status === 'completed', null, { timeout: 15000 });
    await page.waitForSelector('#run-outcome .status-rejected');
    await page.screenshot({ path: join(SHOTS, `approvalsctx-run-rejected-${size.width}.png`) });
    await page.done();

    const done = await runIn(runId, ['completed']);
    assert.equal(done.outcome, 'rejected');
    assert.deepEqual({ pay: done.nodes.find((n) => n.node_id === 'pay').status, tell: done.nodes.find((n) => n.node_id === 'tell').status }, { pay: 'skip', tell: 'done' });
    assert.equal(done.answers[0].comment, 'not this one');
  }

  // a no where the approval has no rejected edge fails the run: still a no,
  // not a breakage; a failing tool is one
  const bare = await api('POST', '/v1/chains', refundChain(uniq('Refund no edge'), false));
  const failedNo = await pausedRun(bare.id);
  await api('POST', '/v1/runs/' + failedNo + '/resume', { action: 'reject', comment: 'no' });
  assert.equal((await runIn(failedNo, ['failed'])).outcome, 'rejected');
  const broken = await api('POST', '/v1/chains', { name: uniq('Broken'), nodes: [{ node_id: 'boom', kind: 'tool', name: 'fail', input: { message: 'down' } }] });
  const brokenRun = (await api('POST', '/v1/chains/' + broken.id + '/runs', {})).run_id;
  assert.equal((await runIn(brokenRun, ['failed'])).outcome, undefined);

  const page = await open('/runs');
  await page.waitForSelector('#all-runs-table');
  const badges = await page.$$eval('#all-runs-table tbody tr[data-run-id]', (rows) => Object.fromEntries(rows.map((r) => [r.dataset.runId, [...r.querySelectorAll('.status')].map((s) => s.textContent.trim()).join('+')])));
  for (const id of runs) assert.equal(badges[id], 'completed+rejected', 'went on down the rejected path');
  assert.equal(badges[failedNo], 'rejected', 'failed for a no: rejected, not failed');
  assert.equal(badges[brokenRun], 'failed', 'a broken run stays failed');
  await page.screenshot({ path: join(SHOTS, 'approvalsctx-runs-list.png') });
  await page.done();
});

test('the designer offers an approval node its approved and rejected edges', async () => {
  const ch = await api('POST', '/v1/chains', { name: uniq('Designer approval'), nodes: [{ node_id: 'start', kind: 'tool', name: 'echo', position: { x: 0, y: 0 } }] });
  const page = await open('/chains/' + ch.id);
  await page.waitForSelector('#editor[data-ready="1"]');
  await page.waitForFunction(() => window.__editor && window.__editor.cy);
  const ask = await page.evaluate(() => window.__editor.addNode('interrupt', undefined, 'start'));
  // the "+" after the approval names the outcome it adds
  await page.evaluate((id) => { const cy = window.__editor.cy; cy.$(':selected').unselect(); cy.getElementById(id).select(); }, ask);
  await page.waitForSelector('#node-plus:not([hidden])');
  await page.click('#node-plus');
  await page.waitForSelector('#kind-menu:not([hidden])');
  assert.match(await page.textContent('#kind-menu-title'), new RegExp('Add after ' + ask + ', when approved'));
  await page.keyboard.press('Escape');
  const yes = await page.evaluate((id) => window.__editor.addNode('tool', undefined, id), ask);
  const no = await page.evaluate((id) => window.__editor.addNode('tool', undefined, id), ask);
  const labels = await page.evaluate(([a, y, n]) => {
    const e = (t) => window.__editor.doc.edges.find((x) => x.source === a && x.target === t);
    return [e(y).label, e(n).label];
  }, [ask, yes, no]);
  assert.deepEqual(labels, ['approved', 'rejected']);
  await page.done();
});

test('a long streamed note stays inside its node on the run page', async () => {
  const line = 'x'.repeat(30) + ' streamed words that go on and on ' + 'y'.repeat(60);
  const ch = await api('POST', '/v1/chains', {
    name: uniq('Long note'),
    nodes: [{ node_id: 'js', kind: 'tool', name: 'code', label: 'Talks a lot', input: { code: `console.log(${JSON.stringify(line)})\nconsole.log('second line')\nreturn 1` }, position: { x: 0, y: 0 } }],
  });
  const r = await api('POST', '/v1/chains/' + ch.id + '/runs', {});
  await runIn(r.run_id, ['completed']);
  const page = await open(null);
  await page.setViewportSize(SIZES[0]);
  await page.goto(new URL('/runs/' + r.run_id, process.env.STUDIO_URL || 'http://127.0.0.1:8080').href);
  await page.waitForSelector('#runpage[data-ready="1"]');
  await page.waitForFunction(() => /log:/.test(window.__run.cy.getElementById('js').data('display')));
  const box = await page.evaluate(() => {
    const n = window.__run.cy.getElementById('js');
    const body = n.boundingBox({ includeLabels: false, includeOverlays: false });
    const label = n.boundingBox({ includeNodes: false, includeEdges: false, includeLabels: true, includeOverlays: false });
    return { body, label, display: n.data('display') };
  });
  assert.ok(box.label.x1 >= box.body.x1 && box.label.x2 <= box.body.x2 && box.label.y1 >= box.body.y1 && box.label.y2 <= box.body.y2,
    'label ' + JSON.stringify(box.label) + ' inside node ' + JSON.stringify(box.body) + ': ' + box.display);
  // the node list keeps the whole note
  assert.match(await page.textContent('#node-table tr[data-node-id="js"] .note-cell'), /streamed words that go on and on/);
  await page.done();
});

test("data flows into a root by default: a newcomer's first transform reads the run's input", async () => {
  const ch = await api('POST', '/v1/chains', { name: uniq('First transform'), nodes: [{ node_id: 'shape', kind: 'tool', name: 'transform', input: { expression: 'name' } }] });
  const r = await api('POST', '/v1/chains/' + ch.id + '/runs', { input: { name: 'x' } });
  const done = await runIn(r.run_id, ['completed', 'failed']);
  assert.equal(done.status, 'completed');
  assert.equal(done.final_output, 'x');
  // told otherwise, it keeps to its static input
  const only = await api('POST', '/v1/chains', { name: uniq('Static only'), nodes: [{ node_id: 'shape', kind: 'tool', name: 'transform', input: { expression: 'name' }, static_only: true }] });
  const r2 = await api('POST', '/v1/chains/' + only.id + '/runs', { input: { name: 'x' } });
  assert.equal((await runIn(r2.run_id, ['completed'])).final_output, undefined);
});

const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'];

for (const theme of ['light', 'dark']) {
  test(`axe finds nothing on the paused run page and the inbox with an approval's context, ${theme}`, async () => {
    const ch = await api('POST', '/v1/chains', refundChain(uniq('Refund context axe')));
    const runId = await pausedRun(ch.id);
    const found = [];
    for (const path of ['/runs/' + runId, '/inbox?run=' + encodeURIComponent(runId)]) {
      const page = await open(null, { colorScheme: theme });
      await page.addInitScript((t) => localStorage.setItem('studio-theme', t), theme);
      await page.setViewportSize(SIZES[0]);
      await page.goto(new URL(path, process.env.STUDIO_URL || 'http://127.0.0.1:8080').href);
      await page.waitForSelector('table.ask-fields');
      await page.waitForLoadState('networkidle');
      if (path.startsWith('/runs/')) await page.click('details.ask-value > summary'); // the value form open too
      await page.evaluate(AXE + '\n;void 0');
      const v = await page.evaluate(async (tags) => {
        // eslint-disable-next-line no-undef
        const r = await axe.run(document, { runOnly: { type: 'tag', values: tags }, rules: { 'label-content-name-mismatch': { enabled: true }, 'empty-table-header': { enabled: true } }, resultTypes: ['violations'] });
        return r.violations.flatMap((x) => x.nodes.map((n) => `${x.id} at ${n.target.join(' ')}: ${(n.failureSummary || '').replace(/\s+/g, ' ').slice(0, 200)}`));
      }, TAGS);
      for (const x of v) found.push(path + ': ' + x);
      await page.done();
    }
    assert.deepEqual(found, [], `${theme}: ${found.join('\n')}`);
  });
}
