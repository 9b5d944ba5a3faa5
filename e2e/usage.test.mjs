// Model usage: the run page's usage panel (tokens and cost per
// node and in total, reloaded live as model calls report) and the /usage
// page. It needs a studio whose agents folder holds at least one model agent
// whose model server answers with `usage` (an OpenAI-compatible server on
// loopback, so the studio needs --model-allow-private), and ideally --prices
// naming that model; without one it skips.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { launch, close, open, api, SHOTS } from './lib.mjs';

before(launch);
after(close);

// modelAgent is the first model agent whose server answers its model list
// (the example set's greeting-assistant names a local Ollama that a test
// machine may not run; the guard may refuse a loopback server).
async function modelAgent() {
  const { agents } = await api('GET', '/v1/agents');
  for (const a of (agents || []).filter((x) => x.kind === 'model')) {
    try {
      await api('GET', `/v1/agents/${encodeURIComponent(a.name)}/models`);
      return a;
    } catch { /* its server does not answer here: try the next */ }
  }
  return undefined;
}

// fmtCost is the panel's cost cell for a usage total (views/usage.go).
function fmtCost(u) {
  if (u.cost == null) return '—';
  if (u.unpriced_calls && u.unpriced_calls === u.calls) return 'no price';
  const s = u.cost.toFixed(u.cost > 0 && u.cost < 0.01 ? 6 : 4);
  return u.unpriced_calls ? `${s} (+${u.unpriced_calls} unpriced)` : s;
}

const cells = (row) => row.locator('th, td').allTextContents();

async function waitStatus(id, status) {
  for (let i = 0; i < 100; i++) {
    const r = await api('GET', '/v1/runs/' + id);
    if (r.status === status) return r;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error(`run ${id} did not reach ${status}`);
}

test('the run page shows tokens and cost per node, live, and the usage page sums them', async (t) => {
  const agent = await modelAgent();
  if (!agent) { t.skip('no model agent whose server answers (start the studio with --agents naming one, and --model-allow-private for a loopback server)'); return; }
  const name = 'usage-e2e-' + Date.now();
  const chain = await api('POST', '/v1/chains', {
    name, entry_node: 'draft',
    nodes: [
      { node_id: 'draft', kind: 'agent', name: agent.name, label: 'Draft', input: { query: 'write a reply' } },
      { node_id: 'ok', kind: 'interrupt', label: 'Approve', config: { prompt: 'Send it?' } },
      { node_id: 'polish', kind: 'agent', name: agent.name, label: 'Polish', input_map: { query: 'draft.output.answer' } },
    ],
    edges: [{ source: 'draft', target: 'ok' }, { source: 'ok', target: 'polish' }],
  });
  const { run_id: id } = await api('POST', `/v1/chains/${chain.id}/runs`, { input: {} });
  await waitStatus(id, 'paused');

  const page = await open('/runs/' + id);
  await page.waitForSelector('#runpage[data-ready="1"]');
  const table = page.locator('#usage-table');
  await table.waitFor();
  assert.equal(await table.locator('tbody tr').count(), 1, 'one node has called a model so far');
  const usage = await api('GET', `/v1/runs/${id}/usage`);
  const n = usage.nodes[0];
  assert.deepEqual(await cells(table.locator('tbody tr').first()),
    ['Draft (draft)', '1', String(n.input_tokens).replace(/\B(?=(\d{3})+$)/g, ' '), String(n.output_tokens).replace(/\B(?=(\d{3})+$)/g, ' '), fmtCost(n)]);
  const total = await cells(page.locator('#usage-total'));
  assert.deepEqual([total[0], total[1], total[2].replace(/\s/g, ''), total[4]], ['Total', '1', String(usage.total.input_tokens), fmtCost(usage.total)]);

  // Approved from the page: the second call shows up without a reload.
  await page.click('#btn-approve');
  await page.waitForFunction(() => document.querySelectorAll('#usage-table tbody tr').length === 2, null, { timeout: 10000 });
  await page.waitForFunction(() => document.querySelector('#usage-total td').textContent === '2');
  const after = await api('GET', `/v1/runs/${id}/usage`);
  assert.equal(after.total.calls, 2);
  assert.equal((await page.locator('#usage-total td').nth(1).textContent()).replace(/\s/g, ''), String(after.total.input_tokens));
  // The timeline says what each call consumed.
  const timeline = await page.locator('#timeline').textContent();
  assert.match(timeline, new RegExp(`${agent.model}: \\d+ in, \\d+ out tokens`), timeline);
  await page.locator('#usage-section').screenshot({ path: join(SHOTS, 'run-usage.png') });
  await page.done();

  // The usage page: the chain is listed with its two calls, by keyboard too.
  const up = await open('/usage?by=chain&days=1&bucket=hour');
  const row = up.locator('#usage-totals tbody tr', { hasText: name });
  await row.waitFor();
  assert.equal((await cells(row))[1], '2');
  await up.locator('#usage-by').focus();
  await up.keyboard.press('ArrowDown'); // agent
  await up.locator('#usage-days').focus();
  await up.keyboard.press('Enter');
  await up.waitForURL(/by=agent/);
  assert.ok(await up.locator('#usage-totals tbody tr', { hasText: agent.name }).isVisible());
  await up.screenshot({ path: join(SHOTS, 'usage-page.png'), fullPage: true });
  await up.done();
});
