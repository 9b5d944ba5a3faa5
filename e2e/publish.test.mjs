// Browser test of draft and published: a webhook that fires while a chain is
// being edited runs the published version, not the draft; Publish (by
// keyboard) makes the draft the published version, which the next webhook
// call runs; the versions page marks the published version, and publishing
// a draft with errors is refused with the issue named.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { join } from 'node:path';
import { launch, close, open, api, BASE, SHOTS, waitSaved } from './lib.mjs';

before(async () => { await launch(); });
after(async () => { await close(); });

const uniq = () => Date.now().toString(36) + Math.random().toString(36).slice(2, 6);

function sign(secret, body, at = Math.floor(Date.now() / 1000)) {
  return `t=${at},v1=` + createHmac('sha256', secret).update(`${at}.${body}`).digest('hex');
}

// fire calls the webhook and returns the version its run ran.
async function fire(hook) {
  const body = JSON.stringify({ who: 'hook ' + uniq() });
  const res = await fetch(BASE + hook.path, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Studio-Signature': sign(hook.secret, body) }, body });
  assert.equal(res.status, 202, await res.clone().text());
  return (await res.json()).chain_version;
}

test('a webhook fired during an edit runs the published version; Publish moves it', async () => {
  const chain = await api('POST', '/v1/chains', {
    name: 'published ' + uniq(),
    nodes: [{ node_id: 'greet', kind: 'tool', name: 'echo', input_map: { who: 'input.who' }, position: { x: 0, y: 0 } }],
    edges: [],
  });
  const hook = await api('POST', `/v1/chains/${chain.id}/hooks`, {});
  const page = await open(`/chains/${chain.id}`);
  await page.waitForSelector('#editor[data-ready="1"]');
  assert.equal(await page.getAttribute('#btn-publish', 'data-state'), 'published');

  // An edit in progress: the description, typed into the chain's panel.
  await page.fill('#props [data-f="description"]', 'half-way through an edit');
  await waitSaved(page);
  await page.waitForFunction(() => document.getElementById('btn-publish').dataset.state === 'draft');
  assert.match(await page.textContent('#btn-publish'), /unpublished changes/);
  assert.equal(await fire(hook), 1, 'the webhook runs the published version 1, not the draft');

  // Publish by keyboard: the button, a message, Enter.
  await page.focus('#btn-publish');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#publish-dialog[open]');
  assert.match(await page.textContent('#publish-changes'), /Publishes v2 in place of v1/);
  await page.keyboard.type('ready for the webhook');
  await page.screenshot({ path: join(SHOTS, 'publish-dialog.png') });
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.getElementById('btn-publish').dataset.state === 'published');
  assert.equal(await fire(hook), 2, 'after Publish the webhook runs version 2');
  const got = await api('GET', `/v1/chains/${chain.id}`);
  assert.equal(got.published.version, 2);
  assert.equal(got.published.message, 'ready for the webhook');

  // The versions page marks the published version.
  await page.goto(BASE + `/chains/${chain.id}/versions`);
  assert.match(await page.textContent('.version-list'), /published/);
  await page.screenshot({ path: join(SHOTS, 'publish-versions.png') });
  await page.done();
});

test('a draft with errors is not published: the dialog names the issue', async () => {
  const chain = await api('POST', '/v1/chains', {
    name: 'unpublishable ' + uniq(),
    nodes: [{ node_id: 'a', kind: 'tool', name: 'echo', position: { x: 0, y: 0 } }],
    edges: [],
  });
  await api('PUT', `/v1/chains/${chain.id}?version=1`, {
    name: chain.name, nodes: [{ node_id: 'a', kind: 'tool', name: 'no_such_tool', position: { x: 0, y: 0 } }], edges: [],
  });
  const page = await open(`/chains/${chain.id}`);
  await page.waitForSelector('#editor[data-ready="1"]');
  await page.click('#btn-publish');
  await page.waitForSelector('#publish-dialog[open]');
  await page.click('#publish-submit');
  await page.waitForSelector('#publish-result .form-error');
  const text = await page.textContent('#publish-result');
  assert.match(text, /the draft has errors/);
  assert.match(text, /a: .*no_such_tool/);
  assert.equal((await api('GET', `/v1/chains/${chain.id}`)).published.version, 1);
  await page.keyboard.press('Escape');
  // the refused publish is the one failed request Chromium reports
  assert.deepEqual(page.errors.splice(0), ['console error: Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)']);
  await page.done();
});

test('webhooks you can try: copy buttons, a curl line that works, Send test event opens the run', async () => {
  const chain = await api('POST', '/v1/chains', {
    name: 'tryable ' + uniq(),
    sample_input: { who: 'the sample' },
    nodes: [{ node_id: 'greet', kind: 'tool', name: 'echo', input_map: { who: 'input.who' }, position: { x: 0, y: 0 } }],
    edges: [],
  });
  const page = await open(`/chains/${chain.id}`);
  await page.waitForSelector('#editor[data-ready="1"]');
  await page.click('#tab-triggers'); // the side panel's Triggers tab
  await page.click('#btn-add-hook');
  await page.waitForSelector('#hook-dialog[open]');
  await page.click('#hook-submit');
  await page.waitForSelector('#hook-created:not([hidden])');
  const secret = await page.inputValue('#hook-secret');
  const url = await page.inputValue('#hook-url');
  const curl = await page.inputValue('#hook-curl');
  assert.ok(curl.includes(secret) && curl.includes(url), 'the curl line carries the secret and the URL');
  await page.click('button.copy[data-copy="hook-url"]');
  assert.match(await page.textContent('#copy-status'), /Copied|Selected/);
  await page.screenshot({ path: join(SHOTS, 'webhook-created.png') });

  // The line, run by a shell as a person would paste it: it signs and sends.
  const out = execFileSync('bash', ['-c', curl], { encoding: 'utf8', timeout: 20000 });
  const sent = JSON.parse(out);
  assert.ok(sent.run_id, out);
  // …and again: it signs at the time it runs, so it is not a replay.
  assert.ok(JSON.parse(execFileSync('bash', ['-c', curl.replace('from curl', 'again')], { encoding: 'utf8', timeout: 20000 })).run_id);
  await page.click('#hook-cancel');

  // Send test event: the run page of the run it started, said to be
  // started by the webhook, with the chain's sample input.
  await page.waitForSelector('#hooks-list button:has-text("Send test event")');
  await Promise.all([page.waitForURL(/\/runs\//), page.click('#hooks-list button:has-text("Send test event")')]);
  assert.match(await page.textContent('#run-trigger'), /started by webhook/);
  const runID = page.url().split('/runs/')[1];
  const run = await api('GET', '/v1/runs/' + runID);
  assert.deepEqual(run.input, { who: 'the sample' });
  await page.done();
});
