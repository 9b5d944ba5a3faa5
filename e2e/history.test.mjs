// Versions a person can read (bursts of autosaves as one row, named
// versions, the diff old → new), the theme switch, and exports for git.
// Screenshots go to HISTORY_SHOTS or a temporary directory, never into
// docs/screenshots.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BASE, launch, close, open, api, waitSaved } from './lib.mjs';

// Pictures of what these tests look at, for a person to check by eye.
const LOOK = process.env.HISTORY_SHOTS || join(tmpdir(), 'chain-studio-history');
mkdirSync(LOOK, { recursive: true });

before(async () => { await launch(); });
after(async () => { await close(); });

function branchChain(name) {
  return {
    name,
    nodes: [
      { node_id: 'read', kind: 'tool', name: 'echo', input_map: { total: 'input.total' }, position: { x: 0, y: 0 } },
      { node_id: 'check', kind: 'branch', condition: 'read.output.total > `10`', position: { x: 240, y: 0 } },
      { node_id: 'big', kind: 'tool', name: 'echo', position: { x: 480, y: -70 } },
      { node_id: 'small', kind: 'tool', name: 'echo', position: { x: 480, y: 70 } },
    ],
    edges: [{ source: 'read', target: 'check' }, { source: 'check', target: 'big', label: 'true' }, { source: 'check', target: 'small', label: 'false' }],
  };
}

test('versions: autosaves fold into one row, a named version stands out, the diff shows old → new', async () => {
  const ch = await api('POST', '/v1/chains', branchChain('history ' + Date.now()));
  const page = await open('/chains/' + ch.id);
  await page.waitForSelector('#editor[data-ready="1"]');
  await page.click('#node-table button.select-node[data-node-id="check"]');
  await page.waitForSelector('input[data-f="condition"]');
  for (const n of [20, 30, 40]) {
    await page.fill('input[data-f="condition"]', 'read.output.total > `' + n + '` && read.output.total < `1000`');
    await waitSaved(page);
  }
  // Save version… from the toolbar, by keyboard.
  await page.focus('#btn-save-version');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#save-version-dialog[open]');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'save-version-message', 'the name field has the focus');
  await page.keyboard.type('Ready for <review>');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#save-version-dialog', { state: 'hidden' });
  assert.equal(await page.textContent('#save-state'), 'Saved v5, named');
  assert.equal(await page.getAttribute('#save-state', 'title'), 'v5: Ready for <review>');
  // Later edits go on from the named version without a conflict.
  await page.fill('input[data-f="condition"]', 'read.output.total > `50`');
  await waitSaved(page);
  assert.equal(await page.evaluate(() => window.__editor.version), 6);
  await page.done();

  const vs = await api('GET', '/v1/chains/' + ch.id + '/versions');
  assert.deepEqual(vs.versions.map((v) => v.kind), ['autosave', 'named', 'autosave', 'autosave', 'autosave', 'save']);

  const vp = await open('/chains/' + ch.id + '/versions');
  const rows = await vp.$$eval('.version-list > ol > li', (lis) => lis.map((li) => li.className + ': ' + li.textContent.replace(/\s+/g, ' ').trim()));
  assert.equal(rows.length, 4, 'v6 | v5 named | v2–v4 burst | v1: ' + rows.join(' / '));
  assert.match(rows[1], /named.*v5.*named.*Ready for <review>/);
  assert.match(rows[2], /burst.*v2–v4.*3 edits, under a minute/);
  assert.equal(await vp.isVisible('.burst li.version'), false, 'a burst starts folded');
  // Expand it with the keyboard and open one of its versions.
  await vp.focus('.burst summary');
  await vp.keyboard.press('Enter');
  await vp.waitForSelector('.burst li.version', { state: 'visible' });
  assert.equal(await vp.$$eval('.burst li.version', (l) => l.length), 3);
  await vp.click('.burst li.version:nth-child(3) a'); // v2
  await vp.waitForSelector('#versions[data-ready="1"]');
  assert.equal(await vp.getAttribute('.burst details', 'open'), '', 'the burst holding the selected version is open');
  const cells = await vp.$$eval('.diff-table tbody tr', (trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent.trim())));
  assert.deepEqual(cells, [['condition', 'read.output.total > `20` && read.output.total < `1000`', 'read.output.total > `50`']]);
  assert.deepEqual(await vp.$$eval('.diff-table thead th', (ths) => ths.map((t) => t.textContent)), ['Field', 'v2', 'current v6']);
  const size = await vp.$eval('.diff-table pre', (p) => parseFloat(getComputedStyle(p).fontSize));
  assert.ok(size >= 13, 'the values are in readable type: ' + size + 'px');
  await vp.screenshot({ path: join(LOOK, 'versions-burst-diff.png'), fullPage: true });
  // The named version is its own row, and its name is shown as written.
  await vp.click('.version.named a');
  await vp.waitForSelector('#versions[data-ready="1"]');
  await vp.screenshot({ path: join(LOOK, 'versions-named.png') });
  await vp.done();
});

test('theme: light / dark / system, remembered, applied before the first paint, canvas follows live', async () => {
  const ch = await api('POST', '/v1/chains', branchChain('theme ' + Date.now()));
  const page = await open(null, { colorScheme: 'light' });
  // When <body> first exists (nothing can be painted before), record the theme.
  await page.addInitScript(() => {
    new MutationObserver((_, obs) => {
      if (document.body) { window.__themeAtBody = document.documentElement.dataset.theme || 'system'; obs.disconnect(); }
    }).observe(document, { childList: true, subtree: true });
  });
  await page.goto(BASE + '/chains/' + ch.id);
  await page.waitForSelector('#editor[data-ready="1"]');
  const nodeBg = () => page.evaluate(() => window.__editor.cy.getElementById('read').style('background-color'));
  const lightNode = await nodeBg();
  assert.equal(await page.inputValue('#theme-select'), 'system');
  assert.equal(await page.evaluate(() => document.querySelector('#theme-select').labels[0].firstElementChild.textContent.trim()), 'Theme', 'labelled');

  // Reachable with Tab from the top of the page, switched with the keyboard.
  await page.keyboard.press('Tab');
  let tabs = 1;
  while ((await page.evaluate(() => document.activeElement.id)) !== 'theme-select' && tabs < 20) { await page.keyboard.press('Tab'); tabs++; }
  assert.equal(await page.evaluate(() => document.activeElement.id), 'theme-select', 'the switch is in the tab order');
  await page.selectOption('#theme-select', 'dark');
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'dark');
  assert.equal(await page.evaluate(() => getComputedStyle(document.body).backgroundColor), 'rgb(25, 29, 37)');
  await page.waitForFunction((was) => window.__editor.cy.getElementById('read').style('background-color') !== was, lightNode);
  assert.equal(await nodeBg(), 'rgb(34,40,53)', 'the canvas restyled itself');
  await page.screenshot({ path: join(LOOK, 'editor-dark.png') });

  // Remembered: a reload is dark from the start, with no light frame.
  await page.reload();
  await page.waitForSelector('#editor[data-ready="1"]');
  assert.equal(await page.evaluate(() => window.__themeAtBody), 'dark', 'the theme was set before <body> existed');
  assert.equal(await page.inputValue('#theme-select'), 'dark');
  assert.equal(await nodeBg(), 'rgb(34,40,53)');

  // Light overrides a dark system; system follows it.
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.selectOption('#theme-select', 'light');
  assert.equal(await page.evaluate(() => getComputedStyle(document.body).backgroundColor), 'rgb(245, 247, 250)');
  assert.equal(await nodeBg(), lightNode);
  await page.screenshot({ path: join(LOOK, 'editor-light.png') });
  await page.selectOption('#theme-select', 'system');
  assert.equal(await page.evaluate(() => localStorage.getItem('studio-theme')), null);
  assert.equal(await page.evaluate(() => getComputedStyle(document.body).backgroundColor), 'rgb(25, 29, 37)');
  await page.waitForFunction(() => window.__editor.cy.getElementById('read').style('background-color') === 'rgb(34,40,53)');
  await page.done();
});

test('export from the editor: a file for git (literal < > &, 2-space indent, same bytes twice)', async () => {
  const doc = branchChain('export ' + Date.now());
  doc.description = 'total > 10 && total < 1000';
  const ch = await api('POST', '/v1/chains', doc);
  const page = await open('/chains/' + ch.id);
  await page.waitForSelector('#editor[data-ready="1"]');
  const files = [];
  for (let i = 0; i < 2; i++) {
    const [dl] = await Promise.all([page.waitForEvent('download'), (async () => { await page.click('#export-menu > summary'); await page.click('#btn-export'); })()]);
    files.push(readFileSync(await dl.path(), 'utf8'));
  }
  assert.equal(files[0], files[1], 'two exports are byte-identical');
  assert.ok(files[0].includes('"description": "total > 10 && total < 1000"'), files[0]);
  assert.ok(!/\\u00(3c|3e|26)/.test(files[0]), 'no \\u003e escapes');
  assert.match(files[0], /^\{\n {2}"name": /);
  await page.done();
});
