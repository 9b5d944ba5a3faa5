// The shipped agent example runs end to end, offline, from its page: the
// chain completes and no node reads as an error (a node that never ran is
// never an error). Needs the studio started with --agents examples/agents.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { launch, close, open, api, SHOTS } from './lib.mjs';

before(async () => { await launch(); });
after(async () => { await close(); });

async function runFromPage(context) {
  const agents = await api('GET', '/v1/agents');
  assert.ok(agents.agents.some((a) => a.name === 'sales-qualifier'), 'the example agents are loaded (serve --agents examples/agents)');
  const page = await open('/agents/sales-qualifier');
  if (context === undefined) { // the README's picture of an agent's expanded chain
    await page.waitForSelector('[data-ready="1"]');
    await page.screenshot({ path: join(SHOTS, 'agent.png') });
  }
  await page.fill('textarea[name=query]', 'Ana at ACME');
  if (context !== undefined) await page.fill('textarea[name=context]', context);
  await Promise.all([page.waitForURL(/\/runs\/[0-9a-f-]+$/), page.click('form.agent-run button[type=submit]')]);
  await page.waitForFunction(() => {
    const s = document.getElementById('runpage')?.dataset.status;
    return s && !['running', 'pending', 'queued'].includes(s);
  }, null, { timeout: 15000 });
  await page.waitForFunction(() => document.querySelectorAll('#node-table tbody tr').length === 4, null, { timeout: 10000 });
  const status = await page.getAttribute('#runpage', 'data-status');
  const rows = await page.$$eval('#node-table tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent.trim())));
  const timeline = await page.$$eval('#timeline li.ev, .timeline li.ev, li.ev', (lis) => lis.map((li) => li.className + ' ' + li.textContent.replace(/\s+/g, ' ').trim()));
  return { page, status, rows: Object.fromEntries(rows.map((r) => [r[0], { phase: r[2].toLowerCase(), note: r[3] }])), timeline };
}

test('agent example: a lead with no known facts completes, the default link fires', async () => {
  const { page, status, rows, timeline } = await runFromPage();
  assert.equal(status, 'completed');
  assert.equal(rows['sales-qualifier'].phase, 'done');
  assert.equal(rows['crm-logger'].phase, 'done');
  assert.equal(rows['human-triage'].phase, 'done');
  assert.equal(rows['email-composer'].phase, 'skip', 'its guard was false: it never ran');
  for (const [id, r] of Object.entries(rows)) assert.notEqual(r.phase, 'error', id + ' is not an error');
  assert.ok(!timeline.some((t) => /ph-error/.test(t)), 'no error in the timeline: ' + timeline.join(' | '));
  assert.ok(!timeline.some((t) => /ph-start/.test(t) && /email-composer/.test(t)), 'email-composer never started');
  await page.screenshot({ path: join(SHOTS, 'agent-run-default.png'), fullPage: true });
  await page.done();
});

test('agent example: a hot lead completes with every link that fired done', async () => {
  const { page, status, rows, timeline } = await runFromPage('{"budget": 60000, "timeline_days": 14}');
  assert.equal(status, 'completed');
  assert.deepEqual(Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, v.phase])),
    { 'sales-qualifier': 'done', 'email-composer': 'done', 'crm-logger': 'done', 'human-triage': 'skip' });
  assert.ok(!timeline.some((t) => /ph-error/.test(t)), 'no error in the timeline');
  await page.screenshot({ path: join(SHOTS, 'agent-run-hot.png'), fullPage: true });
  await page.done();
});

test('designer: a bare-word comparison is a warning in the validation panel, naming the edge and the fix', async () => {
  const name = 'bare-word-' + Date.now();
  const created = await api('POST', '/v1/chains', {
    name,
    nodes: [
      { node_id: 'fetch', kind: 'tool', name: 'echo', position: { x: 0, y: 0 } },
      { node_id: 'billing_desk', kind: 'tool', name: 'echo', position: { x: 0, y: 160 } },
    ],
    edges: [{ source: 'fetch', target: 'billing_desk', condition: 'category == billing' }],
  });
  const id = created.id || (created.chain && created.chain.id);
  assert.ok(id, 'chain created: ' + JSON.stringify(created).slice(0, 200));
  const page = await open('/chains/' + id);
  await page.click('#tab-issues'); // the side panel's Validation tab
  await page.waitForSelector('#issues .issue-link[data-edge-id]', { timeout: 10000 });
  const items = await page.$$eval('#issues .issue-link', (bs) => bs.map((b) => ({ edge: b.dataset.edgeId, field: b.dataset.field, sev: b.dataset.severity, text: b.textContent.replace(/\s+/g, ' ').trim() })));
  const w = items.find((i) => /bare_word_comparison|always true/.test(i.text));
  assert.ok(w, 'a bare-word warning is listed: ' + JSON.stringify(items));
  assert.equal(w.sev, 'warning');
  assert.equal(w.edge, 'fetch->billing_desk');
  assert.equal(w.field, 'condition');
  assert.match(w.text, /\{\{category\}\} == billing or category == 'billing'/);
  await page.screenshot({ path: join(SHOTS, 'bare-word.png'), fullPage: false });
  await page.done();
});
