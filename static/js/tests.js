// Chain tests. In the designer: the tests panel (list, edit, add, delete),
// the tests run after every save (POST /v1/chains/{id}/tests/run) with a
// pass/fail badge, and each failing assertion marked on its node. On a run
// page: "Save as test" (POST /v1/runs/{id}/save-test), then the designer
// opens on the new test.
import * as api from './api.js';
import * as common from './common.js';
import { studio } from './editor-api.js';
import * as testform from './testform.js';
(function () {
  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs, ...kids) => common.el(tag, attrs, ...kids);
  const pretty = (v) => (v === undefined ? '(nothing)' : JSON.stringify(v, null, 2));

  // ---- run page ------------------------------------------------------------

  const runpage = $('runpage');
  if (runpage) {
    const btn = $('btn-save-test');
    const dlg = $('save-test-dialog');
    if (!btn || !dlg) return;
    const name = $('save-test-name');
    const out = $('save-test-result');
    btn.addEventListener('click', () => {
      out.replaceChildren();
      if (!name.value) name.value = 'run ' + runpage.dataset.runId.slice(0, 8);
      dlg.showModal();
      name.select();
    });
    $('save-test-cancel').addEventListener('click', () => dlg.close());
    // a run watched to its end becomes testable without a reload
    const testable = (st) => st === 'completed' || st === 'partial' || st === 'failed';
    new MutationObserver(() => { btn.hidden = !testable(runpage.dataset.status); })
      .observe(runpage, { attributes: true, attributeFilter: ['data-status'] });
    $('save-test-form').addEventListener('submit', async (e) => {
      e.preventDefault();
      const n = name.value.trim();
      if (!n) { out.replaceChildren(el('div', { class: 'form-error', text: 'Give the test a name.' })); name.focus(); return; }
      $('save-test-submit').disabled = true;
      try {
        const body = await api.post('/v1/runs/' + encodeURIComponent(runpage.dataset.runId) + '/save-test', { name: n });
        window.location.assign(body.editor_url);
      } catch (err) {
        out.replaceChildren(el('div', { class: 'form-error', text: 'Not saved: ' + err.message }));
      } finally {
        $('save-test-submit').disabled = false;
      }
    });
    return;
  }

  // ---- designer --------------------------------------------------------------

  const root = $('editor');
  const panel = $('tests-panel');
  if (!root || !panel) return;
  const chainId = root.dataset.chainId;
  const badge = $('tests-badge');
  const list = $('tests-list');
  const nodeBox = $('tests-node');
  let report = null;
  let running = false;
  let again = false;
  let open = new Set(); // indexes of the tests shown opened
  let jsonOpen = new Set(); // indexes of the tests whose JSON view is open
  const wanted = new URLSearchParams(window.location.search).get('test');
  if (wanted !== null && /^\d+$/.test(wanted)) open.add(Number(wanted));
  let focusWanted = wanted !== null;

  const tests = () => ((studio.doc && studio.doc.tests) || []);
  // forms[i] is test i's form while the test is what it was built from, so a
  // re-render after a save keeps what is being typed in it.
  let forms = new Map();
  const nodeIDs = () => ((studio.doc && studio.doc.nodes) || []).map((n) => n.node_id);

  async function runTests() {
    if (running) { again = true; return; }
    running = true;
    panel.dataset.state = 'running';
    try {
      if (!tests().length) { report = null; return; }
      badge.className = 'badge';
      badge.textContent = 'running…';
      report = await api.post('/v1/chains/' + encodeURIComponent(chainId) + '/tests/run', {});
    } catch (err) {
      report = { error: err.message };
    } finally {
      running = false;
      render();
      mark();
      panel.dataset.state = 'done';
      panel.dataset.version = report && report.version ? String(report.version) : '';
      if (again) { again = false; runTests(); }
    }
  }

  function resultFor(i) {
    if (!report || !report.tests) return null;
    return report.tests.find((t) => t.index === i) || null;
  }

  // told tells the editor (the Tests tab, Publish…) how the tests went.
  function told(detail) { root.dispatchEvent(new CustomEvent('studio:tests', { detail })); }

  function setBadge() {
    const n = tests().length;
    if (!n) { badge.className = 'badge'; badge.textContent = 'no tests'; told({ total: 0, failed: 0, passed: 0 }); return; }
    if (!report) return;
    if (report.error) { badge.className = 'badge sev-error'; badge.textContent = 'not run'; badge.title = report.error; told({ total: n, failed: 0, passed: 0, error: report.error }); return; }
    badge.removeAttribute('title');
    badge.className = 'badge ' + (report.failed ? 'sev-error' : 'ok');
    badge.textContent = report.failed ? report.failed + ' failed · ' + report.passed + ' passed' : report.passed + ' passed';
    panel.dataset.passed = String(report.passed);
    panel.dataset.failed = String(report.failed);
    told({ total: report.passed + report.failed, failed: report.failed, passed: report.passed });
  }

  function failureItem(f) {
    const li = el('li', { class: 'test-failure', 'data-kind': f.kind, 'data-node-id': f.node || '' });
    if (f.node) {
      li.append(el('button', { type: 'button', class: 'linklike select-node', 'data-node-id': f.node, text: f.node, 'aria-label': 'Show node ' + f.node + ' on the canvas' }), ': ');
    }
    li.append(el('span', { text: f.message }));
    if (f.expected !== undefined || f.actual !== undefined) {
      li.append(el('div', { class: 'ev' },
        el('span', { class: 'muted', text: 'expected' }), el('pre', { text: pretty(f.expected) }),
        el('span', { class: 'muted', text: 'actual' }), el('pre', { text: pretty(f.actual) })));
    }
    li.append(el('div', { class: 'muted', text: f.field }));
    return li;
  }

  function render() {
    setBadge();
    // A form is moved into the new list whole, which takes the focus from
    // it: what had the focus gets it back, where the caret was.
    const active = document.activeElement;
    const inForm = active && active.closest && active.closest('.test-form') ? active : null;
    const caret = inForm && 'selectionStart' in inForm ? [inForm.selectionStart, inForm.selectionEnd] : null;
    const ts = tests();
    // Keep what a person is typing: a re-render after a save must not lose an
    // unapplied edit or the focus.
    const kept = new Map();
    for (const a of list.querySelectorAll('textarea[id^="test-json-"]')) {
      const i = Number(a.id.replace('test-json-', ''));
      const dirty = ts[i] === undefined || a.value !== JSON.stringify(ts[i], null, 2);
      if (dirty || a === document.activeElement) kept.set(i, { value: a.value, dirty, focused: a === document.activeElement, start: a.selectionStart, end: a.selectionEnd });
    }
    const items = ts.map((t, i) => {
      const r = resultFor(i);
      const state = r ? (r.passed ? 'pass' : 'fail') : 'unknown';
      const li = el('li', { class: 'test ' + state, 'data-index': String(i), 'data-name': t.name || '' });
      const det = el('details', {});
      if (open.has(i)) det.open = true;
      det.addEventListener('toggle', () => { if (det.open) open.add(i); else open.delete(i); });
      det.append(el('summary', {},
        el('span', { class: 'mark', 'aria-hidden': 'true', text: state === 'pass' ? '✓' : state === 'fail' ? '✗' : '·' }),
        el('span', { class: 'tname', text: t.name || '(no name)' }),
        el('span', { class: 'visually-hidden', text: state === 'pass' ? 'passed' : state === 'fail' ? 'failed' : 'not run' })));
      if (r && r.failures && r.failures.length) {
        det.append(el('ul', { class: 'test-failures', 'aria-label': 'Failing assertions' }, ...r.failures.map(failureItem)));
      }
      const key = JSON.stringify(t);
      let f = forms.get(i);
      if (!f || f.key !== key) {
        f = { key, built: testform.build(t, nodeIDs(), 'test-' + i) };
        forms.set(i, f);
      }
      const area = el('textarea', { id: 'test-json-' + i, spellcheck: 'false', 'aria-label': 'Test ' + (t.name || i) + ' as JSON' });
      area.value = JSON.stringify(t, null, 2);
      const json = el('details', { class: 'advanced test-json' }, el('summary', { text: 'Advanced: the test as JSON' }),
        el('label', { for: 'test-json-' + i, class: 'hint', text: 'Test as JSON (name, input, mocks, errors, assert; see docs/chain-format.md, "Tests"). Ctrl+Enter applies it.' }), area);
      if (jsonOpen.has(i)) json.open = true;
      json.addEventListener('toggle', () => {
        if (json.open) jsonOpen.add(i); else jsonOpen.delete(i);
        // toggle comes a moment after the click: a render in between drew
        // the view anew, which takes the state now
        const cur = list.querySelector('li.test[data-index="' + i + '"] details.test-json');
        if (cur && cur !== json && cur.open !== json.open) cur.open = json.open;
      });
      const msg = el('div', { role: 'alert', class: 'test-msg' });
      const apply = el('button', { type: 'button', class: 'primary', text: 'Apply' });
      const del = el('button', { type: 'button', text: 'Delete test' });
      // Apply takes the JSON when it was edited, else the form.
      const applyAny = () => (json.open && area.value !== JSON.stringify(t, null, 2) ? applyTest(i, area, msg) : applyForm(i, f.built, msg));
      apply.addEventListener('click', applyAny);
      // their Ctrl+Enter applies the test, not the editor's run (editor-keys.js)
      f.built.form.setAttribute('data-own-ctrl-enter', '');
      area.setAttribute('data-own-ctrl-enter', '');
      f.built.form.onkeydown = (e) => { if ((e.ctrlKey || e.metaKey) && e.key === 'Enter') { e.preventDefault(); applyForm(i, f.built, msg); } };
      area.addEventListener('keydown', (e) => { if ((e.ctrlKey || e.metaKey) && e.key === 'Enter') { e.preventDefault(); applyTest(i, area, msg); } });
      del.addEventListener('click', () => deleteTest(i));
      det.append(el('div', { class: 'test-edit' }, f.built.form, json, el('div', { class: 'row' }, apply, del), msg));
      li.append(det);
      return li;
    });
    if (report && report.error) items.unshift(el('li', { class: 'form-error', text: 'The tests could not run: ' + report.error }));
    list.replaceChildren(...items);
    if (inForm && document.contains(inForm)) {
      inForm.focus({ preventScroll: true });
      if (caret && caret[0] !== null) { try { inForm.setSelectionRange(caret[0], caret[1]); } catch { /* not a text field */ } }
    }
    for (const [i, k] of kept) {
      const a = $('test-json-' + i);
      if (!a) continue;
      if (k.dirty) a.value = k.value;
      if (k.focused) { a.focus({ preventScroll: true }); a.setSelectionRange(k.start, k.end); }
    }
    showNode();
    if (focusWanted && ts.length && report) {
      focusWanted = false;
      const f = forms.get(Number(wanted));
      if (f) { f.built.form.closest('li').scrollIntoView({ block: 'nearest' }); f.built.focus(); }
    }
  }

  function applyForm(i, built, msg) {
    let t;
    try { t = built.read(); } catch (err) {
      msg.replaceChildren(el('div', { class: 'form-error', text: 'Not applied: ' + err.message + '.' }));
      return;
    }
    msg.replaceChildren(el('span', { class: 'hint', text: 'Applied: saving, then the tests run again (problems show under Validation).' }));
    open.add(i);
    studio.edit(() => { studio.doc.tests[i] = t; });
  }

  function applyTest(i, area, msg) {
    let t;
    try { t = JSON.parse(area.value); } catch (err) {
      msg.replaceChildren(el('div', { class: 'form-error', text: 'Not applied: the test is not JSON (' + err.message + ')' }));
      return;
    }
    if (!t || typeof t !== 'object' || Array.isArray(t)) {
      msg.replaceChildren(el('div', { class: 'form-error', text: 'Not applied: a test is a JSON object {"name", "input", "mocks", "assert"}' }));
      return;
    }
    msg.replaceChildren(el('span', { class: 'hint', text: 'Applied: saving, then the tests run again (problems show under Validation).' }));
    open.add(i);
    area.value = JSON.stringify(t, null, 2); // applied: no longer an edit to keep
    studio.edit(() => { studio.doc.tests[i] = t; });
  }

  function deleteTest(i) {
    open = new Set([...open].filter((k) => k !== i).map((k) => (k > i ? k - 1 : k)));
    jsonOpen = new Set([...jsonOpen].filter((k) => k !== i).map((k) => (k > i ? k - 1 : k)));
    studio.edit(() => {
      const d = studio.doc;
      d.tests.splice(i, 1);
      if (!d.tests.length) delete d.tests;
    });
    list.replaceChildren(); // the indexes moved: nothing typed is kept by index
    forms = new Map();
    render();
  }

  function addTest() {
    const d = studio.doc;
    const names = new Set(tests().map((t) => t.name));
    let name = 'new test';
    for (let k = 2; names.has(name); k++) name = 'new test ' + k;
    const t = { name, input: d.sample_input || {}, assert: { status: 'completed' } };
    const i = tests().length;
    open.add(i);
    studio.edit(() => { if (!d.tests) d.tests = []; d.tests.push(t); });
    render();
    const f = forms.get(i);
    if (f) f.built.focus();
  }

  // ---- failing assertions on the canvas -------------------------------------

  let styled = false;
  function mark() {
    const cy = studio.cy;
    if (!cy) return;
    if (!styled) {
      styled = true;
      const css = getComputedStyle(document.documentElement);
      const err = css.getPropertyValue('--error').trim() || '#c8281c';
      cy.style().selector('node.test-fail').style({ 'border-color': err, 'border-width': 4, 'border-style': 'double', 'underlay-color': err, 'underlay-opacity': 0.18, 'underlay-padding': 6 }).update();
    }
    const failing = failuresByNode();
    cy.batch(() => {
      cy.nodes('.test-fail').removeClass('test-fail').removeData('testFailures');
      for (const [id, fs] of failing) {
        const n = cy.getElementById(id);
        if (n.nonempty()) n.addClass('test-fail').data('testFailures', fs.length);
      }
    });
    root.dataset.testFailNodes = [...failing.keys()].sort().join(',');
  }

  function failuresByNode() {
    const m = new Map();
    if (!report || !report.tests) return m;
    for (const t of report.tests) {
      for (const f of t.failures || []) {
        if (!f.node) continue;
        if (!m.has(f.node)) m.set(f.node, []);
        m.get(f.node).push(Object.assign({ test: t.name }, f));
      }
    }
    return m;
  }

  // The selected node's failing assertions, above its properties (the
  // properties belong to editor-props.js; this box sits above them, in the
  // Properties tab, which selecting a node shows).
  function showNode() {
    const cy = studio.cy;
    const sel = cy ? cy.$('node:selected') : null;
    const id = sel && sel.length === 1 ? sel.id() : '';
    const fs = id ? failuresByNode().get(id) : null;
    if (!fs || !fs.length) { nodeBox.hidden = true; nodeBox.replaceChildren(); return; }
    nodeBox.hidden = false;
    nodeBox.replaceChildren(el('h3', { text: 'Failing on ' + id + ' (' + fs.length + ')' }),
      el('ul', { class: 'test-failures' }, ...fs.map((f) => {
        const li = failureItem(f);
        li.prepend(el('strong', { text: f.test + ': ' }));
        return li;
      })));
  }

  panel.addEventListener('click', (e) => {
    const b = e.target.closest('button.select-node');
    if (!b) return;
    const cy = studio.cy;
    const n = cy.getElementById(b.dataset.nodeId);
    if (n.empty()) return;
    cy.$(':selected').unselect();
    n.select();
    cy.animate({ center: { eles: n } }, { duration: 200 });
  });
  $('btn-add-test').addEventListener('click', addTest);
  $('btn-run-tests').addEventListener('click', runTests);
  root.addEventListener('studio:saved', runTests);

  // Wait for the designer's canvas, then run once and follow its selection.
  (function wait(tries) {
    if (!studio.cy || !studio.doc) { if (tries < 200) setTimeout(() => wait(tries + 1), 50); return; }
    studio.cy.on('select unselect', 'node', common.debounce(showNode, 30));
    studio.cy.on('studio-loaded', mark);
    render();
    runTests();
  })(0);
})();
