// Browser tests of credentials: a studio of its own with an admin and an
// editor. The admin adds a credential on Settings → Credentials (its value
// is never shown again); the editor picks it by name in an http node's form.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { launch, close, open, ownStudio, SHOTS } from './lib.mjs';

let studio, base, tokens;
const SECRET = 'ghp_browser-secret-0123456789';

before(async () => {
  await launch();
  studio = await ownStudio('studio-credentials-', [['ada', 'admin'], ['eddie', 'editor']]);
  ({ base, tokens } = studio);
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

async function signIn(role, next) {
  const page = await open(null);
  await page.goto(base + '/login?next=' + encodeURIComponent(next));
  // autofocus is applied at a rendering step that may come after the load
  // event: keys typed before it would miss the field
  await page.waitForFunction(() => document.activeElement && document.activeElement.name === 'token');
  await page.keyboard.type(tokens[role]);
  await Promise.all([page.waitForURL(base + next), page.keyboard.press('Enter')]);
  return page;
}

// tabTo presses Tab until the focused element matches sel (keyboard only).
async function tabTo(page, sel, max = 120) {
  for (let i = 0; i < max; i++) {
    if (await page.evaluate((s) => document.activeElement && document.activeElement.matches(s), sel)) return;
    await page.keyboard.press('Tab');
  }
  throw new Error('Tab never reached ' + sel);
}

test('an admin adds a credential on the page, by keyboard; its value is never shown again', async () => {
  const page = await signIn('admin', '/settings/credentials');
  await page.setViewportSize({ width: 1366, height: 768 });
  assert.match(await page.textContent('#credentials-table'), /No credentials yet/);
  await tabTo(page, '#credential-name');
  await page.keyboard.type('github');
  await page.keyboard.press('Tab'); // the type select: bearer is the first
  assert.equal(await page.$eval('#credential-type', (s) => s.value), 'bearer');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.type), 'password', 'the token field is a password field');
  await page.keyboard.type(SECRET);
  // Where it may be sent: without a host a bearer token goes nowhere.
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'credential-hosts');
  await page.keyboard.type('api.github.com');
  await page.keyboard.press('Shift+Tab');
  await Promise.all([page.waitForURL(/saved=github/), page.keyboard.press('Enter')]);
  const row = page.locator('#credentials-table tr[data-credential="github"]');
  assert.match(await row.textContent(), /Bearer token/);
  assert.match(await row.textContent(), /api\.github\.com/);
  assert.match(await row.textContent(), /token: ••••/);
  assert.match(await row.textContent(), /all chains/);
  assert.equal((await page.content()).includes(SECRET), false, 'the page does not hold the value');
  await page.screenshot({ path: join(SHOTS, 'credentials.png'), fullPage: true });
  // A bad value: a precise message, nothing stored.
  await page.fill('#credential-name', 'bad name');
  await page.$eval('#credential-form', (f) => { f.noValidate = true; });
  await page.fill('fieldset[data-type="bearer"] input[type=password]', 'x');
  await page.click('#credential-save');
  assert.match(await page.textContent('#credential-problem'), /credential name "bad name": use letters, digits/);
  // the refusal is a 422 page, which the browser reports as a failed load
  assert.deepEqual(page.errors.splice(0), ['console error: Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)']);
  await page.done();
  const list = await call('editor', 'GET', '/v1/credentials');
  assert.deepEqual(list.json.credentials.map((c) => c.name), ['github']);
  assert.equal(JSON.stringify(list.json).includes(SECRET), false);
});

test('an editor picks the credential in an http node, and the document names it', async () => {
  const r = await call('editor', 'POST', '/v1/chains', { name: 'calls-github', nodes: [{ node_id: 'get', kind: 'tool', name: 'http', input: { url: 'http://127.0.0.1:9/user' } }] });
  assert.equal(r.status, 201);
  const id = r.json.id;
  const page = await signIn('editor', '/chains/' + id);
  await page.focus('#node-table button.select-node[data-node-id="get"]');
  await page.keyboard.press('Enter');
  const sel = '.sf-field[data-path="input.auth.credential"] select';
  await page.waitForSelector(sel);
  await page.waitForFunction((s) => [...document.querySelector(s).options].some((o) => o.value === 'github'), sel);
  await tabTo(page, sel);
  await page.keyboard.press('ArrowDown');
  assert.equal(await page.$eval(sel, (s) => s.value), 'github');
  await page.waitForFunction(async (id) => {
    const res = await fetch('/v1/chains/' + id, { headers: { Accept: 'application/json' } });
    const c = await res.json();
    return c.doc.nodes[0].input.auth && c.doc.nodes[0].input.auth.credential === 'github';
  }, id, { timeout: 10000 });
  await page.screenshot({ path: join(SHOTS, 'credential-select.png') });
  await page.done();
  const ch = await call('editor', 'GET', '/v1/chains/' + id);
  assert.deepEqual(ch.json.issues.filter((i) => /credential/.test(i.rule)), [], 'the reference is valid');
});
