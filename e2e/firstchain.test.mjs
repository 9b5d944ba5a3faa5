// A new user's first chain in the browser: renaming a node and typing its
// label with the keyboard only, the single-key shortcuts (only on the
// canvas, and a setting to turn them off), the editor at 1366×768 (no page
// scroll), durations under a millisecond, and the run comparison's inputs.
// Screenshots (1366×768) go to SHOTS/firstchain-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { BASE, launch, close, open, api, waitSaved, SHOTS, loadModule } from './lib.mjs';

before(async () => { await launch(); });
after(async () => { await close(); });

const uniq = (p) => p + '-' + Date.now() + '-' + Math.floor(Math.random() * 1000);
const shot = (page, name) => page.screenshot({ path: join(SHOTS, 'firstchain-' + name + '.png') });

async function openEditor(doc, size = { width: 1366, height: 768 }) {
  const ch = await api('POST', '/v1/chains', doc);
  const page = await open(null);
  await page.setViewportSize(size);
  await page.goto(new URL('/chains/' + ch.id, BASE).href);
  await page.waitForSelector('#editor[data-ready="1"]');
  return { page, id: ch.id };
}

// tabTo presses Tab (Shift+Tab when back) until the element matching sel
// has the focus: how a keyboard user gets there.
async function tabTo(page, sel, back = false) {
  for (let i = 0; i < 400; i++) {
    if (await page.evaluate((s) => { const a = document.activeElement; return !!a && a.matches(s); }, sel)) return;
    await page.keyboard.press(back ? 'Shift+Tab' : 'Tab');
  }
  assert.fail('Tab never reached ' + sel);
}

const twoNodes = (name) => ({
  name,
  nodes: [
    { node_id: 'step', kind: 'tool', name: 'echo', position: { x: 0, y: 0 } },
    { node_id: 'other', kind: 'tool', name: 'echo', position: { x: 260, y: 0 } },
  ],
  edges: [{ source: 'step', target: 'other' }],
});

test('keyboard only: rename a node, Tab, type its label at human speed: the focus stays in the panel and nothing reaches the canvas (3 of 3)', async () => {
  const { page, id } = await openEditor(twoNodes(uniq('rename')));
  await tabTo(page, '#node-table .select-node[data-node-id="step"]');
  await page.keyboard.press('Enter');
  await page.waitForSelector('.props[data-target="node"][data-id="step"]');
  let cur = 'step';
  // labels with the letters of shortcuts (n: note, e: extract, f: fit), and
  // a Backspace (delete the selection) typed last
  const labels = ['Fetch the page', 'Send notes', 'Extract fees'];
  for (let i = 0; i < labels.length; i++) {
    const next = 'renamed_' + i;
    // the first time forward from the node list (the side panel comes after
    // it), then back from Label
    await tabTo(page, `.props[data-id="${cur}"] input[data-f="node_id"]`, i > 0);
    // mark the panel: its redraw after the rename replaces it
    await page.evaluate(() => { document.querySelector('#props .props').dataset.probeOld = '1'; });
    await page.keyboard.press('Control+a');
    await page.keyboard.type(next, { delay: 40 });
    await page.keyboard.press('Tab');
    await page.keyboard.type(labels[i] + 'x', { delay: 90 });
    await page.keyboard.press('Backspace');
    await page.waitForSelector(`.props[data-id="${next}"]:not([data-probe-old])`);
    await waitSaved(page);
    const st = await page.evaluate(() => {
      const a = document.activeElement;
      return {
        nodes: window.__editor.doc.nodes.map((n) => [n.node_id, n.label || '']),
        edges: window.__editor.doc.edges.map((e) => e.source + '>' + e.target),
        notes: (window.__editor.doc.notes || []).length + document.querySelectorAll('.note').length,
        dialogs: [...document.querySelectorAll('dialog[open]')].map((d) => d.id),
        focus: a ? (a.dataset.f || a.id || a.tagName) : '',
        inPanel: !!a && document.getElementById('props').contains(a),
        field: a && a.dataset.f === 'label' ? a.value : null,
      };
    });
    assert.deepEqual(st.nodes, [[next, labels[i]], ['other', '']], `try ${i + 1}: the node has its new id and label`);
    assert.deepEqual(st.edges, [next + '>other'], `try ${i + 1}: its edge follows the rename`);
    assert.equal(st.notes, 0, `try ${i + 1}: no sticky note was added`);
    assert.deepEqual(st.dialogs, [], `try ${i + 1}: no dialog opened`);
    assert.ok(st.inPanel && st.focus === 'label', `try ${i + 1}: the focus is on Label in the panel, not ${st.focus}`);
    assert.equal(st.field, labels[i], `try ${i + 1}: the field shows what was typed`);
    cur = next;
  }
  const saved = (await api('GET', '/v1/chains/' + id)).doc;
  assert.deepEqual(saved.nodes.map((n) => [n.node_id, n.label || '']), [['renamed_2', 'Extract fees'], ['other', '']], 'saved as typed');
  await shot(page, 'editor-renamed');
  await page.done();
});

test('single-key shortcuts act only on the canvas, and the shortcut list turns them off (remembered)', async () => {
  const { page } = await openEditor(twoNodes(uniq('keys')));
  const notes = () => page.evaluate(() => (window.__editor.doc.notes || []).length);
  // the focus on a toolbar button: N adds nothing, Backspace deletes nothing
  await page.focus('#btn-fit');
  await page.click('#node-table .select-node[data-node-id="step"]');
  await page.focus('#btn-fit');
  await page.keyboard.press('n');
  await page.keyboard.press('Backspace');
  assert.equal(await notes(), 0, 'N off the canvas adds no note');
  assert.equal(await page.evaluate(() => window.__editor.doc.nodes.length), 2, 'Backspace off the canvas deletes nothing');

  // a click on the canvas gives it the focus: N adds a note there
  await page.click('#cy', { position: { x: 8, y: 8 } });
  assert.equal(await page.evaluate(() => document.activeElement.id), 'cy');
  await page.keyboard.press('n');
  await page.waitForFunction(() => (window.__editor.doc.notes || []).length === 1);

  // ? lists them with the setting; turned off, N does nothing on the canvas either
  await page.click('#cy', { position: { x: 8, y: 8 } });
  await page.keyboard.press('?');
  await page.waitForSelector('#shortcuts-dialog[open]');
  assert.equal(await page.isChecked('#single-keys'), true, 'on by default');
  await shot(page, 'shortcuts-dialog');
  await tabTo(page, '#single-keys', true);
  await page.keyboard.press('Space');
  assert.equal(await page.isChecked('#single-keys'), false);
  await page.keyboard.press('Escape');
  await page.click('#cy', { position: { x: 8, y: 8 } });
  await page.keyboard.press('n');
  await page.keyboard.press('?');
  assert.equal(await notes(), 1, 'turned off: N adds nothing');
  assert.equal(await page.evaluate(() => !!document.querySelector('dialog[open]')), false, 'turned off: ? opens nothing');
  // Ctrl shortcuts still work
  await page.keyboard.press('Control+z');
  await page.waitForFunction(() => (window.__editor.doc.notes || []).length === 0);
  await waitSaved(page);

  // remembered in this browser
  await page.reload();
  await page.waitForSelector('#editor[data-ready="1"]');
  await page.click('#btn-shortcuts');
  await page.waitForSelector('#shortcuts-dialog[open]');
  assert.equal(await page.isChecked('#single-keys'), false, 'still off after a reload');
  await page.check('#single-keys');
  await page.keyboard.press('Escape');
  await page.click('#cy', { position: { x: 8, y: 8 } });
  const had = await notes();
  await page.keyboard.press('n');
  await page.waitForFunction((n) => (window.__editor.doc.notes || []).length === n + 1, had);
  await page.done();
});

test('at 1366×768 the toolbar with Run, the canvas and the properties are in view and the page does not scroll', async () => {
  const nodes = [];
  const edges = [];
  for (let i = 0; i < 30; i++) {
    nodes.push({ node_id: 'n' + i, kind: 'tool', name: 'echo', label: 'Step ' + i, input_map: { a: 'input.a', b: 'input.b', c: 'input.c' }, position: { x: (i % 6) * 200, y: Math.floor(i / 6) * 110 } });
    if (i > 0) edges.push({ source: 'n' + (i - 1), target: 'n' + i });
  }
  const { page } = await openEditor({ name: uniq('layout'), nodes, edges });
  const check = async (what) => {
    const m = await page.evaluate(() => {
      const r = (sel) => { const b = document.querySelector(sel).getBoundingClientRect(); return { top: Math.round(b.top), bottom: Math.round(b.bottom), h: Math.round(b.height) }; };
      window.scrollTo(0, 100000);
      return { run: r('#btn-run'), toolbar: r('.toolbar'), cy: r('#cy'), props: r('#props'), list: r('#node-list-pane summary'), scrollY: window.scrollY, sh: document.scrollingElement.scrollHeight, vh: window.innerHeight };
    });
    assert.equal(m.scrollY, 0, what + ': the page does not scroll ' + JSON.stringify(m));
    assert.ok(m.sh <= m.vh, what + ': the page is no taller than the window ' + JSON.stringify(m));
    for (const k of ['run', 'toolbar', 'cy', 'props', 'list']) assert.ok(m[k].top >= 0 && m[k].bottom <= m.vh && m[k].h > 0, what + ': ' + k + ' in view ' + JSON.stringify(m[k]));
    assert.ok(m.cy.h >= 300, what + ': the canvas has room: ' + m.cy.h);
    assert.ok(m.props.h >= 200, what + ': the properties have room: ' + m.props.h);
  };
  await check('the list open');
  await shot(page, 'editor-1366');
  await page.click('#node-table .select-node[data-node-id="n3"]');
  await page.waitForSelector('.props[data-id="n3"]');
  await check('a node selected');
  await page.click('#node-list-pane summary');
  await page.waitForFunction(() => !document.getElementById('node-list-pane').open);
  await check('the list closed');
  await shot(page, 'editor-1366-list-closed');
  await page.done();
});

test('a run under a millisecond says "< 1 ms": the JS formatter writes what the server writes', async () => {
  const page = await open('/runs');
  await loadModule(page, 'common');
  const got = await page.evaluate(() => [0, 0.4, 1, 12.4, 1400, 123000, -1, undefined].map((ms) => window.__modules.common.duration(ms)));
  assert.deepEqual(got, ['< 1 ms', '< 1 ms', '1 ms', '12 ms', '1.4 s', '2 min 3 s', '—', '—']);
  await page.done();
});

test('the run comparison shows the two inputs first', async () => {
  const ch = await api('POST', '/v1/chains', { name: uniq('inputs'), nodes: [{ node_id: 'say', kind: 'tool', name: 'echo', input_map: { who: 'input.who' } }] });
  const runOf = async (input) => {
    const r = await api('POST', '/v1/chains/' + ch.id + '/runs', { input });
    for (let i = 0; i < 200; i++) {
      const s = await api('GET', '/v1/runs/' + r.run_id);
      if (s.status === 'completed') return r.run_id;
      await new Promise((res) => setTimeout(res, 50));
    }
    assert.fail('run did not complete');
  };
  const a = await runOf({ who: 'ann', n: 1 });
  const b = await runOf({ who: 'bob', n: 1 });
  const page = await open(null);
  await page.setViewportSize({ width: 1366, height: 768 });
  await page.goto(new URL('/runs/' + a + '/diff/' + b, BASE).href);
  await page.waitForSelector('#rundiff-input');
  const order = await page.evaluate(() => {
    const inp = document.getElementById('rundiff-input').getBoundingClientRect().top;
    const verdict = document.getElementById('rundiff-verdict').getBoundingClientRect().top;
    return { inp, verdict, paths: [...document.querySelectorAll('#input-diff tbody th')].map((t) => t.textContent.trim()) };
  });
  assert.ok(order.inp < order.verdict, 'the inputs come before the verdict');
  assert.deepEqual(order.paths, ['who']);
  assert.match(await page.textContent('#input-a'), /"ann"/);
  assert.match(await page.textContent('#input-b'), /"bob"/);
  await shot(page, 'rundiff');
  await page.goto(new URL('/runs/' + a, BASE).href);
  await page.waitForSelector('.runpage');
  await shot(page, 'runpage');
  await page.done();
});
