// Browser test: "New from template…" on the Chains page, by keyboard: the
// map-with-a-code-step template is picked, named, created and opened in
// the designer with its nodes drawn, and its Run button runs it on its
// sample input to completion. The dialog has no axe violation.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { launch, close, open, api, SHOTS } from './lib.mjs';

before(async () => { await launch(); });
after(async () => { await close(); });

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
async function axeViolations(page) {
  if (!(await page.evaluate(() => !!window.axe))) await page.evaluate(AXE + '\n;void 0');
  return page.evaluate(async () => {
    const r = await window.axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] } });
    return r.violations.map((v) => v.id + ': ' + v.nodes.map((n) => n.target.join(' ')).join(', '));
  });
}

const uniq = () => Date.now().toString(36) + Math.random().toString(36).slice(2, 6);

test('New from template: pick the map with a code step, open it, run it', async () => {
  const { templates } = await api('GET', '/v1/templates');
  const tmpl = templates.find((t) => t.id === 'map-code');
  assert.ok(tmpl, 'the map-code template is listed');
  const page = await open('/');
  await page.focus('#new-from-template');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#new-dialog[open]');
  // the first template has the focus; the arrow keys move through them
  const focused = () => page.evaluate(() => document.activeElement.value);
  const first = await focused();
  assert.ok(first, 'a template has the focus');
  const order = await page.$$eval('#new-dialog input[name="template"]', (els) => els.map((e) => e.value));
  for (let i = order.indexOf(first); order[i] !== 'map-code'; i++) await page.keyboard.press('ArrowDown');
  assert.equal(await focused(), 'map-code');
  assert.ok(await page.isChecked('#new-dialog input[value="map-code"]'));
  assert.deepEqual(await axeViolations(page), [], 'axe with the dialog open');
  await page.screenshot({ path: join(SHOTS, 'templates-dialog.png') });

  const name = 'From template ' + uniq();
  await page.fill('#new-name', name);
  await Promise.all([page.waitForURL(/\/chains\/[^/]+$/), page.keyboard.press('Enter')]);
  await page.waitForSelector('#editor[data-ready="1"]');
  const doc = await page.evaluate(() => window.__editor.doc);
  assert.equal(doc.name, name);
  assert.equal(doc.nodes.length, tmpl.nodes);
  assert.equal(doc.tests.length, tmpl.tests);
  assert.equal(await page.evaluate(() => window.__editor.cy.nodes().not('.eh-handle').length), tmpl.nodes, 'every node is drawn');
  await page.screenshot({ path: join(SHOTS, 'templates-editor.png') });

  await page.click('#btn-run');
  await page.waitForSelector('#run-dialog[open]');
  assert.match(await page.inputValue('#run-input'), /orders/, 'the sample input is offered');
  await Promise.all([page.waitForURL(/\/runs\//), page.click('#run-submit')]);
  await page.waitForFunction(() => ['completed', 'failed'].includes(document.getElementById('runpage').dataset.status), null, { timeout: 30000 });
  const run = await api('GET', '/v1/runs/' + page.url().split('/runs/')[1]);
  assert.equal(run.status, 'completed', JSON.stringify(run.error));
  assert.deepEqual(run.final_output, { orders: 3, total: 497.5, big: ['A-1', 'A-3'] });
  await page.done();
});
