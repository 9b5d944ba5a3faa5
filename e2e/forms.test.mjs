// Forms from schemas, driven like a person would: pick `delay`, the form
// shows `ms` with its description; typing "fast" gives a validation issue
// with the field path; switching to `http` changes the description and the
// fields at once; the raw-JSON view round-trips; all by keyboard. Screenshots
// go to /tmp/forms (FORMS_SHOTS).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { launch, close, open, api, waitSaved } from './lib.mjs';

const SHOTS = process.env.FORMS_SHOTS || '/tmp/forms/shots';
mkdirSync(SHOTS, { recursive: true });

before(async () => { await launch(); });
after(async () => { await close(); });

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
// axeProps runs axe-core (WCAG A/AA) on the properties panel as it is.
async function axeProps(page) {
  if (!(await page.evaluate(() => !!window.axe))) await page.evaluate(AXE + '\n;void 0');
  return page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await axe.run('#props', { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] }, resultTypes: ['violations'] });
    return r.violations.flatMap((v) => v.nodes.map((n) => v.id + ' at ' + n.target.join(' ')));
  });
}

const uniq = (p) => p + '-' + Date.now() + '-' + Math.floor(Math.random() * 1000);
const nodeOf = (page, id) => page.evaluate((id) => JSON.parse(JSON.stringify(window.__editor.doc.nodes.find((n) => n.node_id === id))), id);

async function openEditor(doc) {
  const ch = await api('POST', '/v1/chains', doc);
  const page = await open('/chains/' + ch.id);
  await page.waitForSelector('#editor[data-ready="1"]');
  return { page, id: ch.id };
}

// tabTo presses Tab until the focused element matches sel (keyboard only).
async function tabTo(page, sel, max = 80) {
  for (let i = 0; i < max; i++) {
    if (await page.evaluate((s) => document.activeElement && document.activeElement.matches(s), sel)) return;
    await page.keyboard.press('Tab');
  }
  throw new Error('Tab never reached ' + sel);
}

// pick moves a focused select to value with the arrow keys, as a person would.
async function pick(page, sel, value) {
  await page.keyboard.press('Home');
  for (let i = 0; i < 30 && (await page.$eval(sel, (s) => s.value)) !== value; i++) await page.keyboard.press('ArrowDown');
  assert.equal(await page.$eval(sel, (s) => s.value), value);
}

const focusedLabel = (page) => page.evaluate(() => {
  const a = document.activeElement;
  const l = a.id && document.querySelector('label[for="' + a.id + '"]');
  return l ? l.textContent : a.getAttribute('aria-label') || a.textContent;
});

test('a tool node gets a form from its schema, by keyboard: delay, a bad value, http, raw JSON', async () => {
  const { page, id } = await openEditor({ name: uniq('forms'), nodes: [{ node_id: 'wait', kind: 'tool', name: 'echo', input: { note: 'kept' } }], edges: [] });

  // select the node from the node list with the keyboard
  await page.focus('#node-table button.select-node[data-node-id="wait"]');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#props .props[data-id="wait"] #tool-select');
  assert.match(await page.textContent('#tool-select-help'), /Returns its input unchanged/);

  // pick delay: description and the ms field appear at once
  await tabTo(page, '#tool-select');
  await pick(page, '#tool-select', 'delay');
  await page.waitForFunction(() => /milliseconds/.test(document.getElementById('tool-select-help').textContent));
  const ms = page.locator('.schema-form[data-f="input"] .sf-field[data-path="input.ms"]');
  await ms.waitFor();
  assert.match(await ms.textContent(), /ms \*/, 'ms is marked required');
  assert.match(await ms.locator('.sf-help').textContent(), /milliseconds to wait/);
  assert.equal(await page.inputValue('.sf-others .sf-key'), 'note', 'a key the tool does not declare is kept, under other values');

  // keyboard: Tab into ms and type a word
  await tabTo(page, '.sf-field[data-path="input.ms"] input');
  assert.equal((await focusedLabel(page)).trim(), 'ms * number');
  await page.keyboard.type('fast');
  assert.match(await ms.locator('.sf-err').textContent(), /want a number, got "fast"/);
  await waitSaved(page);
  await page.waitForFunction(() => [...document.querySelectorAll('#issues .issue-link')].some((b) => /input\.ms: want a number, got "fast"/.test(b.textContent)));
  assert.deepEqual((await nodeOf(page, 'wait')).input, { note: 'kept', ms: 'fast' });
  await page.screenshot({ path: join(SHOTS, 'delay-bad-value.png') });
  // the issue leads to its field: Enter on it focuses ms (and shows the
  // Properties tab again)
  await page.click('#tab-issues');
  await page.focus('#issues .issue-link[data-field="input.ms"]');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.activeElement.closest('.sf-field[data-path="input.ms"]'), null, { timeout: 5000 });

  // a number clears the issue; the saved input is a number
  await page.keyboard.press('Control+A');
  await page.keyboard.type('250');
  await waitSaved(page);
  await page.waitForFunction(() => ![...document.querySelectorAll('#issues .issue-link')].some((b) => /input\.ms/.test(b.textContent)));
  assert.deepEqual((await nodeOf(page, 'wait')).input, { note: 'kept', ms: 250 });
  const saved = await api('GET', '/v1/chains/' + id);
  assert.equal(saved.doc.nodes[0].input.ms, 250, 'the server stored the number');

  // switch to http with the keyboard: description and fields change at once
  await tabTo(page, '#tool-select');
  await pick(page, '#tool-select', 'http');
  await page.waitForFunction(() => /HTTP request/.test(document.getElementById('tool-select-help').textContent));
  assert.equal(await page.locator('.sf-field[data-path="input.ms"]').count(), 0, 'delay fields are gone');
  for (const f of ['method', 'url', 'headers', 'body', 'timeout']) await page.locator(`.sf-field[data-path="input.${f}"]`).waitFor();
  assert.deepEqual(await page.$$eval('.sf-others .sf-key', (ks) => ks.map((k) => k.value).sort()), ['ms', 'note'], 'delay\'s ms is kept as another value, removable');
  // enum as a select, default as its empty choice
  const method = page.locator('.sf-field[data-path="input.method"] select');
  assert.match(await method.locator('option').first().textContent(), /default: GET/);
  await page.screenshot({ path: join(SHOTS, 'http-form.png') });
  assert.deepEqual(await axeProps(page), [], 'the form passes axe');

  // fill url, choose POST, add a header: all keyboard
  await tabTo(page, '.sf-field[data-path="input.method"] select');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowDown'); // POST
  await tabTo(page, '.sf-field[data-path="input.url"] input');
  await page.keyboard.type('http://127.0.0.1:9/hook');
  await tabTo(page, '.sf-field[data-path="input.headers"] .sf-add');
  await page.keyboard.press('Enter');
  await page.keyboard.press('Control+A');
  await page.keyboard.type('Accept');
  await page.keyboard.press('Tab');
  await page.keyboard.type('application/json');
  await waitSaved(page);
  let n = await nodeOf(page, 'wait');
  assert.equal(n.name, 'http');
  assert.deepEqual(n.input, { note: 'kept', ms: 250, method: 'POST', url: 'http://127.0.0.1:9/hook', headers: { Accept: 'application/json' } });

  // raw JSON: the same object; an edit there shows in the fields
  await tabTo(page, '.schema-form .sf-raw-toggle');
  await page.keyboard.press('Enter');
  assert.equal(await page.evaluate(() => document.activeElement.classList.contains('sf-raw-text')), true, 'focus moves to the JSON');
  assert.deepEqual(JSON.parse(await page.inputValue('.sf-raw-text')), n.input);
  await page.keyboard.press('Control+A');
  await page.keyboard.type('{"url": "http://127.0.0.1:9/other", "method": "PUT", "timeout": 5');
  assert.match(await page.textContent('.sf-raw-err'), /Not JSON/, 'half-typed JSON is named, not saved');
  await page.keyboard.type('}');
  assert.equal(await page.textContent('.sf-raw-err'), '');
  await waitSaved(page);
  await page.screenshot({ path: join(SHOTS, 'raw-json.png') });
  n = await nodeOf(page, 'wait');
  assert.deepEqual(n.input, { url: 'http://127.0.0.1:9/other', method: 'PUT', timeout: 5 });
  // back to the form: the fields show the JSON's values
  await tabTo(page, '.schema-form .sf-raw-toggle');
  await page.keyboard.press('Enter');
  assert.equal(await page.inputValue('.sf-field[data-path="input.url"] input'), 'http://127.0.0.1:9/other');
  assert.equal(await page.$eval('.sf-field[data-path="input.method"] select', (s) => s.selectedOptions[0].textContent), 'PUT');
  assert.equal(await page.inputValue('.sf-field[data-path="input.timeout"] input'), '5');
  // and a form edit shows in the JSON again
  await tabTo(page, '.sf-field[data-path="input.timeout"] input');
  await page.keyboard.press('Control+A');
  await page.keyboard.type('7');
  await page.click('.schema-form .sf-raw-toggle');
  assert.equal(JSON.parse(await page.inputValue('.sf-raw-text')).timeout, 7);
  await waitSaved(page);
  await page.done();
});

test('a field can take an expression instead: it moves to the input map, which wins', async () => {
  const { page } = await openEditor({ name: uniq('forms-expr'), nodes: [{ node_id: 'pause', kind: 'tool', name: 'delay', input: { ms: 10 } }], edges: [] });
  await page.focus('#node-table button.select-node[data-node-id="pause"]');
  await page.keyboard.press('Enter');
  await page.waitForSelector('.sf-field[data-path="input.ms"] input');
  assert.equal(await page.inputValue('.sf-field[data-path="input.ms"] input'), '10');
  await tabTo(page, '.sf-field[data-path="input.ms"] .sf-fx');
  await page.keyboard.press('Enter');
  // focus is in the new input_map row's expression, keyed ms
  await page.keyboard.type('input.wait_ms');
  await waitSaved(page);
  const n = await nodeOf(page, 'pause');
  assert.deepEqual(n.input_map, { ms: 'input.wait_ms' });
  assert.equal(n.input, undefined, 'the static value is gone');
  await page.waitForFunction(() => /Set by an expression/.test(document.querySelector('.sf-field[data-path="input.ms"]').textContent));
  assert.equal(await page.inputValue('.sf-field[data-path="input.ms"] input'), 'input.wait_ms');
  await page.screenshot({ path: join(SHOTS, 'expression-field.png') });
  await page.done();
});

test('an agent node: the agent picker, its description and input form, settings as a form', async () => {
  const { page } = await openEditor({ name: uniq('forms-agent'), nodes: [{ node_id: 'ask', kind: 'agent' }], edges: [] });
  await page.focus('#node-table button.select-node[data-node-id="ask"]');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#agent-select');
  await tabTo(page, '#agent-select');
  await pick(page, '#agent-select', 'sales-qualifier');
  await page.waitForFunction(() => /Scores an inbound lead/.test(document.getElementById('agent-select-help').textContent));
  await page.locator('.schema-form[data-f="input"] .sf-field[data-path="input.query"]').waitFor();
  await page.locator('.schema-form[data-f="config"] .sf-field[data-path="config.agent"]').waitFor();
  await tabTo(page, '.sf-field[data-path="input.query"] input');
  await page.keyboard.type('ACME, 60k budget'); // text that is not JSON stays text
  await waitSaved(page);
  assert.deepEqual((await nodeOf(page, 'ask')).input, { query: 'ACME, 60k budget' });
  await page.screenshot({ path: join(SHOTS, 'agent-form.png') });
  assert.deepEqual(await axeProps(page), [], 'the agent form passes axe');
  await page.done();
});

test('each form field is its own undo step, and undo shows the old value in the form', async () => {
  const { page } = await openEditor({ name: uniq('forms-undo'), nodes: [{ node_id: 'get', kind: 'tool', name: 'http', input: { url: 'http://127.0.0.1:9/a' } }], edges: [] });
  await page.focus('#node-table button.select-node[data-node-id="get"]');
  await page.keyboard.press('Enter');
  await page.waitForSelector('.sf-field[data-path="input.url"] input');
  await tabTo(page, '.sf-field[data-path="input.url"] input');
  await page.keyboard.press('End');
  await page.keyboard.type('bc');
  await tabTo(page, '.sf-field[data-path="input.timeout"] input');
  await page.keyboard.type('3');
  await waitSaved(page);
  assert.deepEqual((await nodeOf(page, 'get')).input, { url: 'http://127.0.0.1:9/abc', timeout: 3 });
  await page.focus('#btn-undo');
  await page.keyboard.press('Enter');
  await waitSaved(page);
  assert.deepEqual((await nodeOf(page, 'get')).input, { url: 'http://127.0.0.1:9/abc' }, 'one step undoes the timeout only');
  await page.waitForFunction(() => { const i = document.querySelector('.sf-field[data-path="input.timeout"] input'); return i && i.value === ''; });
  assert.equal(await page.inputValue('.sf-field[data-path="input.url"] input'), 'http://127.0.0.1:9/abc');
  await page.done();
});

test('a proc node: its program settings are a form; argv is a list with add and remove', async () => {
  const { page } = await openEditor({ name: uniq('forms-proc'), nodes: [{ node_id: 'count', kind: 'proc' }], edges: [] });
  await page.focus('#node-table button.select-node[data-node-id="count"]');
  await page.keyboard.press('Enter');
  await page.waitForSelector('.schema-form[data-f="config"] .sf-field[data-path="config.argv"]');
  await page.waitForFunction(() => [...document.querySelectorAll('#issues .issue-link')].some((b) => /config\.argv/.test(b.textContent)));
  await tabTo(page, '.sf-field[data-path="config.argv"] .sf-add');
  await page.keyboard.press('Enter');
  await page.keyboard.type('wc');
  await tabTo(page, '.sf-field[data-path="config.argv"] .sf-add');
  await page.keyboard.press('Enter');
  await page.keyboard.type('-l');
  await tabTo(page, '.sf-field[data-path="config.timeout"] input');
  await page.keyboard.type('soon');
  await waitSaved(page);
  assert.deepEqual((await nodeOf(page, 'count')).config, { argv: ['wc', '-l'], timeout: 'soon' });
  await page.waitForFunction(() => [...document.querySelectorAll('#issues .issue-link')].some((b) => /config\.timeout: want a number, got "soon"/.test(b.textContent)));
  assert.ok(!(await page.textContent('#issues')).includes('config.argv'), 'argv is set now');
  await page.screenshot({ path: join(SHOTS, 'proc-form.png') });
  // remove the first item by keyboard
  await tabTo(page, '.sf-field[data-path="config.argv"] button[aria-label="Remove argv item 1"]');
  await page.keyboard.press('Enter');
  await waitSaved(page);
  assert.deepEqual((await nodeOf(page, 'count')).config.argv, ['-l']);
  await page.done();
});
