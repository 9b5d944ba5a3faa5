// Browser tests of people and roles: a studio of its own, its
// users added with `studio users add` before it starts; a viewer, an editor
// and an admin sign in with their tokens and see what their role allows.
// Uses STUDIO_BIN (scripts/e2e.sh sets it) or builds the studio.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { launch, close, open, ownStudio, SHOTS } from './lib.mjs';

let studio, base, tokens;

before(async () => {
  await launch();
  studio = await ownStudio('studio-roles-', [['ada', 'admin'], ['vic', 'viewer'], ['eddie', 'editor']], { examples: true });
  ({ base, tokens } = studio);
  for (const role of ['admin', 'viewer', 'editor']) assert.match(tokens[role], /^stu_[0-9a-f]{64}$/);
});
after(async () => {
  await close();
  if (studio) studio.stop();
});

async function call(role, method, path, body) {
  const res = await fetch(base + path, {
    method,
    headers: { Authorization: 'Bearer ' + tokens[role], ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, json: await res.json().catch(() => null) };
}

// signIn signs a fresh page in with the keyboard: the token field has the
// focus, Enter submits.
async function signIn(role, next = '/') {
  const page = await open(null);
  await page.goto(base + '/login?next=' + encodeURIComponent(next));
  // autofocus is applied at a rendering step that may come after the load
  // event: keys typed before it would miss the field
  await page.waitForFunction(() => document.activeElement && document.activeElement.name === 'token');
  await page.keyboard.type(tokens[role]);
  await Promise.all([page.waitForURL(base + next), page.keyboard.press('Enter')]);
  return page;
}

async function pausedRun() {
  const chains = (await call('admin', 'GET', '/v1/chains')).json.chains;
  const approval = chains.find((c) => c.name === 'approval');
  assert.ok(approval, 'the example chain "approval" is loaded');
  const r = await call('admin', 'POST', '/v1/chains/' + approval.id + '/runs', { input: { amount: 10, customer: 'bob' } });
  assert.equal(r.status, 202);
  for (let i = 0; i < 100; i++) {
    if ((await call('admin', 'GET', '/v1/runs/' + r.json.run_id)).json.status === 'paused') return { run: r.json.run_id, chain: approval.id };
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error('the approval run did not pause');
}

test('without a token the pages ask for one', async () => {
  const page = await open(null);
  await page.goto(base + '/');
  assert.match(page.url(), /\/login\?next=/);
  await page.done();
});

test('a viewer reads but sees no Run, Save, New chain, answers or user admin', async () => {
  const { run, chain } = await pausedRun();
  const page = await signIn('viewer');
  assert.equal(await page.textContent('#whoami-name'), 'vic');
  assert.equal(await page.textContent('#whoami-role'), 'viewer');
  assert.equal(await page.isVisible('#new-chain'), false, 'no New chain');
  assert.equal(await page.isVisible('#open-import'), false, 'no Import');
  assert.equal(await page.locator('nav a[href="/users"]').count(), 0, 'no Users link');
  assert.ok(await page.locator('#chains-table a, table a').count() > 0, 'the chains are listed');
  await page.screenshot({ path: join(SHOTS, 'roles-viewer-chains.png') });

  await page.goto(base + '/chains/' + chain);
  await page.waitForSelector('#save-state');
  for (const id of ['#btn-run', '#btn-save-version', '#btn-delete', '#btn-connect']) {
    assert.equal(await page.isVisible(id), false, id + ' hidden from a viewer');
  }
  assert.equal(await page.isVisible('#btn-versions'), true, 'Versions still there');
  assert.match(await page.textContent('#save-state'), /Read only/);
  await page.screenshot({ path: join(SHOTS, 'roles-viewer-editor.png') });

  await page.goto(base + '/runs/' + run);
  await page.waitForSelector('#answer-needs-role');
  assert.equal(await page.isVisible('#approval-form'), false, 'no approval form');
  assert.match(await page.textContent('#answer-needs-role'), /approver or admin role; you are vic \(viewer\)/);
  await page.screenshot({ path: join(SHOTS, 'roles-viewer-paused-run.png') });

  // The server refuses regardless of what the page shows, naming the role.
  const res = await page.evaluate(async () => {
    const r = await fetch('/v1/chains', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"name":"sneaky","nodes":[]}' });
    return { status: r.status, body: await r.json() };
  });
  assert.equal(res.status, 403);
  assert.equal(res.body.error.code, 'role_required');
  assert.match(res.body.error.message, /needs the role editor or publisher or admin; vic is a viewer/);
  // the browser logs the refused fetch above (it was asked for); nothing else
  assert.deepEqual(page.errors.filter((e) => !/status of 403/.test(e)), []);
  page.errors.length = 0;
  await page.done();
});

test('an editor edits and runs, but does not answer pauses or manage users', async () => {
  const { run, chain } = await pausedRun();
  const page = await signIn('editor');
  assert.equal(await page.textContent('#whoami-name'), 'eddie');
  assert.equal(await page.isVisible('#new-chain'), true);
  assert.equal(await page.locator('nav a[href="/users"]').count(), 0, 'no Users link');
  await page.screenshot({ path: join(SHOTS, 'roles-editor-chains.png') });

  await page.goto(base + '/chains/' + chain);
  await page.waitForSelector('#btn-run');
  assert.equal(await page.isVisible('#btn-run'), true);
  assert.equal(await page.isVisible('#btn-save-version'), true);
  assert.match(await page.textContent('#save-state'), /Saved v\d+/);

  await page.goto(base + '/runs/' + run);
  await page.waitForSelector('#answer-needs-role');
  assert.equal(await page.isVisible('#approval-form'), false);
  await page.screenshot({ path: join(SHOTS, 'roles-editor-paused-run.png') });

  const users = await page.goto(base + '/users');
  assert.equal(users.status(), 403);
  assert.match(await page.textContent('body'), /needs the role admin; eddie is an editor/);
  // the browser logs the 403 page load; nothing else
  assert.deepEqual(page.errors.filter((e) => !/status of 403/.test(e)), []);
  page.errors.length = 0;
  await page.done();
});

test('an admin adds a user on the Users page and sees the token once', async () => {
  const page = await signIn('admin', '/users');
  assert.equal(await page.isVisible('nav a[href="/users"]'), true);
  const names = await page.$$eval('#users-table tbody tr', (rows) => rows.map((r) => r.dataset.user));
  assert.deepEqual(names, ['ada', 'eddie', 'vic']);
  await page.fill('#add-user input[name=name]', 'pat');
  await page.selectOption('#add-user select[name=role]', 'approver');
  await page.click('#add-user button[type=submit]');
  await page.waitForSelector('#new-token-value');
  const token = (await page.textContent('#new-token-value')).trim();
  assert.match(token, /^stu_[0-9a-f]{64}$/);
  await page.screenshot({ path: join(SHOTS, 'roles-admin-users.png') });
  const me = await fetch(base + '/v1/me', { headers: { Authorization: 'Bearer ' + token } }).then((r) => r.json());
  assert.equal(me.name, 'pat');
  assert.equal(me.role, 'approver');
  // Reloading the list does not show the token again.
  await page.goto(base + '/users');
  assert.equal(await page.locator('#new-token-value').count(), 0);
  assert.ok(!(await page.content()).includes(token));
  // Sign out ends the session.
  await Promise.all([page.waitForURL(/\/login$/), page.click('#whoami button[type=submit]')]);
  await page.goto(base + '/users');
  assert.match(page.url(), /\/login\?next=/);
  await page.done();
});
