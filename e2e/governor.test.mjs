// Browser tests of the run queue: a run waiting for a free slot shows as
// queued on its page, with its place in line, and the runs list filters by
// it. Needs a studio started with --max-running-runs 1.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { launch, close, open, api, SHOTS } from './lib.mjs';

before(async () => { await launch(); });
after(async () => { await close(); });

const uniq = () => Date.now().toString(36) + Math.random().toString(36).slice(2, 6);

test('a queued run shows as queued on its page and in the runs list filter', async () => {
  const ch = await api('POST', '/v1/chains', { name: 'slow ' + uniq(), nodes: [{ node_id: 'wait', kind: 'tool', name: 'delay', input: { ms: 30000 } }] });
  const id = ch.id || ch.chain_id;
  // Fill every slot, then one more waits.
  const started = [];
  let queued;
  for (let i = 0; i < 64 && !queued; i++) {
    const r = await api('POST', '/v1/chains/' + id + '/runs', { input: {} });
    started.push(r.run_id);
    if (r.status === 'queued') queued = r.run_id;
  }
  assert.ok(queued, 'a run waits once the slots are full (start the studio with --max-running-runs 1)');
  try {
    const page = await open('/runs/' + queued);
    await page.waitForFunction(() => document.getElementById('runpage').dataset.ready === '1');
    assert.equal((await page.textContent('#run-status')).trim(), 'queued');
    const wait = (await page.textContent('#queue-wait')).replace(/\s+/g, ' ').trim();
    assert.match(wait, /^Waiting for a free slot \(position 1\)\./);
    assert.ok(await page.isVisible('#btn-cancel'), 'a queued run can be cancelled');
    await page.screenshot({ path: join(SHOTS, 'governor-queued-run.png') });
    await page.done();

    const list = await open('/runs');
    await list.selectOption('#filter-status', 'queued');
    // the unfiltered list shows the run too: wait for the filtered rows
    await list.waitForFunction((rid) => !!document.querySelector(`#all-runs a[href="/runs/${rid}"]`)
      && [...document.querySelectorAll('#all-runs .status')].every((x) => x.textContent.trim() === 'queued'), queued);
    const statuses = await list.$$eval('#all-runs .status', (xs) => xs.map((x) => x.textContent.trim()));
    assert.ok(statuses.length >= 1 && statuses.every((s) => s === 'queued'), 'only queued runs: ' + statuses.join(', '));
    assert.match(list.url(), /status=queued/);
    await list.screenshot({ path: join(SHOTS, 'governor-runs-queued.png') });
    await list.done();

    // Once the run ahead of it ends, the page follows it into running.
    const follow = await open('/runs/' + queued);
    await follow.waitForFunction(() => document.getElementById('runpage').dataset.ready === '1');
    await Promise.all(started.filter((r) => r !== queued).map((r) => api('POST', '/v1/runs/' + r + '/cancel')));
    await follow.waitForFunction(() => document.getElementById('run-status').textContent.trim() === 'running', null, { timeout: 30000 });
    assert.equal(await follow.$('#queue-wait'), null, 'no waiting note once it runs');
    await follow.done();

    // Cancel from its page.
    const again = await open('/runs/' + queued);
    await again.waitForFunction(() => document.getElementById('runpage').dataset.ready === '1');
    await again.click('#btn-cancel');
    await again.waitForFunction(() => document.getElementById('run-status').textContent.trim() === 'cancelled');
    await again.done();
  } finally {
    for (const r of started) await api('POST', '/v1/runs/' + r + '/cancel').catch(() => {});
  }
});
