// The node view: one node at full size in a large dialog over the canvas,
// with what it received in a run (Input), its parameters (Parameters) and
// what it did (Output). Opened by a double-click on a node, Enter on the
// selected node (on the canvas or its row in the node list) or "Open" in
// its properties; Previous / Next walk the node list; Escape closes it and
// the focus goes back where it came from.
//
// The Parameters column is the property panel itself (#props), moved into
// the view while it is open and back when it closes: its fields are drawn
// and saved by the same code as in the side column (editor-props.js), and
// the add-ons on it (the expression editor, the code editor, forms) go
// with it. The Input and Output columns come from the server
// (GET /chains/{id}/nodes/{node}/view, a run's data cut to a preview); the
// run picker lists the runs "Run this node" offers (…/view/runs), loaded
// after the data. "Run this step" is that node run (POST
// /v1/chains/{id}/nodes/{node}/run) from the run shown.
import * as api from './api.js';
import * as canvas from './canvas.js';
import * as common from './common.js';
import { studio } from './editor-api.js';
import { whenReady } from './editor.js';
import { pinControls } from './pins.js';
(function () {
  const root = document.getElementById('editor');
  const dlg = document.getElementById('node-view');
  const props = document.getElementById('props');
  if (!root || !dlg || !props) return;
  const $ = (id) => document.getElementById(id);
  const chainId = root.dataset.chainId;
  const base = (id) => '/chains/' + encodeURIComponent(chainId) + '/nodes/' + encodeURIComponent(id);
  // timings of the openings (gesture to filled, ms), for the browser suite
  const timings = window.__nodeview = { opens: [] };

  let nodeId = ''; // the node shown
  let runId = ''; // the run its data is from ('' : the latest that reached it)
  let opener = null; // the element the view was opened from
  let home = null; // where #props goes back to
  let seq = 0; // the showing being filled: answers for an older one are dropped
  let target = null; // the parameter field a clicked path goes into

  // ---- opening and closing ---------------------------------------------------

  function nodeOf(id) { return studio.doc && studio.doc.nodes.find((n) => n.node_id === id); }

  function select(id) {
    const cy = studio.cy;
    if (!cy) return;
    if (cy.getElementById(id).empty()) canvas.loadAll(cy);
    const ele = cy.getElementById(id);
    if (ele.empty()) return;
    const sel = cy.$(':selected');
    if (sel.length === 1 && sel.same(ele)) return;
    sel.unselect();
    ele.select();
  }

  function open(id, from) {
    const t0 = performance.now();
    if (!nodeOf(id)) return;
    opener = from || document.activeElement;
    if (!dlg.open) {
      home = document.createComment('the property panel goes back here');
      props.before(home);
      props.dataset.nvHidden = props.hidden ? '1' : '';
      props.hidden = false;
      $('nv-params').append(props);
      dlg.showModal();
    }
    show(id, t0);
  }

  function show(id, t0) {
    const my = ++seq;
    nodeId = id;
    runId = '';
    target = null;
    select(id);
    title();
    nav();
    $('nv-step').replaceChildren();
    $('nv-said').textContent = '';
    resetPicker();
    const at = {};
    const data = load(id, '', my).then((ok) => { at.data = performance.now() - t0; return ok; });
    const panel = propsShown(id).then(() => { at.params = performance.now() - t0; });
    Promise.all([data, panel]).then(([ok]) => {
      if (my !== seq || !ok) return;
      const ms = performance.now() - t0;
      timings.opens.push({ node: id, ms, data: at.data, params: at.params });
      dlg.dataset.filled = id;
      loadPicker(my);
    });
  }

  // title names the node shown, as the document has it now
  function title() {
    const n = nodeOf(nodeId);
    if (!n) return;
    $('nv-kind').textContent = n.kind;
    $('nv-kind').className = 'kind-badge kind-' + n.kind;
    $('nv-name').replaceChildren(...(n.label && n.label !== nodeId ? [n.label + ' ', common.el('code', { class: 'node-id', text: nodeId })] : [common.el('code', { text: nodeId })]));
  }
  // nav points Previous and Next at the neighbours in the node list
  function nav() {
    const ids = studio.doc.nodes.map((x) => x.node_id);
    const i = ids.indexOf(nodeId);
    $('nv-pos').textContent = 'node ' + (i + 1) + ' of ' + ids.length;
    setNav($('nv-prev'), i > 0 ? ids[i - 1] : '');
    setNav($('nv-next'), i >= 0 && i < ids.length - 1 ? ids[i + 1] : '');
  }
  // after a save: a new label, or the node renamed in the panel
  root.addEventListener('studio:saved', () => {
    if (!dlg.open) return;
    if (!nodeOf(nodeId)) {
      const p = props.querySelector('.props[data-target="node"]');
      if (!p || !nodeOf(p.dataset.id)) return;
      nodeId = p.dataset.id;
    }
    title();
    nav();
  });

  function setNav(b, id) {
    b.dataset.node = id;
    const was = document.activeElement === b;
    b.disabled = !id;
    const n = id && nodeOf(id);
    b.title = n ? (b.id === 'nv-prev' ? 'Previous: ' : 'Next: ') + (n.label && n.label !== id ? n.label + ' (' + id + ')' : id) : 'No ' + (b.id === 'nv-prev' ? 'previous' : 'next') + ' node';
    // the focus stays on the buttons when one of them ends
    if (was && b.disabled) (b.id === 'nv-prev' ? $('nv-next') : $('nv-prev')).focus();
  }

  // propsShown resolves once the property panel shows node id (the editor
  // draws it after the selection, editor-props.js).
  function propsShown(id) {
    const col = $('nv-params');
    const has = () => { const p = props.querySelector('.props[data-target="node"]'); return p && p.dataset.id === id; };
    col.setAttribute('aria-busy', 'true');
    return new Promise((resolve) => {
      const done = () => { col.removeAttribute('aria-busy'); fullSize(); resolve(); };
      if (has()) { done(); return; }
      const mo = new MutationObserver(() => { if (has()) { mo.disconnect(); done(); } });
      mo.observe(props, { childList: true });
    });
  }

  function close() {
    seq++;
    if (home) {
      home.replaceWith(props);
      home = null;
      props.hidden = props.dataset.nvHidden === '1';
      delete props.dataset.nvHidden;
    }
    fullSize(false);
    delete dlg.dataset.filled;
    $('nv-input').replaceChildren();
    $('nv-output').replaceChildren();
    const cy = studio.cy;
    const ele = cy && nodeId ? cy.getElementById(nodeId) : null;
    // back to where it was opened from, at the node shown last
    let to = null;
    if (opener && opener.closest && opener.closest('#node-table')) {
      to = document.querySelector('#node-table button.select-node[data-node-id="' + CSS.escape(nodeId) + '"]');
    } else if (opener && opener.closest && opener.closest('#props')) {
      to = props.querySelector('[data-open-node-view]');
    } else if (opener && opener.closest && opener.closest('.canvas-wrap')) {
      to = $('cy');
    }
    if (!to && opener && opener.isConnected) to = opener;
    if (!to) to = $('cy');
    to.focus({ preventScroll: to === $('cy') });
    if (ele && ele.nonempty()) canvas.focus(cy, ele);
    // Selecting the node redraws its list row, and the dialog hands the
    // focus back to the element it was opened from: once that settles, the
    // focus is put where it belongs again (the row drawn anew, found by id).
    const shown = nodeId;
    const fromList = to.matches && to.matches('#node-table button.select-node');
    requestAnimationFrame(() => {
      if (dlg.open) return;
      let want = to;
      if (fromList) want = document.querySelector('#node-table button.select-node[data-node-id="' + CSS.escape(shown) + '"]') || to;
      if (want.isConnected && document.activeElement !== want) want.focus({ preventScroll: want === $('cy') });
    });
  }
  dlg.addEventListener('close', close);
  $('nv-close').addEventListener('click', () => dlg.close());
  $('nv-prev').addEventListener('click', (e) => { if (e.currentTarget.dataset.node) show(e.currentTarget.dataset.node, performance.now()); });
  $('nv-next').addEventListener('click', (e) => { if (e.currentTarget.dataset.node) show(e.currentTarget.dataset.node, performance.now()); });

  // Escape in the code editor is the editor's (then Tab leaves it): a
  // second Escape there closes the view.
  let escArmed = false;
  dlg.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape') { escArmed = false; return; }
    const inCode = e.composedPath().some((x) => x.classList && x.classList.contains('sf-code-host'));
    if (inCode && !escArmed) {
      e.preventDefault();
      escArmed = true;
      say('Escape again closes the node view; Tab leaves the code editor.');
    }
  });

  // The code editor gets the column's height in the view (its own
  // scrollbars, never the page's); back to the side column's size after.
  function fullSize(on = true) {
    for (const ta of props.querySelectorAll('textarea.sf-code-text')) {
      const v = ta.codeEditor && ta.codeEditor.view;
      if (!v) continue;
      v.dom.style.maxHeight = on ? 'calc(100vh - 220px)' : '';
      v.dom.style.minHeight = on ? '16em' : '';
    }
  }
  new MutationObserver(() => { if (dlg.open) fullSize(); }).observe(props, { childList: true, subtree: true });

  // ---- the data columns --------------------------------------------------------

  // load fills Input and Output with node id's data from run ('' : the
  // latest); false when a newer showing won.
  async function load(id, run, my) {
    $('nv-input').setAttribute('aria-busy', 'true');
    $('nv-output').setAttribute('aria-busy', 'true');
    let html;
    try {
      html = (await api.html('GET', base(id) + '/view' + (run ? '?run=' + encodeURIComponent(run) : ''))).html;
    } catch (e) {
      html = e.body || '';
      if (!html) {
        if (my !== seq) return false;
        $('nv-input').replaceChildren(common.el('div', { class: 'form-error', text: e.message }));
        $('nv-output').replaceChildren();
        $('nv-input').removeAttribute('aria-busy');
        $('nv-output').removeAttribute('aria-busy');
        return true;
      }
    }
    if (my !== seq) return false;
    const doc = new DOMParser().parseFromString(html, 'text/html');
    const data = doc.querySelector('.nv-data');
    const inp = doc.getElementById('nv-input-body');
    const out = doc.getElementById('nv-output-body');
    if (data) runId = data.dataset.runId || '';
    $('nv-input').dataset.runId = runId;
    $('nv-output').dataset.runId = runId;
    $('nv-input').dataset.from = data ? data.dataset.from : '[]';
    $('nv-input').replaceChildren(...(inp ? [document.importNode(inp, true)] : [...doc.body.childNodes].map((x) => document.importNode(x, true))));
    $('nv-output').replaceChildren(...(out ? [document.importNode(out, true)] : []));
    mountPin();
    $('nv-input').removeAttribute('aria-busy');
    $('nv-output').removeAttribute('aria-busy');
    return true;
  }

  // mountPin puts the pin controls where the output shown can be pinned
  // (#nv-pin: a node that ran, not a pin or a kept output, no credential
  // sent). The output is read whole when Pin is pressed: the view shows it cut.
  function mountPin() {
    const slot = $('nv-pin');
    if (!slot) return;
    const { runId: run, nodeId: id } = slot.dataset;
    slot.replaceChildren(pinControls(id, () => api.get('/v1/runs/' + encodeURIComponent(run) + '/nodes/' + encodeURIComponent(id) + '/output')));
  }

  function resetPicker() {
    const sel = $('nv-run');
    sel.replaceChildren(common.el('option', { value: '', text: 'the latest' }));
    sel.disabled = true;
  }

  // loadPicker lists the runs to take the data from (before: the next page
  // of older ones), the shown one chosen.
  async function loadPicker(my, before) {
    let html;
    try {
      html = (await api.html('GET', base(nodeId) + '/view/runs?run=' + encodeURIComponent(runId) + (before ? '&before=' + encodeURIComponent(before) : ''))).html;
    } catch { return; } // the picker keeps "the latest"
    if (my !== seq) return;
    const fresh = new DOMParser().parseFromString(html, 'text/html').getElementById('nv-run');
    if (!fresh) return;
    const sel = $('nv-run');
    const focused = document.activeElement === sel;
    sel.replaceChildren(...[...fresh.children].map((o) => document.importNode(o, true)));
    sel.value = runId;
    sel.disabled = sel.options.length === 0 || (sel.options.length === 1 && !runId);
    if (focused) sel.focus();
  }

  $('nv-run').addEventListener('change', async (e) => {
    const opt = e.target.selectedOptions[0];
    if (!opt) return;
    if (opt.dataset.before) { loadPicker(seq, opt.dataset.before); return; }
    const my = ++seq;
    $('nv-step').replaceChildren();
    if (await load(nodeId, opt.value, my)) dlg.dataset.filled = nodeId;
  });

  // Table / JSON, "Show all", and the run's input opened on demand
  dlg.addEventListener('click', async (e) => {
    const mode = e.target.closest('.nv-mode button');
    if (mode) {
      const v = mode.closest('.nv-value');
      setMode(v, mode.dataset.mode);
      return;
    }
    const all = e.target.closest('.nv-show-all');
    if (all) {
      const v = all.closest('.nv-value');
      const col = all.closest('#nv-input, #nv-output');
      const part = all.dataset.part;
      all.disabled = true;
      all.textContent = 'Loading…';
      const q = '?run=' + encodeURIComponent(col.dataset.runId || '') + '&all=' + encodeURIComponent(part) + (part === 'input' ? '&part=input' : '');
      try {
        const { html } = await api.html('GET', base(nodeId) + '/view' + q);
        const fresh = new DOMParser().parseFromString(html, 'text/html').querySelector('.nv-value[data-part="' + part + '"]');
        if (!fresh || !v.isConnected) return;
        const nv = document.importNode(fresh, true);
        v.replaceWith(nv);
        setMode(nv, 'json');
        nv.querySelector('pre.nv-json').focus();
      } catch (err) {
        all.disabled = false;
        all.textContent = 'Show all';
        say('Could not load it: ' + err.message);
      }
      return;
    }
    const field = e.target.closest('.nv-field');
    if (field) usePath(field);
  });
  function setMode(v, mode) {
    v.dataset.mode = mode;
    for (const b of v.querySelectorAll('.nv-mode button')) b.setAttribute('aria-pressed', String(b.dataset.mode === mode));
    v.querySelector('.nv-table-wrap').hidden = mode !== 'table';
    v.querySelector('pre.nv-json').hidden = mode !== 'json';
    const schema = v.querySelector('pre.nv-schema');
    if (schema) schema.hidden = mode !== 'schema';
  }
  dlg.addEventListener('toggle', async (e) => {
    const d = e.target;
    if (!d.matches || !d.matches('details.nv-more[data-part="input"]') || !d.open) return;
    const lazy = d.querySelector('.nv-lazy');
    if (!lazy || lazy.childElementCount) return;
    lazy.replaceChildren(common.el('p', { class: 'hint', text: 'Loading…' }));
    try {
      lazy.innerHTML = (await api.html('GET', base(nodeId) + '/view?part=input&run=' + encodeURIComponent($('nv-input').dataset.runId || ''))).html;
    } catch (err) {
      lazy.replaceChildren(common.el('div', { class: 'form-error', text: err.message }));
    }
  }, true);

  // ---- a field's path into the parameters ----------------------------------------

  // target follows the focus in the Parameters column: the expression field
  // or script last in, where a clicked path goes.
  $('nv-params').addEventListener('focusin', (e) => {
    const t = e.target;
    if (t.matches && t.matches('input.expr')) target = { el: t, kind: 'expr', field: exprField(t) };
    else if (t.classList && t.classList.contains('sf-code-host')) target = { el: t, kind: 'code', field: 'code' };
    else target = null;
  });

  // exprField names what kind of field an expression input is: input_map,
  // set_state, cases, or its data-f (condition, items_path).
  function exprField(inp) {
    if (inp.dataset.f) return inp.dataset.f;
    const fs = inp.closest('fieldset[data-f]');
    return fs ? fs.dataset.f : '';
  }

  const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
  // pathOf spells the path of a field: segs below the value that prefix
  // names (output: what the node received; input: the run's input; self:
  // the node's own output), for the field it goes into (an expression, a
  // script); set_state reads the node's own output as `output`, so the
  // received data is named by the node it came from there.
  function pathOf(prefix, segs, into) {
    const js = into && into.kind === 'code';
    let head = prefix;
    segs = segs.slice();
    const node = (id) => (IDENT.test(id) ? id + '.output' : 'node_results.' + JSON.stringify(id));
    if (prefix === 'self') {
      head = into && into.field === 'set_state' ? 'output' : js ? 'nodes' + seg(nodeId, true) : node(nodeId);
    } else if (prefix === 'output' && into && into.field === 'set_state') {
      const from = JSON.parse($('nv-input').dataset.from || '[]');
      if (from.length === 1) head = node(from[0]);
      else if (segs.length) head = node(String(segs.shift()));
    }
    return head + segs.map((s) => seg(s, js)).join('');
  }
  function seg(s, js) {
    if (typeof s === 'number') return '[' + s + ']';
    if (IDENT.test(s)) return '.' + s;
    return js ? '[' + JSON.stringify(s) + ']' : '.' + JSON.stringify(s);
  }

  async function usePath(btn) {
    const v = btn.closest('.nv-value');
    const path = pathOf(v.dataset.prefix, JSON.parse(btn.dataset.segs), target);
    const t = target && target.el.isConnected ? target : null;
    if (t && !(v.dataset.prefix === 'self' && t.field !== 'set_state')) {
      insert(t, path);
      say('Inserted ' + path);
      return;
    }
    try {
      await navigator.clipboard.writeText(path);
      say('Copied ' + path + (t ? '' : ' (click into an expression or the script first to insert it there)'));
    } catch {
      say('Its path: ' + path);
    }
  }

  function insert(t, text) {
    if (t.kind === 'code') {
      const ta = t.el.parentElement && t.el.parentElement.querySelector('textarea.sf-code-text');
      const v = ta && ta.codeEditor && ta.codeEditor.view;
      if (v) { v.dispatch(v.state.replaceSelection(text)); v.focus(); }
      return;
    }
    const el = t.el;
    el.focus();
    const s = el.selectionStart ?? el.value.length;
    const e = el.selectionEnd ?? s;
    el.setRangeText(text, s, e, 'end');
    // the same event typing sends: the panel saves it and checks it
    el.dispatchEvent(new Event('input', { bubbles: true }));
  }

  // a field dragged onto an expression or the script drops its path
  dlg.addEventListener('dragstart', (e) => {
    const f = e.target.closest && e.target.closest('.nv-field');
    if (!f) return;
    const v = f.closest('.nv-value');
    e.dataTransfer.setData('text/plain', pathOf(v.dataset.prefix, JSON.parse(f.dataset.segs), { kind: 'expr', field: 'input_map' }));
    e.dataTransfer.effectAllowed = 'copy';
  });

  function say(text) { $('nv-said').textContent = text; }

  // ---- Run this step ------------------------------------------------------------

  $('nv-run-step').addEventListener('click', async () => {
    const btn = $('nv-run-step');
    const out = $('nv-step');
    const id = nodeId;
    const my = seq;
    btn.disabled = true;
    out.replaceChildren(common.el('p', { class: 'hint', text: 'Saving, then running ' + id + ' alone…' }));
    try {
      if (studio.flush) await studio.flush(); // it runs as shown
      // the run shown gives the upstream outputs; none: the latest that has them
      const body = { version: studio.version };
      if (runId) body.from_run = runId;
      const data = await api.post('/v1/chains/' + encodeURIComponent(chainId) + '/nodes/' + encodeURIComponent(id) + '/run', body);
      if (my !== seq) return;
      out.replaceChildren(common.el('p', {}, common.el('span', { class: 'status status-running', text: 'running' }), ' ', runLink(data.run_id)));
      const run = await follow(data.run_id);
      if (my !== seq) return;
      // the run's link is the output's own, below
      out.replaceChildren(common.el('p', { id: 'nv-step-done' },
        'Ran alone: ', common.el('span', { class: 'status status-' + run.status, id: 'nv-step-status', text: run.status.replace(/_/g, ' ') })));
      // the output column shows the new run's result, drawn as the others
      const { html } = await api.html('GET', base(id) + '/view?run=' + encodeURIComponent(data.run_id));
      if (my !== seq) return;
      const fresh = new DOMParser().parseFromString(html, 'text/html').getElementById('nv-output-body');
      if (fresh) {
        $('nv-output').replaceChildren(document.importNode(fresh, true));
        $('nv-output').dataset.runId = data.run_id;
        mountPin();
      }
    } catch (e) {
      if (my === seq) out.replaceChildren(common.el('div', { class: 'form-error', id: 'nv-step-error' }, common.el('strong', { text: 'Not run' }), common.el('pre', { text: e.message })));
    } finally {
      btn.disabled = false;
    }
  });

  function runLink(id) {
    return common.el('a', { href: '/runs/' + encodeURIComponent(id), id: 'nv-step-link' }, 'Open the run');
  }

  // follow waits for a node run to stop (a node that runs longer than ten
  // minutes is followed on its run page).
  async function follow(id) {
    let wait = 100;
    const until = Date.now() + 10 * 60 * 1000;
    let run = null;
    while (Date.now() < until) {
      await new Promise((r) => setTimeout(r, wait));
      wait = Math.min(wait * 1.5, 2000);
      try { run = await api.get('/v1/runs/' + encodeURIComponent(id)); } catch { continue; }
      if (!run.active && run.status !== 'running' && run.status !== 'queued') return run;
    }
    return run || { status: 'running' };
  }

  // ---- the ways in --------------------------------------------------------------

  // A double-click is told from the taps themselves: Cytoscape's dbltap
  // pairs any two taps in quick succession wherever they land (a click on
  // one node and a Shift+click on the next, a selection, was one) and then
  // spends the next tap, so a real double-click just after was lost. Two
  // taps on the same node, close in time and place, with no modifier key,
  // open the view.
  const DOUBLE_MS = 400;
  const DOUBLE_PX = 8;
  whenReady(() => {
    let last = null; // {target, at, x, y}
    studio.cy.on('tap', (e) => {
      const o = e.originalEvent || {};
      const p = e.renderedPosition || { x: 0, y: 0 };
      const tap = { target: e.target, at: e.timeStamp || performance.now(), x: p.x, y: p.y };
      const mod = !!(o.shiftKey || o.ctrlKey || o.metaKey || o.altKey);
      const isNode = e.target !== studio.cy && e.target.isNode && e.target.isNode() && !e.target.hasClass('eh-handle');
      const double = isNode && !mod && last && last.target === e.target && tap.at - last.at <= DOUBLE_MS &&
        Math.abs(tap.x - last.x) <= DOUBLE_PX && Math.abs(tap.y - last.y) <= DOUBLE_PX;
      last = double || mod ? null : tap;
      if (double) open(e.target.id(), $('cy'));
    });
  });

  // Enter on the selected node: on the canvas, or on its row's button in the
  // node list (Enter on a row that is not selected selects it, as before).
  document.addEventListener('keydown', (e) => {
    if (e.key !== 'Enter' || e.ctrlKey || e.metaKey || e.altKey || e.shiftKey || document.querySelector('dialog[open]') || !studio.cy) return;
    const t = document.activeElement;
    const sel = studio.cy.$('node:selected').not('.eh-handle');
    if (t && t.matches('#node-table button.select-node')) {
      if (sel.length !== 1 || sel.id() !== t.dataset.nodeId) return;
      e.preventDefault();
      open(t.dataset.nodeId, t);
    } else if (t && t.closest('.canvas-wrap') && !/^(INPUT|TEXTAREA|SELECT|BUTTON)$/.test(t.tagName) && !t.isContentEditable && sel.length === 1) {
      e.preventDefault();
      open(sel.id(), t);
    }
  });

  // "Open" in the node's properties
  document.addEventListener('click', (e) => {
    const b = e.target.closest('[data-open-node-view]');
    if (!b || dlg.contains(b)) return;
    const panel = b.closest('.props[data-target="node"]');
    if (panel) open(panel.dataset.id, b);
  });
})();
