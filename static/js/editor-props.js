// The property panel: the server draws the selected node's, edge's or the
// chain's fields (POST /fragments/props); an edit in them is read back into
// the document, one undo step per field, and a node's id is renamed
// everywhere it is used (editor-rename.js). A panel drawn for an older
// selection is dropped, and the field being typed in keeps the focus across
// a redraw.
import * as api from './api.js';
import * as canvas from './canvas.js';
import * as common from './common.js';
import * as forms from './forms.js';
import { idProblem, rename } from './editor-rename.js';

export function install(ed) {
  const { propsEl } = ed;

  // A node's panel request carries what the engine needs to say what the
  // node will receive: its incoming edges and the nodes that may own it
  // (map, parallel, error handler).
  function nodePropsBody(n) {
    const inEdges = (ed.doc.edges || []).filter((e) => e.target === n.node_id);
    const srcs = new Set(inEdges.map((e) => e.source));
    const nodes = ed.doc.nodes.filter((x) => x.map_node || x.branches || x.on_error || srcs.has(x.node_id))
      .map((x) => ({ node_id: x.node_id, kind: x.kind, map_node: x.map_node, branches: x.branches, on_error: x.on_error }));
    return { node: n, node_ids: ed.nodeIds(), doc: { name: ed.doc.name || 'x', nodes, edges: inEdges } };
  }
  // editing a node's input or input map changes what it receives: redraw
  // that block only (the fields being typed in stay as they are)
  const refreshReceives = common.debounce(async () => {
    const panel = propsEl.querySelector('.props[data-target="node"]');
    const n = panel && ed.nodeById(panel.dataset.id);
    if (!n) return;
    const { html } = await api.html('POST', '/fragments/props', nodePropsBody(n));
    const fresh = new DOMParser().parseFromString(html, 'text/html').getElementById('receives');
    const cur = propsEl.querySelector('#receives');
    if (fresh && cur && propsEl.querySelector('.props[data-target="node"]') === panel) cur.replaceWith(document.importNode(fresh, true));
  }, 250);

  // propsSeq numbers the panel's renderings: every one counts, the ones
  // drawn at once (a multi-selection) too, so a node's fragment that
  // arrives after a newer selection was drawn is dropped, not shown.
  let propsSeq = 0;
  async function showProps() {
    const seq = ++propsSeq;
    const sel = ed.cy.$(':selected').not('.eh-handle');
    let body;
    if (sel.length === 1 && sel.isNode()) {
      const n = ed.nodeById(sel.id());
      if (!n) return;
      body = nodePropsBody(n);
    } else if (sel.length === 1 && sel.isEdge() && !sel.hasClass('attach')) {
      const e = ed.edgeById(sel.id());
      if (!e) return;
      const s = ed.nodeById(e.source);
      const handles = s && s.kind === 'branch' ? ['true', 'false', 'default'] : s && s.kind === 'condition' ? (s.cases || []).map((c) => c.handle).concat(['default']) : [];
      body = { edge: e, node_ids: ed.nodeIds(), source_kind: s ? s.kind : '', handles };
    } else if (sel.length > 1) {
      propsEl.replaceChildren(common.el('div', { class: 'props' },
        common.el('h2', { text: sel.length + ' selected' }),
        common.el('p', { class: 'hint', text: 'Connect (C) joins the selected nodes one after another, in the order you selected them (Ctrl+A: list order), skipping pairs already connected and any edge that would close a cycle. Delete removes them. Ctrl+C / Ctrl+V copies and pastes them, across tabs too. Each is one undo step.' }),
        common.el('button', { type: 'button', id: 'btn-extract', title: 'Extract to sub-chain (E)', text: 'Extract to sub-chain…' }))); // extract.js
      return;
    } else {
      if (propsEl.dataset.initial === 'chain') {
        // the page came with the chain's properties: nothing to fetch
        delete propsEl.dataset.initial;
        return;
      }
      const c = Object.assign({}, ed.doc, { nodes: [], edges: [] });
      body = { chain: c, node_ids: ed.nodeIds() };
    }
    delete propsEl.dataset.initial;
    performance.mark('studio:props-start');
    let html;
    try {
      ({ html } = await api.html('POST', '/fragments/props', body));
    } catch (e) {
      html = e.body || ''; // the route's error fragment
    }
    performance.mark('studio:props-fetched');
    if (seq !== propsSeq) return; // a newer selection won
    const kept = keepFocus();
    propsEl.innerHTML = html;
    forms.mount(propsEl); // forms from schemas (forms.js)
    performance.mark('studio:props-html');
    if (window.htmx) window.htmx.process(propsEl);
    kept();
    if (ed.focusPropsNext) {
      ed.focusPropsNext = false;
      const f = propsEl.querySelector('input:not([type=hidden]):not([disabled]), select, textarea');
      if (f) f.focus();
    }
  }
  ed.showProps = showProps;
  ed.scheduleProps = common.debounce(showProps, 30);
  // an agent node named or defined in place has another form: drawn anew
  // once the change is saved into the document (the focus stays on the picker)
  propsEl.addEventListener('change', (e) => { if (e.target.id === 'agent-select') ed.scheduleProps(); });

  // Save as agent: the agent this node defines is stored under a name
  // (POST /v1/agents with the node, checked as the runtime will), and the
  // node names it from then on, its settings dropped: one undo step.
  propsEl.addEventListener('click', async (e) => {
    if (!(e.target instanceof Element) || e.target.id !== 'save-agent-button') return;
    const panel = propsEl.querySelector('.props[data-target="node"]');
    const n = panel && ed.nodeById(panel.dataset.id);
    const status = propsEl.querySelector('#save-agent-status');
    if (!n || !status) return;
    const name = propsEl.querySelector('#save-agent-name').value.trim();
    const description = propsEl.querySelector('#save-agent-description').value.trim();
    status.classList.remove('login-error');
    status.textContent = 'Saving…';
    try {
      const saved = await api.post('/v1/agents', { name, description, node: n, message: 'saved from node ' + n.node_id + ' of ' + (ed.doc.name || 'a chain') });
      ed.mutate(() => {
        n.name = saved.name;
        n.config = {};
        ed.refreshNode(n.node_id);
      });
      await showProps();
      const sel = propsEl.querySelector('#agent-select');
      if (sel) sel.focus();
      ed.flash(`Saved as agent ${saved.name} (version ${saved.version}); this node now uses it.`);
    } catch (err) {
      status.classList.add('login-error');
      status.setAttribute('role', 'alert');
      status.textContent = err.message;
    }
  });

  // keepFocus notes the panel field that has the focus before the panel is
  // redrawn and returns the function that gives it back afterwards, to the
  // same field of the new panel, with what was typed there since the panel
  // was asked for and the caret where it was. Without it the focus fell to
  // the page at each redraw (after a rename, say) and the next keys went to
  // the canvas's shortcuts. A panel for another element keeps the focus in
  // the properties section.
  const FOCUSABLE = 'input:not([type=hidden]), select, textarea, button, summary, [tabindex]';
  function keepFocus() {
    const a = document.activeElement;
    if (!a || a === propsEl || !propsEl.contains(a)) return () => {};
    const old = propsEl.querySelector('.props');
    const same = (p) => old && p && p.dataset.target === old.dataset.target && p.dataset.id === old.dataset.id;
    const f = fieldOf(a);
    const i = [...propsEl.querySelectorAll(FOCUSABLE)].filter((el) => fieldOf(el) === f).indexOf(a);
    const text = a.matches('input[type=text], input[type=number], input:not([type]), textarea');
    const value = text ? a.value : null;
    let range = null;
    try { range = text ? [a.selectionStart, a.selectionEnd] : null; } catch { /* a number field has no caret */ }
    return () => {
      const el = same(propsEl.querySelector('.props')) && i >= 0 ? [...propsEl.querySelectorAll(FOCUSABLE)].filter((x) => fieldOf(x) === f)[i] : null;
      if (!el || el.disabled) { propsEl.focus({ preventScroll: true }); return; }
      if (text && el.value !== value) el.value = value;
      el.focus({ preventScroll: true });
      if (range) { try { el.setSelectionRange(range[0], range[1]); } catch { /* no caret */ } }
    };
  }

  function readValue(el) {
    const t = el.dataset.t;
    switch (t) {
      case 'bool': return el.checked ? true : undefined;
      case 'num': { const v = parseFloat(el.value); return Number.isFinite(v) ? v : undefined; }
      case 'int': { const v = parseInt(el.value, 10); return Number.isFinite(v) ? v : undefined; }
      case 'json': {
        if (el.value.trim() === '') return undefined;
        try { el.classList.remove('invalid'); el.removeAttribute('aria-invalid'); return JSON.parse(el.value); } catch { el.classList.add('invalid'); el.setAttribute('aria-invalid', 'true'); return INVALID; }
      }
      case 'kv': case 'kvjson': {
        const o = {};
        for (const row of el.querySelectorAll(':scope > .kv-rows > .kv-row')) {
          const k = row.querySelector('.k').value.trim();
          const vEl = row.querySelector('.v-wrap input');
          if (!k) continue;
          let v = vEl.value;
          if (t === 'kvjson') { try { v = JSON.parse(v); } catch { /* text */ } }
          o[k] = v;
        }
        return Object.keys(o).length ? o : undefined;
      }
      case 'form': { // forms from schemas (forms.js)
        const v = forms.read(el);
        return v === forms.INVALID ? INVALID : v;
      }
      case 'cases': {
        const out = [];
        for (const row of el.querySelectorAll(':scope > .kv-rows > .kv-row')) {
          out.push({ handle: row.querySelector('.k').value.trim(), when: row.querySelector('.v-wrap input').value });
        }
        return out.length ? out : undefined;
      }
      case 'list': {
        const out = [...el.querySelectorAll('input[type=checkbox]:checked')].map((c) => c.value);
        return out.length ? out : undefined;
      }
      default: return el.value === '' ? undefined : el.value;
    }
  }
  const INVALID = Symbol('invalid');

  function setPath(obj, path, v) {
    const parts = path.split('.');
    let o = obj;
    for (let i = 0; i < parts.length - 1; i++) {
      if (v === undefined && (o[parts[i]] == null)) return;
      if (o[parts[i]] == null || typeof o[parts[i]] !== 'object') o[parts[i]] = {};
      o = o[parts[i]];
    }
    const last = parts[parts.length - 1];
    if (v === undefined) delete o[last]; else o[last] = v;
    // drop emptied parents (retry, config)
    if (parts.length > 1 && v === undefined) {
      const parent = parts.slice(0, -1).reduce((a, k) => (a ? a[k] : a), obj);
      if (parent && typeof parent === 'object' && Object.keys(parent).length === 0) delete obj[parts[0]];
    }
  }

  let lastPropField = ''; // the field the last edit typed in: its undo step goes on
  ed.newPropStep = () => { lastPropField = ''; };
  // fieldOf names the field an element edits (a key/value row counts as its field).
  function fieldOf(el) {
    const f = el.closest('[data-path], [data-f]'); // data-path: a schema form's field (forms.js)
    return f ? f.dataset.path || f.dataset.f : '';
  }
  function applyProps(source) {
    const panel = propsEl.querySelector('.props');
    if (!panel) return;
    const target = panel.dataset.target;
    let obj;
    if (target === 'node') obj = ed.nodeById(panel.dataset.id);
    else if (target === 'edge') obj = ed.edgeById(panel.dataset.id);
    else if (target === 'chain') obj = ed.doc;
    if (!obj) return;
    const fields = [...panel.querySelectorAll('[data-f]')].filter((el) => el.dataset.f && el.dataset.t !== 'id');
    const values = [];
    for (const el of fields) {
      const v = readValue(el);
      if (v === INVALID) continue;
      values.push([el.dataset.f, v]);
    }
    // one undo step per field edited: typing a name letter by letter is one
    // action; a new field (or a select, a checkbox, a row) is the next one
    const fieldKey = (target === 'node' ? obj.node_id : target === 'edge' ? obj.id : '') + '|' + (source === 'input' && document.activeElement ? fieldOf(document.activeElement) : Math.random());
    const cp = fieldKey !== lastPropField;
    lastPropField = source === 'input' ? fieldKey : '';
    // what a node receives depends on its input and input map only: typing
    // its label asks the server nothing (on a large chain that request and
    // its answer cost more than the save)
    const receivesOf = () => (target === 'node' ? JSON.stringify([obj.kind, obj.input, obj.input_map]) : '');
    const before = receivesOf();
    ed.mutate(() => {
      for (const [f, v] of values) setPath(obj, f, v);
      if (target === 'chain' && !ed.doc.name) ed.doc.name = 'untitled';
      if (target === 'node') ed.refreshNode(obj.node_id);
      if (target === 'edge') ed.refreshEdge(obj.id);
      if (target === 'chain') { ed.$('chain-title').textContent = ed.doc.name; ed.$('chain-title').title = ed.doc.name; }
    }, { noCheckpoint: !cp });
    if (target === 'node' && receivesOf() !== before) refreshReceives();
  }

  // ---- renaming a node -------------------------------------------------------

  function showIdProblem(input, msg) {
    const label = input.closest('label') || input;
    let el = label.parentElement.querySelector('#node-id-error');
    if (!msg) {
      if (el) el.remove();
      input.removeAttribute('aria-invalid');
      return;
    }
    if (!el) {
      el = common.el('p', { id: 'node-id-error', class: 'expr-err', role: 'alert' });
      label.after(el);
    }
    el.textContent = msg;
    input.setAttribute('aria-invalid', 'true');
    input.setAttribute('aria-describedby', 'node-id-error');
  }

  function renameNode(input) {
    const panel = input.closest('.props');
    const old = panel.dataset.id;
    const id = input.value.trim();
    if (id === old) { showIdProblem(input, ''); return; }
    const problem = idProblem(ed.doc, id, old);
    // the typed id stays in the field with the reason beside it; nothing changes
    showIdProblem(input, problem);
    if (problem) return;
    // the panel edits the node under its new id from now on: a label typed
    // before the panel is redrawn goes to the renamed node
    panel.dataset.id = id;
    ed.mutate(() => {
      rename(ed.doc, old, id);
      const cy = ed.cy;
      cy.batch(() => {
        cy.$(':selected').unselect();
        cy.elements().remove();
        cy.add(canvas.elements(ed.doc, { pins: true }));
        cy.getElementById(id).select();
      });
    });
  }

  propsEl.addEventListener('input', (e) => {
    if (e.target.dataset.t === 'id') {
      // say at once when the id being typed is taken or not allowed
      const panel = e.target.closest('.props');
      const id = e.target.value.trim();
      showIdProblem(e.target, id === panel.dataset.id ? '' : idProblem(ed.doc, id, panel.dataset.id));
      return;
    }
    if (e.target.matches('input[type=text], input[type=number], textarea, input.k, .v-wrap input')) applyProps('input');
  });
  propsEl.addEventListener('focusout', () => { lastPropField = ''; });
  propsEl.addEventListener('change', (e) => {
    if (e.target.dataset.t === 'id') { renameNode(e.target); return; }
    if (e.target.id === 'tool-select') carryData(e.target);
    if (e.target.matches('select, input[type=checkbox]')) applyProps('change');
  });

  // carryData keeps data flowing through a node that gets a tool with a
  // static input (delay's ms, transform's expression), which would
  // otherwise stop receiving what came before: when the node has
  // something upstream (an incoming edge, or a map owning it), the tool's
  // data field (its schema's x-data-field) gets an input_map row reading
  // `output`, in the same undo step as the tool. The row is visible and the
  // user may remove it; a row already there for that key is left alone.
  function carryData(sel) {
    const panel = sel.closest('.props[data-target="node"]');
    const n = panel && ed.nodeById(panel.dataset.id);
    const opt = sel.selectedOptions[0];
    const schema = opt ? forms.parseSchema(opt.dataset.schema || '') : null;
    const field = schema && schema['x-data-field'];
    if (!n || typeof field !== 'string' || !field) return;
    const fed = (ed.doc.edges || []).some((e) => e.target === n.node_id) || ed.doc.nodes.some((x) => x.map_node === n.node_id);
    const fs = panel.querySelector('fieldset[data-f="input_map"]');
    if (!fed || !fs || [...fs.querySelectorAll(':scope > .kv-rows > .kv-row input.k')].some((k) => k.value.trim() === field)) return;
    const row = fs.querySelector(':scope > template').content.firstElementChild.cloneNode(true);
    row.querySelector('input.k').value = field;
    row.querySelector('.v-wrap input, .v-wrap textarea').value = 'output';
    fs.querySelector(':scope > .kv-rows').append(row);
    if (window.htmx) window.htmx.process(row);
    forms.refreshMapped(panel);
  }
  propsEl.addEventListener('click', (e) => {
    const add = e.target.closest('.add-row');
    if (add) {
      const fs = add.closest('fieldset');
      const tpl = fs.querySelector(':scope > template');
      const row = tpl.content.firstElementChild.cloneNode(true);
      fs.querySelector(':scope > .kv-rows').append(row);
      if (window.htmx) window.htmx.process(row);
      row.querySelector('input').focus();
      return;
    }
    const rm = e.target.closest('.remove-row');
    if (rm) {
      // the focus stays in the table: the next row's remove button, else
      // the previous row's, else the table's add button
      const row = rm.closest('.kv-row');
      const fs = row.closest('fieldset');
      const i = [...row.parentElement.children].indexOf(row);
      row.remove();
      applyProps('change');
      const left = fs.querySelectorAll(':scope > .kv-rows > .kv-row');
      const to = left[i] || left[i - 1];
      const target = to ? to.querySelector('.remove-row') : fs.querySelector(':scope > .add-row');
      if (target) target.focus();
    }
  });
}
