// Browser test of the designer's side panel as tabs (Properties, Validation,
// Tests, Triggers, MCP) and of its keyboard: the tabs by mouse and by the
// arrow keys (one tab stop), each panel the column's whole height, the
// counts on the tabs as the editor revalidates and the tests run, a failing
// test on Publish…, Ctrl+Enter runs from a field, Alt+T and the skip link
// reach the toolbar, removing a row keeps the focus in its table, the node
// list before the side panel in the tab order, and axe in both themes.
// At 1400×900 and 1024×768; screenshots go to SHOTS/sidetabs-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { BASE, launch, close, open, api, SHOTS, waitSaved } from './lib.mjs';

before(async () => { await launch(); });
after(async () => { await close(); });

const SIZES = [{ width: 1400, height: 900 }, { width: 1024, height: 768 }];
const TABS = ['props', 'issues', 'tests', 'triggers', 'mcp'];
const uniq = (p) => p + ' ' + Date.now().toString(36) + Math.random().toString(36).slice(2, 6);
const shot = (page, name) => page.screenshot({ path: join(SHOTS, 'sidetabs-' + name + '.png') });

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
async function axeViolations(page) {
  if (!(await page.evaluate(() => !!window.axe))) await page.evaluate(AXE + '\n;void 0');
  return page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] }, rules: { 'label-content-name-mismatch': { enabled: true } }, resultTypes: ['violations'] });
    return r.violations.map((v) => v.id + ': ' + v.nodes.map((n) => n.target.join(' ')).join(', '));
  });
}

// A chain of two echo nodes; `a` maps three keys. tests: the chain's tests.
function twoNodes(tests) {
  return {
    name: uniq('sidetabs'),
    nodes: [
      { node_id: 'a', kind: 'tool', name: 'echo', label: 'First', input_map: { x: 'input.x', y: 'input.y', z: 'input.z' }, position: { x: 0, y: 0 } },
      { node_id: 'b', kind: 'tool', name: 'echo', label: 'Second', position: { x: 240, y: 0 } },
    ],
    edges: [{ source: 'a', target: 'b' }],
    ...(tests ? { tests } : {}),
  };
}
const PASSES = { name: 'runs', input: { x: 1 }, assert: { status: 'completed' } };
const FAILS = { name: 'wants a failure', input: { x: 1 }, assert: { status: 'failed' } };

async function openEditor(doc, size = SIZES[0], opts = {}) {
  const ch = await api('POST', '/v1/chains', doc);
  const page = await open(null, opts);
  if (opts.colorScheme) await page.addInitScript((t) => localStorage.setItem('studio-theme', t), opts.colorScheme);
  await page.setViewportSize(size);
  await page.goto(BASE + '/chains/' + ch.id);
  await page.waitForSelector('#editor[data-ready="1"][data-navigate="1"]');
  return { page, id: ch.id };
}

const focused = (page) => page.evaluate(() => {
  const a = document.activeElement;
  return a ? (a.id || a.getAttribute('aria-label') || a.tagName) : '';
});
const selectedTab = (page) => page.evaluate(() => {
  const on = [...document.querySelectorAll('.side-tabs [role="tab"]')].filter((t) => t.getAttribute('aria-selected') === 'true');
  return on.map((t) => t.dataset.tab).join(',');
});
// the panels shown: exactly the chosen tab's
const shownPanels = (page) => page.evaluate(() => [...document.querySelectorAll('.side > [role="tabpanel"]')].filter((p) => !p.hidden && p.getBoundingClientRect().height > 0).map((p) => p.id));
const PANEL = { props: 'props-tab', issues: 'issues', tests: 'tests-panel', triggers: 'triggers-panel', mcp: 'mcp-panel' };

// testsRun waits until the tests have run and `failed` of them failed (any
// number when failed is null).
async function testsRun(page, failed) {
  await page.waitForFunction((f) => {
    const n = document.getElementById('tab-tests').dataset.failed;
    return n !== undefined && (f === null || n === String(f)) && document.getElementById('tests-panel').dataset.state === 'done';
  }, failed, { timeout: 15000 });
}

for (const size of SIZES) {
  const at = size.width + 'x' + size.height;

  test(`${at}: the side panel is tabs, by mouse and by the arrow keys; each panel takes the column, Properties most of it`, async () => {
    const { page } = await openEditor(twoNodes([PASSES]), size);
    // the widget: a tablist, five tabs, one tab stop, each tab controls its panel
    const tabs = await page.$$eval('.side-tabs[role="tablist"] [role="tab"]', (ts) => ts.map((t) => ({ tab: t.dataset.tab, ti: t.tabIndex, sel: t.getAttribute('aria-selected'), controls: t.getAttribute('aria-controls'), labelledBack: document.getElementById(t.getAttribute('aria-controls')).getAttribute('aria-labelledby') === t.id })));
    assert.deepEqual(tabs.map((t) => t.tab), TABS);
    assert.deepEqual(tabs.map((t) => t.ti), [0, -1, -1, -1, -1], 'one tab stop');
    assert.ok(tabs.every((t) => t.labelledBack), 'each panel is labelled by its tab: ' + JSON.stringify(tabs));
    assert.equal(await selectedTab(page), 'props');
    assert.deepEqual(await shownPanels(page), ['props-tab']);

    // Properties takes nearly the whole column
    const m = await page.evaluate(() => {
      const h = (sel) => document.querySelector(sel).getBoundingClientRect().height;
      return { side: h('.side'), props: h('#props'), tabs: h('.side-tabs'), page: document.scrollingElement.scrollHeight, vh: window.innerHeight };
    });
    assert.ok(m.props >= 0.7 * m.side, 'Properties has at least 70% of the column: ' + JSON.stringify(m));
    assert.ok(m.page <= m.vh, 'the page does not scroll: ' + JSON.stringify(m));
    await shot(page, at + '-props');

    // by mouse: each tab shows its panel alone, at the column's height
    for (const t of TABS) {
      await page.click('#tab-' + t);
      assert.equal(await selectedTab(page), t);
      assert.deepEqual(await shownPanels(page), [PANEL[t]]);
      const r = await page.evaluate((id) => {
        const p = document.getElementById(id).getBoundingClientRect();
        const s = document.querySelector('.side').getBoundingClientRect();
        const l = document.querySelector('.side-tabs').getBoundingClientRect();
        return { top: p.top, bottom: p.bottom, listBottom: l.bottom, sideBottom: s.bottom };
      }, PANEL[t]);
      assert.ok(Math.abs(r.top - r.listBottom) < 2 && Math.abs(r.bottom - r.sideBottom) < 2, t + ' fills the column below the tabs: ' + JSON.stringify(r));
      assert.equal(await focused(page), 'tab-' + t, 'the clicked tab has the focus');
    }
    await page.click('#tab-tests');
    await shot(page, at + '-tests');

    // by keyboard: arrows move and show (wrapping), Home and End
    await page.focus('#tab-tests');
    const keys = [['ArrowRight', 'triggers'], ['ArrowRight', 'mcp'], ['ArrowRight', 'props'], ['ArrowLeft', 'mcp'], ['ArrowLeft', 'triggers'], ['Home', 'props'], ['End', 'mcp'], ['ArrowLeft', 'triggers'], ['ArrowLeft', 'tests'], ['ArrowLeft', 'issues']];
    for (const [key, want] of keys) {
      await page.keyboard.press(key);
      assert.equal(await focused(page), 'tab-' + want, key + ' focuses ' + want);
      assert.equal(await selectedTab(page), want, key + ' shows ' + want);
      assert.deepEqual(await shownPanels(page), [PANEL[want]]);
    }
    // the arrow keys did not move the canvas's selection or view
    assert.equal(await page.evaluate(() => window.__editor.cy.$(':selected').length), 0);
    // one tab stop: Tab leaves the tabs for the panel shown
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.getAttribute('role') !== 'tab' && !!document.activeElement.closest('#issues')), true, 'Tab goes into the Validation panel');
    await page.keyboard.press('Shift+Tab');
    assert.equal(await focused(page), 'tab-issues', 'Shift+Tab comes back to the chosen tab');

    // the choice is remembered for this chain in this browser tab
    await page.reload();
    await page.waitForSelector('#editor[data-ready="1"]');
    assert.equal(await selectedTab(page), 'issues');
    assert.deepEqual(await shownPanels(page), ['issues']);

    // selecting a node shows its properties
    await page.click('#node-table .select-node[data-node-id="b"]');
    await page.waitForSelector('.props[data-target="node"][data-id="b"]');
    assert.equal(await selectedTab(page), 'props');
    await page.done();
  });

  test(`${at}: Ctrl+Enter runs the chain from a property field; with errors it says why`, async () => {
    const { page } = await openEditor(twoNodes(), size);
    await page.click('#node-table .select-node[data-node-id="a"]');
    const label = page.locator('.props[data-id="a"] input[data-f="label"]');
    await label.waitFor();
    await label.focus();
    await page.keyboard.press('Control+Enter');
    await page.waitForSelector('#run-dialog[open]');
    assert.equal(await focused(page), 'run-input', 'the dialog opens on the input, as Run… does');
    assert.equal(await label.inputValue(), 'First', 'the key typed nothing in the field');
    await shot(page, at + '-ctrl-enter');
    // Ctrl+Enter again starts the run
    await Promise.all([page.waitForURL(/\/runs\//), page.keyboard.press('Control+Enter')]);
    await page.waitForSelector('#runpage');
    await page.done();

    // Cmd+Enter (a Mac) from the canvas too; a chain with an error says why instead
    const broken = twoNodes();
    broken.nodes.push({ node_id: 'lonely', kind: 'tool', name: 'echo', position: { x: 0, y: 200 } });
    const { page: p2 } = await openEditor(broken, size);
    assert.equal(await p2.isDisabled('#btn-run'), true);
    await p2.click('#node-table .select-node[data-node-id="a"]');
    await p2.locator('.props[data-id="a"] input[data-f="label"]').focus();
    await p2.keyboard.press('Meta+Enter');
    await p2.waitForFunction(() => { const f = document.getElementById('flash'); return f && !f.hidden && /Cannot run: fix 1 error first/.test(f.textContent); });
    assert.equal(await p2.$('#run-dialog[open]'), null, 'no dialog for a chain that cannot run');
    assert.equal(await p2.getAttribute('#flash', 'role'), 'status', 'the reason is read out');
    // fixed (the lonely node deleted), Cmd+Enter opens the dialog
    await p2.click('#node-table .select-node[data-node-id="lonely"]');
    await p2.click('#btn-delete');
    await waitSaved(p2);
    await p2.waitForFunction(() => !document.getElementById('btn-run').disabled);
    await p2.focus('#cy');
    await p2.keyboard.press('Meta+Enter');
    await p2.waitForSelector('#run-dialog[open]');
    await p2.done();
  });

  test(`${at}: Alt+T and the skip link reach the toolbar; the node list comes before the side panel in the tab order`, async () => {
    const { page } = await openEditor(twoNodes(), size);
    await page.click('#node-table .select-node[data-node-id="a"]');
    const label = page.locator('.props[data-id="a"] input[data-f="label"]');
    await label.waitFor();
    await label.focus();
    await page.keyboard.press('Alt+t');
    assert.equal(await focused(page), 'btn-run', 'Alt+T focuses Run…');
    assert.equal(await label.inputValue(), 'First');

    // the skip link: the stop before the tabs, shown while focused
    await page.focus('#tab-props');
    await page.keyboard.press('Shift+Tab');
    assert.equal(await focused(page), 'skip-toolbar');
    const box = await page.locator('#skip-toolbar').boundingBox();
    const side = await page.locator('.side').boundingBox();
    assert.ok(box.width > 40 && box.x >= side.x && box.y >= side.y, 'the skip link shows in the side panel: ' + JSON.stringify({ box, side }));
    await shot(page, at + '-skip-link');
    await page.keyboard.press('Enter');
    assert.equal(await focused(page), 'btn-run', 'the skip link focuses Run…');
    // unfocused, it takes no room
    const hidden = await page.locator('#skip-toolbar').boundingBox();
    assert.ok(hidden.width <= 1 && hidden.height <= 1, 'hidden when not focused: ' + JSON.stringify(hidden));

    // Tab order: from the canvas, the node list's rows come before any
    // stop of the side panel
    await page.focus('#cy');
    const order = [];
    for (let i = 0; i < 60; i++) {
      await page.keyboard.press('Tab');
      const where = await page.evaluate(() => {
        const a = document.activeElement;
        if (a.closest('#node-table')) return 'list';
        if (a.closest('.side')) return 'side';
        return 'other';
      });
      order.push(where);
      if (where === 'side') break;
    }
    assert.ok(order.includes('list') && order.indexOf('list') < order.indexOf('side'), 'the node list before the side panel: ' + order.join(' '));
    // the DOM says the same (no positive tabindex anywhere)
    assert.equal(await page.evaluate(() => !!(document.querySelector('.node-list').compareDocumentPosition(document.querySelector('.side')) & Node.DOCUMENT_POSITION_FOLLOWING)), true);
    assert.equal(await page.evaluate(() => [...document.querySelectorAll('[tabindex]')].filter((e) => e.tabIndex > 0).length), 0);
    // the shortcuts are listed in the ? help
    await page.click('#btn-shortcuts');
    await page.waitForSelector('#shortcuts-dialog[open]');
    const help = await page.textContent('#shortcuts-dialog');
    for (const k of ['Ctrl+Enter', 'Alt+T', 'side tabs']) assert.ok(help.includes(k), 'the help lists ' + k);
    await page.done();
  });
}

test('the counts on the tabs follow the validation and the tests; a failing test shows on Publish', async () => {
  const { page } = await openEditor(twoNodes([PASSES, FAILS]));
  // the tests run after opening: one of two fails
  await testsRun(page, 1);
  const tabName = (id) => page.evaluate((id) => document.getElementById(id).textContent.replace(/\s+/g, ' ').trim(), id);
  assert.match(await page.textContent('#tab-tests-count'), /✗1\/2/);
  assert.match(await tabName('tab-tests'), /Tests.*1 of 2 tests failing/);
  const pub = page.locator('#btn-publish');
  assert.equal(await pub.getAttribute('data-tests-failing'), '1');
  assert.match(await pub.getAttribute('title'), /1 test failing/);
  assert.equal(await pub.getAttribute('aria-description'), '1 test failing');
  assert.equal(await pub.locator('.tests-mark').textContent(), '✗1');
  // no error yet: the Validation tab has no count
  assert.equal((await page.textContent('#tab-issues-count')).trim(), '');
  await shot(page, 'counts-tests');

  // an error made with the palette (an unconnected branch): counted at once
  await page.click('.palette-item[data-kind="branch"]');
  await waitSaved(page);
  await page.waitForFunction(() => Number(document.getElementById('tab-issues').dataset.errors) > 0);
  const errors = Number(await page.getAttribute('#tab-issues', 'data-errors'));
  assert.equal((await page.textContent('#tab-issues .badge.sev-error')).trim(), String(errors));
  assert.match(await tabName('tab-issues'), new RegExp('Validation.*: ' + errors + ' errors?'));
  assert.equal(await page.isDisabled('#btn-run'), true);
  // the new node is selected: Properties stays shown
  assert.equal(await selectedTab(page), 'props');
  await shot(page, 'counts-error');

  // clicking an issue selects its node and shows Properties
  await page.click('#tab-issues');
  await shot(page, 'validation');
  const link = page.locator('#issues .issue-link[data-node-id]').first();
  const node = await link.getAttribute('data-node-id');
  await link.click();
  await page.waitForSelector(`.props[data-target="node"][data-id="${node}"]`);
  assert.equal(await selectedTab(page), 'props');
  assert.deepEqual(await shownPanels(page), ['props-tab']);
  assert.ok(await page.evaluate(() => document.activeElement !== document.body), 'the focus did not fall to the page');

  // undone: the count goes
  await page.click('#btn-undo');
  await waitSaved(page);
  await page.waitForFunction(() => document.getElementById('tab-issues').dataset.errors === '0');
  assert.equal((await page.textContent('#tab-issues-count')).trim(), '');

  // the failing test fixed: the Tests tab says all pass, Publish has no mark
  await page.evaluate(() => window.__editor.edit(() => { window.__editor.doc.tests[1].assert.status = 'completed'; }));
  await waitSaved(page);
  await testsRun(page, 0);
  await page.waitForFunction(() => /2 tests passing/.test(document.getElementById('tab-tests').textContent));
  assert.match(await page.textContent('#tab-tests-count'), /✓2/);
  assert.equal(await pub.locator('.tests-mark').count(), 0);
  assert.equal(await pub.getAttribute('aria-description'), null);
  assert.doesNotMatch(await pub.getAttribute('title'), /failing/);

  // a trigger is counted on its tab
  const id = await page.evaluate(() => document.getElementById('editor').dataset.chainId);
  await api('POST', '/v1/chains/' + id + '/schedules', { cron: '0 9 * * 1-5', enabled: false });
  await page.reload();
  await page.waitForSelector('#editor[data-ready="1"]');
  await page.waitForFunction(() => document.getElementById('tab-triggers').dataset.count === '1');
  assert.match(await tabName('tab-triggers'), /Triggers.*1 trigger/);
  await page.done();
});

test('a long validation message is shown whole, wrapped; an issue about a test shows the Tests tab', async () => {
  const doc = twoNodes([{ name: 'mocks a ghost', mocks: { ghost: { v: 1 } }, assert: { status: 'completed' } }]);
  doc.nodes.push({ node_id: 'an_unconnected_node_with_a_rather_long_identifier_for_wrapping', kind: 'tool', name: 'echo', position: { x: 0, y: 200 } });
  const { page } = await openEditor(doc);
  await page.click('#tab-issues');
  const m = await page.evaluate(() => {
    const b = document.querySelector('#issues .issue-link');
    const msg = b.querySelector('.msg');
    const lh = parseFloat(getComputedStyle(msg).lineHeight) || 18;
    const panel = document.getElementById('issues');
    return { h: msg.getBoundingClientRect().height, lh, sw: panel.scrollWidth, cw: panel.clientWidth, bw: b.scrollWidth, bcw: b.clientWidth };
  });
  assert.ok(m.h > 2 * m.lh, 'the message takes several lines: ' + JSON.stringify(m));
  assert.ok(m.sw <= m.cw + 1 && m.bw <= m.bcw + 1, 'nothing scrolls sideways: ' + JSON.stringify(m));
  await page.locator('#issues .issue-link[data-field^="tests[0]"]').first().click();
  assert.equal(await selectedTab(page), 'tests');
  assert.deepEqual(await shownPanels(page), ['tests-panel']);
  assert.ok(await page.evaluate(() => document.activeElement !== document.body), 'the focus did not fall to the page');
  await page.done();
});

test('removing a row keeps the focus in its table: the next row, else the previous, else Add', async () => {
  const doc = twoNodes();
  doc.nodes.push({ node_id: 'get', kind: 'tool', name: 'http', input: { url: 'http://127.0.0.1:9/x', headers: { A: '1', B: '2' } }, position: { x: 0, y: 200 } });
  doc.edges.push({ source: 'b', target: 'get' });
  const { page } = await openEditor(doc);

  // the input map's rows (key → expression)
  await page.click('#node-table .select-node[data-node-id="a"]');
  const fs = page.locator('.props[data-id="a"] fieldset[data-f="input_map"]');
  await fs.waitFor();
  await fs.locator('.remove-row[aria-label="Remove row y"]').focus();
  await page.keyboard.press('Enter');
  assert.equal(await focused(page), 'Remove row z', 'the next row\'s remove button');
  await page.keyboard.press('Enter');
  assert.equal(await focused(page), 'Remove row x', 'the last row gone: the previous row\'s');
  await page.keyboard.press('Enter');
  assert.match(await focused(page), /^Add a row to /, 'no row left: the add button');
  await waitSaved(page);
  assert.equal(await page.evaluate(() => window.__editor.doc.nodes[0].input_map), undefined);

  // a schema form's map rows (http headers)
  await page.click('#node-table .select-node[data-node-id="get"]');
  const headers = page.locator('.props[data-id="get"] .sf-field[data-path="input.headers"]');
  await headers.waitFor();
  await headers.locator('.sf-remove').first().focus();
  await page.keyboard.press('Enter');
  assert.match(await focused(page), /^Remove headers B$/, 'the next row\'s remove button');
  await page.keyboard.press('Enter');
  assert.match(await focused(page), /^Add entry to headers$/, 'no row left: the add button');
  await waitSaved(page);
  assert.equal(await page.evaluate(() => window.__editor.doc.nodes.find((n) => n.node_id === 'get').input.headers), undefined);
  await page.done();
});

for (const theme of ['light', 'dark']) {
  test(`axe finds no violation on the editor with each tab shown, counts on them, ${theme} theme`, async () => {
    const doc = twoNodes([PASSES, FAILS]);
    doc.nodes.push({ node_id: 'lonely', kind: 'tool', name: 'echo', position: { x: 0, y: 200 } });
    const { page } = await openEditor(doc, SIZES[0], { colorScheme: theme });
    await testsRun(page, null); // (the error fails both)
    assert.ok(Number(await page.getAttribute('#tab-tests', 'data-failed')) > 0);
    assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), theme, 'the theme is applied');
    const found = [];
    for (const t of TABS) {
      await page.click('#tab-' + t);
      for (const v of await axeViolations(page)) found.push(t + ': ' + v);
    }
    // the skip link while it shows
    await page.focus('#skip-toolbar');
    for (const v of await axeViolations(page)) found.push('skip link: ' + v);
    await page.click('#tab-issues');
    await shot(page, 'axe-' + theme);
    assert.deepEqual(found, []);
    await page.done();
  });
}
