// Pauses inside map items: a run whose map asks a person about
// each item shows one answer form per pending pause on its page, each naming
// its pause; answering one by keyboard leaves the other waiting, answering
// the last completes the run with both answers in item order.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { launch, close, open, api, SHOTS } from './lib.mjs';

before(async () => { await launch(); });
after(async () => { await close(); });

async function waitStatus(id, want) {
  for (let i = 0; i < 100; i++) {
    const r = await api('GET', '/v1/runs/' + id);
    if (r.status === want) return r;
    await new Promise((ok) => setTimeout(ok, 100));
  }
  throw new Error('run ' + id + ' never reached ' + want);
}

test('each pause of a map gets its own form on the run page, answered one at a time', async () => {
  const ch = await api('POST', '/v1/chains', {
    name: 'e2e per-item questions ' + Date.now(),
    nodes: [
      { node_id: 'review', kind: 'map', items_path: 'input.items', map_node: 'ask' },
      { node_id: 'ask', kind: 'tool', name: 'interrupt', input_map: { prompt: 'item' } },
    ],
    edges: [],
  });
  const started = await api('POST', '/v1/chains/' + ch.id + '/runs', { input: { items: ['first invoice', 'second invoice'] } });
  const run = await waitStatus(started.run_id, 'paused');
  assert.deepEqual(run.pending.map((p) => p.pause_id), ['review[0]', 'review[1]']);

  const page = await open('/runs/' + started.run_id);
  await page.waitForFunction(() => document.getElementById('runpage').dataset.ready === '1');
  const forms = await page.$$eval('form.approval', (fs) => fs.map((f) => ({
    pause: f.querySelector('input[name=pause_id]').value,
    prompt: f.querySelector('pre.prompt').textContent,
    code: (f.querySelector('h2 code.pause-id') || {}).textContent,
  })));
  assert.deepEqual(forms, [
    { pause: 'review[0]', prompt: 'first invoice', code: 'review[0]' },
    { pause: 'review[1]', prompt: 'second invoice', code: 'review[1]' },
  ]);
  await page.screenshot({ path: join(SHOTS, 'pauses-two-forms.png') });

  // Answer the second item by keyboard: its value field, then its button.
  await page.focus('#resume-value-2');
  await page.keyboard.press('Control+a');
  await page.keyboard.type('"paid second"');
  await page.focus('#btn-resume-value-2');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelectorAll('form.approval').length === 1, null, { timeout: 15000 });
  assert.equal(await page.inputValue('form.approval input[name=pause_id]'), 'review[0]');
  const mid = await api('GET', '/v1/runs/' + started.run_id);
  assert.equal(mid.status, 'paused');
  assert.deepEqual(mid.pending.map((p) => p.pause_id), ['review[0]']);

  await page.fill('#resume-value', '"paid first"');
  await page.click('#btn-resume-value');
  const done = await waitStatus(started.run_id, 'completed');
  assert.deepEqual(done.final_output, ['paid first', 'paid second']);
  await page.done();
});
