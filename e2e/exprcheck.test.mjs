// Browser test of the check under an expression field: it says what the
// Validation panel says about that field. A bare-word comparison (== high)
// is the validator's bare_word_comparison warning and its fix under the
// field, as the panel opens and as it is typed, in a condition node's case
// row too, instead of a green "✓ JMESPath".
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, close, open, api, waitSaved } from './lib.mjs';

before(async () => { await launch(); });
after(async () => { await close(); });

const uniq = () => Date.now().toString(36) + Math.random().toString(36).slice(2, 6);

test('a bare-word comparison: the field shows the validator\'s warning, not a green check', async () => {
  const ch = await api('POST', '/v1/chains', {
    name: 'exprcheck-' + uniq(),
    nodes: [
      { node_id: 'start', kind: 'tool', name: 'echo', position: { x: 0, y: 0 } },
      { node_id: 'route', kind: 'condition', cases: [{ handle: 'hot', when: 'input.level == high' }, { handle: 'warm', when: "input.level == 'mid'" }], position: { x: 220, y: 0 } },
      { node_id: 'hot', kind: 'tool', name: 'echo', position: { x: 440, y: -80 } },
      { node_id: 'warm', kind: 'tool', name: 'echo', position: { x: 440, y: 0 } },
      { node_id: 'cold', kind: 'tool', name: 'echo', position: { x: 440, y: 80 } },
    ],
    edges: [{ source: 'start', target: 'route' }, { source: 'route', target: 'hot', label: 'hot' },
      { source: 'route', target: 'warm', label: 'warm' }, { source: 'route', target: 'cold', label: 'default' }],
  });
  const panelIssue = ch.issues.find((i) => i.rule === 'bare_word_comparison' && i.field === 'cases[0].when');
  assert.ok(panelIssue, 'the validator warns: ' + JSON.stringify(ch.issues));

  const page = await open('/chains/' + ch.id);
  await page.waitForFunction(() => document.getElementById('editor').dataset.ready === '1');
  await page.focus('#node-table button.select-node[data-node-id="route"]');
  await page.keyboard.press('Enter');
  await page.waitForSelector('.props[data-target="node"][data-id="route"]');
  const rows = '.props fieldset[data-f="cases"] > .kv-rows > .kv-row';
  const msg = (k) => page.$eval(`${rows}:nth-child(${k + 1}) .expr-msg`, (m) => m.textContent.replace(/\s+/g, ' ').trim());

  // as the panel opens: the saved case's warning is under its field
  await page.waitForFunction((sel) => !!document.querySelector(sel + ':nth-child(1) .expr-msg .expr-warn'), rows);
  let first = await msg(0);
  assert.ok(first.includes(panelIssue.message), 'the field says what the panel says: ' + first);
  assert.ok(!first.includes('✓'), first);
  assert.match(first, /to compare with the text, write/);
  assert.match(await msg(1), /✓ JMESPath/, 'the quoted case is fine');

  // as it is typed: the warning follows the text
  const inp = `${rows}:nth-child(2) input.expr`;
  await page.focus(inp);
  await page.keyboard.press('End');
  await page.keyboard.press('Control+A');
  await page.keyboard.type('input.level == mid', { delay: 10 });
  await page.keyboard.press('Escape');
  await page.waitForFunction((sel) => /bare_word_comparison/.test(document.querySelector(sel + ':nth-child(2) .expr-msg').textContent), rows);
  assert.match(await msg(1), /reads mid as a path/);
  await waitSaved(page);
  await page.keyboard.press('Control+A');
  await page.keyboard.type("input.level == 'mid'", { delay: 10 });
  await page.keyboard.press('Escape');
  await page.waitForFunction((sel) => /✓ JMESPath/.test(document.querySelector(sel + ':nth-child(2) .expr-msg').textContent), rows);
  first = await msg(0);
  assert.ok(first.includes('bare_word_comparison'), 'the other case keeps its warning: ' + first);
  await page.done();
});
