// One answer, whichever door it comes through: three runs of the same chain
// (an interrupt node as the palette adds it: a prompt only, then a step
// after it) are answered, one from the API, one from the run page's
// buttons, one from the inbox, and give one outcome for approve (the run
// goes on with the proposed value) and one for reject (the run fails at the
// node). The inbox then says what really happened to the run.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { launch, close, open, api, SHOTS } from './lib.mjs';

before(async () => { await launch(); });
after(async () => { await close(); });

const uniq = (p) => p + ' ' + Date.now() + '-' + Math.floor(Math.random() * 1000);

function paletteChain(name) {
  return {
    name,
    nodes: [
      { node_id: 'prep', kind: 'tool', name: 'echo', input_map: { amount: 'input.amount' } },
      { node_id: 'ask', kind: 'interrupt', label: 'Check the amount', config: { prompt: 'Pay it?' } },
      { node_id: 'after', kind: 'tool', name: 'echo', input_map: { answer: 'ask.output' } },
    ],
    edges: [{ source: 'prep', target: 'ask' }, { source: 'ask', target: 'after' }],
  };
}

async function until(what, fn) {
  for (let i = 0; i < 400; i++) {
    const v = await fn();
    if (v) return v;
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error('never: ' + what);
}

async function pausedRun(chainId) {
  const r = await api('POST', '/v1/chains/' + chainId + '/runs', { input: { amount: 7 } });
  await until('run ' + r.run_id + ' pauses', async () => (await api('GET', '/v1/runs/' + r.run_id)).status === 'paused');
  return r.run_id;
}

const ended = (runId) => until('run ' + runId + ' ends', async () => {
  const run = await api('GET', '/v1/runs/' + runId);
  return ['paused', 'running', 'queued'].includes(run.status) ? null : run;
});

// outcome is what a person would compare: how the run ended, what the
// step after the pause got, and what the audit says was clicked.
const outcome = (run) => ({
  status: run.status,
  after: run.outputs.after === undefined ? null : run.outputs.after,
  action: run.answers.map((a) => a.action).join(','),
  rejected: !!(run.error && /rejected by local/.test(run.error.message)),
});

for (const action of ['approve', 'reject']) {
  test(`${action} from the API, the run page and the inbox has one outcome`, async () => {
    const ch = await api('POST', '/v1/chains', paletteChain(uniq('One answer, ' + (action === 'approve' ? 'yes' : 'no'))));
    const runs = { api: await pausedRun(ch.id), page: await pausedRun(ch.id), inbox: await pausedRun(ch.id) };

    await api('POST', '/v1/runs/' + runs.api + '/resume', { action });

    const page = await open('/runs/' + runs.page);
    await page.waitForSelector('#btn-' + action);
    assert.match(await page.textContent('#approval-form h2'), /Check the amount/);
    if (action === 'reject') await page.screenshot({ path: join(SHOTS, 'answers-run-page.png'), fullPage: true });
    await page.click('#btn-' + action);
    const want = action === 'approve' ? 'completed' : 'failed';
    await page.waitForFunction((s) => document.getElementById('runpage').dataset.status === s, want, { timeout: 15000 });
    if (action === 'reject') await page.screenshot({ path: join(SHOTS, 'answers-run-page-rejected.png'), fullPage: true });
    await page.done();

    const inbox = await open('/inbox?run=' + encodeURIComponent(runs.inbox));
    const item = inbox.locator('.inbox-item[data-run-id="' + runs.inbox + '"]');
    await item.waitFor();
    assert.match(await item.locator('h2').innerText(), /Check the amount\s+ask/, 'the card names the node by its label, the id beside it');
    await item.locator('button[data-action="' + action + '"]').click();
    const said = action === 'approve' ? /Approved\. The run completed\./ : /Rejected\. The run failed: .*rejected by local/;
    await inbox.waitForFunction(([id, re]) => new RegExp(re).test(document.querySelector('.inbox-item[data-run-id="' + id + '"] .ib-done-note').textContent),
      [runs.inbox, said.source], { timeout: 15000 });
    await inbox.screenshot({ path: join(SHOTS, 'answers-inbox-' + action + '.png'), fullPage: true });
    await inbox.done();

    const got = {};
    for (const [door, id] of Object.entries(runs)) got[door] = outcome(await ended(id));
    const expected = action === 'approve'
      ? { status: 'completed', after: { answer: { amount: 7 } }, action: 'approve', rejected: false }
      : { status: 'failed', after: null, action: 'reject', rejected: true };
    for (const door of Object.keys(runs)) assert.deepEqual(got[door], expected, `${action} from ${door}: ${JSON.stringify(got)}`);
  });
}
