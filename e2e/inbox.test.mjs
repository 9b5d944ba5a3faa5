// The approval inbox, driven like an approver would: the pending
// interrupt shows its chain, prompt, approvers and deadline; the approver
// opens "Modify, then approve" (a form from the interrupt's schema), types an
// amount over the schema's maximum and is told which field, fixes it and
// approves, all by keyboard; the run continues with the modified value and
// its page shows the audit entry. A second run is rejected with a comment.
// No axe violations. Screenshots go to /tmp/approvals17 (INBOX_SHOTS).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { launch, close, open, api } from './lib.mjs';

const SHOTS = process.env.INBOX_SHOTS || '/tmp/approvals17/shots';
mkdirSync(SHOTS, { recursive: true });
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

before(async () => { await launch(); });
after(async () => { await close(); });

const uniq = (p) => p + ' ' + Date.now() + '-' + Math.floor(Math.random() * 1000);

function expenseChain(name) {
  return {
    name,
    nodes: [
      { node_id: 'ask', kind: 'interrupt', label: 'Finance approval', config: {
        prompt: 'Pay the invoice to ACME?', proposed: { amount: 80, payee: 'ACME' }, approvers: ['finance'], timeout: '2h',
        schema: { type: 'object', required: ['amount'], properties: {
          amount: { type: 'number', maximum: 100, description: 'euros, at most 100' },
          payee: { type: 'string' } } } } },
      { node_id: 'pay', kind: 'tool', name: 'echo' },
      { node_id: 'refuse', kind: 'tool', name: 'echo' },
    ],
    edges: [{ source: 'ask', target: 'pay' }, { source: 'ask', target: 'refuse', label: 'rejected' }],
  };
}

async function pausedRun(chainId) {
  const r = await api('POST', '/v1/chains/' + chainId + '/runs', { input: {} });
  for (let i = 0; i < 200; i++) {
    const run = await api('GET', '/v1/runs/' + r.run_id);
    if (run.status === 'paused') return r.run_id;
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error('run never paused');
}

async function waitDone(runId) {
  for (let i = 0; i < 200; i++) {
    const run = await api('GET', '/v1/runs/' + runId);
    if (run.status !== 'paused' && run.status !== 'running' && run.status !== 'queued') return run;
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error('run never finished');
}

// expected removes the browser's console line for an answer the test made
// the server refuse (Chromium logs every 4xx fetch).
function expected(page, status) {
  const i = page.errors.findIndex((e) => e.includes('status of ' + status));
  assert.ok(i >= 0, 'the ' + status + ' was logged');
  page.errors.splice(i, 1);
}

async function tabTo(page, sel, max = 60) {
  for (let i = 0; i < max; i++) {
    if (await page.evaluate((s) => document.activeElement && document.activeElement.matches(s), sel)) return;
    await page.keyboard.press('Tab');
  }
  throw new Error('Tab never reached ' + sel);
}

test('an approver modifies then approves from the inbox, by keyboard, and the run page shows the audit', async () => {
  const name = uniq('Invoice sign-off');
  const ch = await api('POST', '/v1/chains', expenseChain(name));
  const runId = await pausedRun(ch.id);

  const page = await open('/inbox?q=' + encodeURIComponent(name));
  const item = page.locator('.inbox-item[data-run-id="' + runId + '"]');
  await item.waitFor();
  assert.equal(await page.locator('.inbox-item').count(), 1, 'the text filter keeps only this chain');
  const text = await item.innerText();
  assert.match(text, /Pay the invoice to ACME\?/);
  assert.match(text, /May answer: finance/);
  assert.match(text, /due in 1 h 59 min|due in 2 h 0 min/);
  assert.match(text, /then it is rejected/);
  await page.screenshot({ path: join(SHOTS, 'inbox.png'), fullPage: true });

  // Keyboard only: open the modify form, type an amount over the maximum.
  await page.locator('#filter-q').focus();
  await tabTo(page, '.ib-modify > summary');
  await page.keyboard.press('Enter');
  assert.equal(await item.locator('.ib-modify').evaluate((d) => d.open), true);
  await tabTo(page, '.sf-field[data-path="value.amount"] input');
  assert.equal(await page.evaluate(() => document.activeElement.value), '80', 'the form starts from the proposed value');
  await page.keyboard.press('Control+A');
  await page.keyboard.type('500');
  await tabTo(page, '.ib-comment');
  await page.keyboard.type('capped: the PO says 42');
  await tabTo(page, 'button[data-action="approve"]');
  await page.keyboard.press('Enter');
  const result = item.locator('.ib-result');
  await page.waitForFunction(() => /amount/.test(document.querySelector('.ib-result').textContent));
  assert.match(await result.innerText(), /\/amount/, 'the 422 names the field');
  assert.match(await result.innerText(), /100/);
  assert.equal(await page.evaluate(() => document.activeElement.closest('.sf-field') && document.activeElement.closest('.sf-field').dataset.path), 'value.amount', 'focus goes to the field named');
  await page.screenshot({ path: join(SHOTS, 'inbox-invalid.png'), fullPage: true });
  assert.equal((await api('GET', '/v1/runs/' + runId)).status, 'paused', 'a refused answer leaves the run paused');
  expected(page, 422);

  await page.keyboard.press('Control+A');
  await page.keyboard.type('42');
  await tabTo(page, 'button[data-action="approve"]');
  await page.keyboard.press('Enter');
  await item.locator('.ib-done-note').waitFor();
  // the note says what the run did, read from the run
  await page.waitForFunction((id) => /Approved\. The run completed\./.test(document.querySelector('.inbox-item[data-run-id="' + id + '"] .ib-done-note').textContent), runId);
  assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Open the run', 'focus lands on the link to the run');
  await page.screenshot({ path: join(SHOTS, 'inbox-approved.png'), fullPage: true });

  const run = await waitDone(runId);
  assert.equal(run.status, 'completed');
  assert.deepEqual(run.outputs.pay, { amount: 42, payee: 'ACME' });
  assert.equal(run.answers.length, 1);
  assert.equal(run.answers[0].action, 'approve');
  assert.equal(run.answers[0].comment, 'capped: the PO says 42');
  assert.equal(run.answers[0].by, 'local');

  // Enter on the focused link opens the run; its page shows the audit.
  await page.keyboard.press('Enter');
  await page.waitForSelector('#run-answers');
  const audit = await page.locator('#run-answers').innerText();
  assert.match(audit, /approved/);
  assert.match(audit, /capped: the PO says 42/);
  assert.match(audit, /127\.0\.0\.1/);
  await page.screenshot({ path: join(SHOTS, 'run-answers.png'), fullPage: true });
  await page.done();

  const again = await open('/inbox?q=' + encodeURIComponent(name));
  await again.locator('#inbox-empty').waitFor();
  await again.done();
});

test('reject with a comment; a late second answer is told someone answered first; no axe violations', async () => {
  const name = uniq('Invoice reject');
  const ch = await api('POST', '/v1/chains', expenseChain(name));
  const r1 = await pausedRun(ch.id);
  const r2 = await pausedRun(ch.id);
  const page = await open('/inbox?sort=deadline&chain=' + encodeURIComponent(ch.id));
  await page.locator('.inbox-item').first().waitFor();
  assert.equal(await page.locator('.inbox-item').count(), 2);

  if (!(await page.evaluate(() => !!window.axe))) await page.evaluate(AXE + '\n;void 0');
  const violations = await page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] }, resultTypes: ['violations'] });
    return r.violations.flatMap((v) => v.nodes.map((n) => v.id + ' at ' + n.target.join(' ')));
  });
  assert.deepEqual(violations, []);

  const first = page.locator('.inbox-item[data-run-id="' + r1 + '"]');
  await first.locator('.ib-comment').fill('not in this budget');
  await first.locator('button[data-action="reject"]').click();
  await first.locator('.ib-done-note').waitFor();
  assert.match(await first.innerText(), /Rejected/);
  const run = await waitDone(r1);
  assert.equal(run.outputs.pay, undefined);
  assert.equal(run.outputs.refuse.comment, 'not in this budget');

  // r2 is answered elsewhere (the API) while the page still shows it.
  await api('POST', '/v1/runs/' + r2 + '/resume', { action: 'approve' });
  const second = page.locator('.inbox-item[data-run-id="' + r2 + '"]');
  await second.locator('button[data-action="approve"]').click();
  await second.locator('.ib-done-note').waitFor();
  assert.match(await second.innerText(), /Someone else answered first/);
  assert.equal(await page.locator('#inbox-count').innerText(), '0 waiting');
  expected(page, 409);
  await page.screenshot({ path: join(SHOTS, 'inbox-late.png'), fullPage: true });
  await page.done();
});
