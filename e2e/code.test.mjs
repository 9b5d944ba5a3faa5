// Browser test of the code node: a script written in the property panel's
// CodeMirror editor, its syntax error shown in the editor with line and
// column from the engine, "Run this node" running it on a previous run's
// data, and its output read back. Screenshots go to CODE_SHOTS (default:
// the OS temp dir).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, close, open, api } from './lib.mjs';

const SHOTS = process.env.CODE_SHOTS || process.env.STUDIO_SHOTS || join(tmpdir(), 'code-shots');
mkdirSync(SHOTS, { recursive: true });

before(async () => { await launch(); });
after(async () => { await close(); });

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
async function violations(page) {
  if (!(await page.evaluate(() => !!window.axe))) await page.evaluate(AXE + '\n;void 0');
  return page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] }, resultTypes: ['violations'] });
    return r.violations.flatMap((v) => v.nodes.map((n) => v.id + ' at ' + n.target.join(' ')));
  });
}

async function waitRun(id) {
  for (let i = 0; i < 400; i++) {
    const m = await api('GET', '/v1/runs/' + id);
    if (m.status !== 'running' && m.status !== 'queued' && !m.active) return m;
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error('run ' + id + ' did not stop');
}

async function saved(page) {
  await page.waitForFunction(() => document.getElementById('save-state').dataset.state === 'saved');
}

test('code node: write a script in the editor, see its syntax error, run the node on a previous run\'s data', async () => {
  const name = 'code-' + Date.now().toString(36);
  const ch = await api('POST', '/v1/chains', {
    name,
    nodes: [
      { node_id: 'a', kind: 'tool', name: 'echo', label: 'Fetch', input_map: { x: 'input.x' }, position: { x: 0, y: 0 } },
      { node_id: 'js', kind: 'tool', name: 'code', label: 'Script', input: { code: 'return 1' }, position: { x: 240, y: 0 } },
    ],
    edges: [{ source: 'a', target: 'js' }],
  });
  const first = await api('POST', '/v1/chains/' + ch.id + '/runs', { input: { x: 41 } });
  assert.equal((await waitRun(first.run_id)).status, 'completed');

  const page = await open('/chains/' + ch.id);
  await page.waitForFunction(() => document.getElementById('editor').dataset.ready === '1');
  await page.evaluate(() => { window.__csp = []; document.addEventListener('securitypolicyviolation', (e) => window.__csp.push([e.violatedDirective, e.sample, e.sourceFile, e.lineNumber, e.columnNumber, e.target && e.target.className].join(' | '))); });
  await page.focus('#node-table button.select-node[data-node-id="js"]');
  await page.keyboard.press('Enter');
  await page.waitForSelector('.props[data-id="js"] .sf-code .cm-editor .cm-content');
  assert.ok(await page.$('.props[data-id="js"] .cm-lineNumbers'), 'line numbers');

  // A syntax error: the engine's line and column, in the editor and under it.
  await page.click('.props[data-id="js"] .cm-content');
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Backspace'); // CodeMirror deletes; a native replace of lines would leave a styled span (CSP refuses it)
  await page.keyboard.type('const d = output.x * 2\nreturn {double: d +}');
  await page.waitForFunction(() => { const e = document.querySelector('.props[data-id="js"] .sf-err'); return e && /line 2, column 20/.test(e.textContent); });
  await page.waitForSelector('.props[data-id="js"] .cm-lintRange-error');
  await saved(page);

  // Completion offers the names the script reads.
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Backspace'); // CodeMirror deletes; a native replace of lines would leave a styled span (CSP refuses it)
  await page.keyboard.type('const d = out');
  await page.keyboard.press('Control+Space');
  await page.waitForSelector('.cm-tooltip-autocomplete li');
  const offered = await page.$$eval('.cm-tooltip-autocomplete li', (lis) => lis.map((li) => li.textContent));
  assert.ok(offered.some((t) => t.startsWith('output')), 'output offered: ' + offered.join(', '));
  await page.keyboard.press('Escape');

  // The fixed script, logged and run alone on the first run's data.
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Backspace'); // CodeMirror deletes; a native replace of lines would leave a styled span (CSP refuses it)
  await page.keyboard.type("const d = output.x * 2\nconsole.log('doubling', output.x)\nreturn {double: d, at: nodes.a.x}");
  await page.waitForFunction(() => { const e = document.querySelector('.props[data-id="js"] .sf-err'); return e && e.textContent === ''; });
  await saved(page);
  const doc = await api('GET', '/v1/chains/' + ch.id);
  assert.match(doc.doc.nodes.find((n) => n.node_id === 'js').input.code, /console\.log\('doubling'/);
  await page.screenshot({ path: join(SHOTS, 'code-editor.png') });
  assert.deepEqual(await violations(page), [], 'the editor with the code panel passes axe');

  // Keyboard: Escape, then Tab, leaves the editor.
  await page.click('.props[data-id="js"] .cm-content');
  await page.keyboard.press('Escape');
  await page.keyboard.press('Tab');
  assert.ok(!(await page.evaluate(() => document.activeElement.classList.contains('sf-code-host'))), 'focus left the editor');

  await page.click('#btn-run-node');
  await page.waitForSelector('#runnode-dialog[open] #runnode-form');
  await page.click('#runnode-submit');
  await page.waitForSelector('#runnode-output', { timeout: 15000 });
  assert.deepEqual(JSON.parse(await page.textContent('#runnode-output')), { double: 82, at: 41 });
  assert.match(await page.textContent('#runnode-status'), /completed/);
  await page.screenshot({ path: join(SHOTS, 'code-run.png') });
  assert.deepEqual(await page.evaluate(() => window.__csp), [], 'nothing the Content-Security-Policy refuses (the editor\'s styles are constructed sheets in its shadow root)');
  await page.done();
});
