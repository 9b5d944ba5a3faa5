// Browser test of triggers: in the designer's Triggers panel,
// a malformed cron is refused with the field and column, a schedule is added
// and edited, a webhook is created and its secret shown once; a signed POST
// to the webhook starts a run that the runs list shows as "started by
// webhook", and the panel lists the firing. Screenshots go to
// TRIGGERS_SHOTS (default: the OS temp dir).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, close, open, api, BASE } from './lib.mjs';

const SHOTS = process.env.TRIGGERS_SHOTS || join(tmpdir(), 'triggers-shots');
mkdirSync(SHOTS, { recursive: true });

before(async () => { await launch(); });
after(async () => { await close(); });

const uniq = () => Date.now().toString(36) + Math.random().toString(36).slice(2, 6);

function sign(secret, body, at = Math.floor(Date.now() / 1000)) {
  return `t=${at},v1=` + createHmac('sha256', secret).update(`${at}.${body}`).digest('hex');
}

test('schedules and webhooks in the designer; a signed call starts a run started by webhook', async () => {
  const chain = await api('POST', '/v1/chains', {
    name: 'triggered ' + uniq(),
    nodes: [{ node_id: 'greet', kind: 'tool', name: 'echo', input_map: { who: 'input.who' }, position: { x: 0, y: 0 } }],
    edges: [],
  });
  const page = await open('/chains/' + chain.id);
  await page.waitForFunction(() => document.getElementById('triggers-badge').textContent === 'none');
  await page.click('#tab-triggers'); // the side panel's Triggers tab (remembered across the reload below)

  // A malformed cron: the dialog names the field and its column, and stays open.
  await page.click('#btn-add-schedule');
  await page.fill('#sched-cron', '0 9 32 * *');
  await page.fill('#sched-zone', 'Europe/Paris');
  await page.click('#schedule-submit');
  const err = page.locator('#schedule-error .form-error');
  await err.waitFor();
  const msg = await err.textContent();
  assert.match(msg, /column 5/);
  assert.match(msg, /day of month field "32"/);
  await page.screenshot({ path: join(SHOTS, 'triggers-bad-cron.png') });

  // An unknown zone names it.
  await page.fill('#sched-cron', '*/5 * * * *');
  await page.fill('#sched-zone', 'Mars/Olympus');
  await page.click('#schedule-submit');
  await page.waitForFunction(() => /Mars\/Olympus/.test(document.getElementById('schedule-error').textContent));
  assert.equal(await page.evaluate(() => document.activeElement.id), 'sched-zone');
  // The two refusals are the browser's only console lines (its log of a 422).
  const refused = page.errors.filter((e) => e.includes('status of 422'));
  assert.equal(refused.length, 2, page.errors.join('\n'));
  page.errors.splice(0, page.errors.length, ...page.errors.filter((e) => !e.includes('status of 422')));

  // Good: saved and listed with its next tick.
  await page.fill('#sched-zone', 'Europe/Paris');
  await page.selectOption('#sched-overlap', 'queue');
  await page.fill('#sched-input', '{"who": "the schedule"}');
  await page.click('#schedule-submit');
  const sched = page.locator('#schedules-list li.schedule');
  await sched.waitFor();
  assert.equal(await sched.locator('code.cron').textContent(), '*/5 * * * *');
  assert.match(await sched.locator('.trig-meta').textContent(), /overlap: queue · catch-up: skip · next /);
  const saved = await api('GET', '/v1/chains/' + chain.id + '/triggers');
  assert.deepEqual(saved.schedules[0].input, { who: 'the schedule' });
  assert.equal(saved.schedules[0].time_zone, 'Europe/Paris');

  // Edit with the keyboard: disable it.
  await sched.getByRole('button', { name: /Edit the schedule/ }).focus();
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.getElementById('schedule-dialog').open);
  assert.equal(await page.inputValue('#sched-cron'), '*/5 * * * *');
  await page.uncheck('#sched-enabled');
  await page.keyboard.press('Tab');
  await page.click('#schedule-submit');
  await page.locator('#schedules-list li.schedule.off').waitFor();
  assert.equal((await api('GET', '/v1/chains/' + chain.id + '/triggers')).schedules[0].enabled, false);

  // A webhook: the secret is shown once, in the dialog.
  await page.click('#btn-add-hook');
  await page.click('#hook-submit');
  await page.locator('#hook-created').waitFor();
  const secret = await page.inputValue('#hook-secret');
  const url = await page.inputValue('#hook-url');
  assert.match(secret, /^[0-9a-f]{64}$/);
  assert.ok(url.startsWith(BASE + '/v1/hooks/'), url);
  await page.screenshot({ path: join(SHOTS, 'triggers-hook-secret.png') });
  await page.keyboard.press('Escape');
  await page.waitForFunction(() => !document.getElementById('hook-dialog').open);
  await page.locator('#hooks-list li.hook').waitFor();
  assert.ok(!(await page.content()).includes(secret), 'the secret stays on the page after the dialog closed');

  // Unsigned: 401, nothing starts. Signed: 202 and a run.
  const body = JSON.stringify({ who: 'the webhook' });
  let res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
  assert.equal(res.status, 401);
  res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Studio-Signature': sign('0'.repeat(64), body) }, body });
  assert.equal(res.status, 401);
  assert.equal((await api('GET', '/v1/runs?chain=' + chain.id)).runs.length, 0);
  res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Studio-Signature': sign(secret, body) }, body });
  assert.equal(res.status, 202);
  const { run_id: runId } = await res.json();
  let run;
  for (let i = 0; i < 200; i++) {
    run = await api('GET', '/v1/runs/' + runId);
    if (run.status !== 'running' && run.status !== 'queued' && !run.active) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.equal(run.status, 'completed');
  assert.equal(run.started_by, 'webhook');
  assert.deepEqual(run.input, { who: 'the webhook' });

  // The runs list says what started it.
  const runs = await open('/chains/' + chain.id + '/runs');
  const row = runs.locator('tr', { hasText: 'started by webhook' });
  await row.waitFor();
  assert.equal(await runs.locator('tr', { hasText: 'started by webhook' }).count(), 1);
  await runs.screenshot({ path: join(SHOTS, 'triggers-runs-list.png') });
  await runs.done();

  // The run page too, and the designer lists the firing with a link to the run.
  const rp = await open('/runs/' + runId);
  assert.equal(await rp.locator('#run-trigger').textContent(), 'started by webhook');
  await rp.done();
  await page.reload();
  const firing = page.locator('#hooks-list .firing.started');
  await firing.waitFor();
  assert.equal(await firing.locator('a').getAttribute('href'), '/runs/' + runId);
  await page.locator('#triggers-panel').scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(SHOTS, 'triggers-panel.png') });
  await page.locator('#triggers-panel').screenshot({ path: join(SHOTS, 'triggers-panel-only.png') });

  // Remove both (the confirm is accepted by lib.mjs).
  await page.getByRole('button', { name: /Remove the webhook/ }).click();
  await page.waitForFunction(() => document.querySelectorAll('#hooks-list li.hook').length === 0);
  await page.getByRole('button', { name: /Remove the schedule/ }).click();
  await page.waitForFunction(() => document.getElementById('triggers-badge').textContent === 'none');
  res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Studio-Signature': sign(secret, body) }, body });
  assert.equal(res.status, 404);
  await page.done();
});
