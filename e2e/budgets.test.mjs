// Browser test of a chain's model budget: the chain panel's four number
// fields save into the document's budget, show again after a reload, and
// an emptied field leaves no limit behind.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, close, open, api, waitSaved } from './lib.mjs';

before(async () => { await launch(); });
after(async () => { await close(); });

const uniq = () => Date.now().toString(36) + Math.random().toString(36).slice(2, 6);

test('the chain panel edits the chain budget', async () => {
  const chain = await api('POST', '/v1/chains', {
    name: 'budgeted ' + uniq(),
    nodes: [{ node_id: 'a', kind: 'tool', name: 'echo', position: { x: 0, y: 0 } }],
    edges: [],
  });
  const page = await open(`/chains/${chain.id}`);
  await page.waitForSelector('#editor[data-ready="1"]');
  await page.fill('#props [data-f="budget.run.tokens"]', '1200');
  await page.fill('#props [data-f="budget.day.tokens"]', '50000');
  await waitSaved(page);
  let got = await api('GET', `/v1/chains/${chain.id}`);
  assert.deepEqual(got.doc.budget, { run: { tokens: 1200 }, day: { tokens: 50000 } });

  await page.reload();
  await page.waitForSelector('#editor[data-ready="1"]');
  assert.equal(await page.inputValue('#props [data-f="budget.day.tokens"]'), '50000');
  await page.fill('#props [data-f="budget.run.tokens"]', '');
  await waitSaved(page);
  got = await api('GET', `/v1/chains/${chain.id}`);
  assert.deepEqual(got.doc.budget, { day: { tokens: 50000 } });
  await page.done();
});

test("a schedule's budget set by the API survives an edit in the designer, and shows", async () => {
  const chain = await api('POST', '/v1/chains', {
    name: 'budgeted trigger ' + uniq(),
    nodes: [{ node_id: 'a', kind: 'tool', name: 'echo', position: { x: 0, y: 0 } }],
    edges: [],
  });
  await api('POST', `/v1/chains/${chain.id}/schedules`, { cron: '@daily', enabled: false, budget: { tokens: 9000 } });
  const page = await open(`/chains/${chain.id}`);
  await page.click('#tab-triggers');
  const sched = page.locator('#schedules-list li.schedule');
  await sched.waitFor();
  assert.match(await sched.locator('.trig-meta').textContent(), /budget 9000 tokens a day/);
  await sched.getByRole('button', { name: /Edit the schedule/ }).click();
  await page.waitForFunction(() => document.getElementById('schedule-dialog').open);
  assert.equal(await page.inputValue('#sched-budget-tokens'), '9000');
  await page.selectOption('#sched-overlap', 'queue');
  await page.click('#schedule-submit');
  await page.waitForFunction(() => !document.getElementById('schedule-dialog').open);
  const saved = (await api('GET', `/v1/chains/${chain.id}/triggers`)).schedules[0];
  assert.equal(saved.overlap, 'queue');
  assert.deepEqual(saved.budget, { tokens: 9000 });
  await page.done();
});
