// The designer. The page keeps the chain document (what the canvas needs);
// every edit is sent to the server, which saves it as a new version and
// answers with the validation panel (HTML). Undo/redo keep snapshots of the
// document.
import * as api from './api.js';
import * as canvas from './canvas.js';
import * as common from './common.js';
import * as forms from './forms.js';
import { SavedCopy } from './patch.js';
import { UndoHistory } from './undo.js';

// hooks are what the editor's add-ons lend it: navigate.js sets pickTarget
// (connect one selected node to a node picked by name).
export const hooks = { pickTarget: null };

// whenReady runs fn once the editor has drawn its chain (studio:ready), or
// at once when it has already: an add-on module may run after that.
export function whenReady(fn) {
  const root = document.getElementById('editor');
  if (!root) return;
  if (root.dataset.ready === '1') fn();
  else root.addEventListener('studio:ready', fn, { once: true });
}

(function () {
  const root = document.getElementById('editor');
  if (!root) return;
  const chainId = root.dataset.chainId;
  let version = Number(root.dataset.version);

  const $ = (id) => document.getElementById(id);
  const propsEl = $('props');
  const issuesEl = $('issues');
  const saveStateEl = $('save-state');
  const runBtn = $('btn-run');

  let doc = null;
  let cy = null;
  let eh = null;
  let saving = false;
  let saveAgain = false;
  let conflict = false;
  let selOrder = [];
  let rtts = [];
  const saveSteps = [];
  window.__studio = { rtts, saveSteps, get doc() { return doc; }, get cy() { return cy; }, get version() { return version; }, edit: (fn) => mutate(fn) };

  // ---- document helpers -------------------------------------------------

  const nodeById = (id) => doc.nodes.find((n) => n.node_id === id);
  const edgeById = (id) => doc.edges.find((e) => e.id === id);
  const nodeIds = () => doc.nodes.map((n) => n.node_id);

  function uniqueNodeId(base) {
    const taken = new Set(nodeIds());
    base = base.replace(/[^A-Za-z0-9_-]+/g, '_') || 'node';
    if (!taken.has(base) && !/^(input|state|node_results|output|steps|item|index|resume|error|trigger|when|chain|run)$/.test(base)) return base;
    for (let i = 2; ; i++) if (!taken.has(base + '_' + i)) return base + '_' + i;
  }

  function uniqueEdgeId(src, dst) {
    const taken = new Set(doc.edges.map((e) => e.id));
    const base = src + '->' + dst;
    if (!taken.has(base)) return base;
    for (let i = 2; ; i++) if (!taken.has(base + '#' + i)) return base + '#' + i;
  }

  // ---- undo / redo --------------------------------------------------------

  const undoHistory = new UndoHistory();

  function checkpoint() {
    undoHistory.record(doc);
    updateUndoButtons();
  }

  function updateUndoButtons() {
    $('btn-undo').disabled = !undoHistory.canUndo;
    $('btn-redo').disabled = !undoHistory.canRedo;
  }

  function undo() {
    lastPropField = '';
    const d = undoHistory.undo(doc);
    if (!d) return;
    doc = d;
    rebuild();
    changed();
    updateUndoButtons();
  }

  function redo() {
    lastPropField = '';
    const d = undoHistory.redo(doc);
    if (!d) return;
    doc = d;
    rebuild();
    changed();
    updateUndoButtons();
  }

  // mutate applies one user edit: snapshot for undo, change, save.
  function mutate(fn, opts) {
    // an edit changes the document the canvas is loading from: finish first
    canvas.loadAll(cy);
    if (!opts || !opts.noCheckpoint) checkpoint();
    fn();
    changed();
  }

  function changed() {
    scheduleNodeTable();
    scheduleSaveWrapper();
  }

  // ---- saving and validation -----------------------------------------------

  // The texts are short on purpose: the state keeps one width (app.css) so
  // the toolbar never wraps mid-edit (see .save-state).
  function setSaveState(state, text, title) {
    saveStateEl.dataset.state = state;
    saveStateEl.textContent = text;
    if (title) saveStateEl.title = title;
    else saveStateEl.removeAttribute('title');
  }

  const scheduleSave = common.debounce(() => save(), 300);
  // A viewer may look and try things, but the server refuses
  // saves: say so instead of sending them.
  const readOnly = document.body.dataset.canEdit === 'no';
  function scheduleSaveWrapper() {
    if (conflict) return;
    if (readOnly) { setSaveState('readonly', 'Read only', 'Your role cannot save: changes here are not kept'); return; }
    setSaveState('pending', 'Unsaved…', 'Unsaved changes: saved in a moment');
    scheduleSave();
  }

  // ---- patches: a save sends only the nodes and edges that changed ----------
  //
  // saved is what the server holds at `version` (patch.js); a save sends the
  // patch from it, or the whole document when the diff cannot say it or the
  // server refuses the patch.
  let marked = new Set(); // ids of the elements markIssues gave a marker
  const saved = new SavedCopy();

  // save sends the edits; full (after a refused patch) sends the whole
  // document, timed from t0, when the first attempt started.
  async function save(full, t0) {
    if (conflict) return;
    if (saving) { saveAgain = true; return; }
    saving = true;
    setSaveState('saving', 'Saving…');
    t0 = t0 || performance.now();
    let retryFull = false;
    try {
      const d = full ? null : saved.diff(doc);
      const text = d ? null : JSON.stringify(doc);
      const body = d ? JSON.stringify({ base_version: version, patch: d.patch }) : '{"base_version":' + version + ',"doc":' + text + '}';
      const next = d ? d.next : null;
      const tSent = performance.now();
      const res = await api.request('POST', '/chains/' + encodeURIComponent(chainId) + '/save', { body, accept: 'html' });
      const html = await res.text();
      const tBack = performance.now();
      const state = res.headers.get('X-Save-State');
      if (state === 'patch_refused') {
        saved.forget(); // the server's copy is not what this page thinks: send it all
        retryFull = true;
      } else if (state === 'saved') {
        // what the server now holds; the full form keeps the text to diff later
        if (next) saved.took(next);
        else saved.fromText(text, false);
        version = Number(res.headers.get('X-Chain-Version'));
        root.dataset.version = String(version);
        issuesEl.innerHTML = html;
        markIssues();
        // an edit made while this save was in flight is not saved yet: say so
        if (saveAgain || scheduleSave.pending()) setSaveState('pending', 'Unsaved…', 'Unsaved changes: saved in a moment');
        else setSaveState('saved', 'Saved v' + version);
        root.dispatchEvent(new CustomEvent('studio:saved', { detail: { version } })); // tests.js runs the tests
        // where the time went, for the browser suite's figures
        saveSteps.push({ form: d ? 'patch' : 'full', bytes: body.length, diff: tSent - t0, request: tBack - tSent,
          server: res.headers.get('Server-Timing') || '', after: performance.now() - tBack });
        if (saveSteps.length > 100) saveSteps.shift();
      } else if (state === 'conflict') {
        conflict = true;
        $('conflict').hidden = false;
        $('conflict-text').textContent = 'Another tab saved this chain first (it is at v' + res.headers.get('X-Chain-Version') + '). Your last change was not saved; nothing was overwritten.';
        setSaveState('conflict', 'Conflict');
      } else if (state === 'name_taken') {
        issuesEl.innerHTML = html;
        setSaveState('error', 'Not saved: name taken');
      } else {
        issuesEl.innerHTML = html;
        markIssues();
        setSaveState('error', 'Not saved: invalid');
      }
    } catch (err) {
      if (err.status === 403) setSaveState('error', 'Not saved: your role cannot edit chains');
      else if (err.status) setSaveState('error', 'Not saved: ' + err.status);
      else setSaveState('error', 'Not saved: ' + err.message);
    } finally {
      saving = false;
    }
    if (retryFull) return save(true, t0);
    {
      const rtt = performance.now() - t0;
      rtts.push(rtt);
      root.dataset.rtt = rtt.toFixed(1);
      root.dataset.saves = String(rtts.length);
    }
    if (saveAgain) { saveAgain = false; save(); }
  }

  // flush saves now if an edit is waiting, and waits for saving to finish.
  async function flush() {
    if (scheduleSave.pending()) { scheduleSave.cancel(); await save(); }
    while (saving) await new Promise((r) => setTimeout(r, 20));
  }

  function markIssues() {
    const body = issuesEl.querySelector('#issues-body');
    const errors = body ? Number(body.dataset.errors) : 0;
    // Only the elements whose marker changes are touched: restyling every
    // marked node of a large chain after each save costs a frame or more.
    const want = new Map();
    for (const b of issuesEl.querySelectorAll('.issue-link')) {
      const id = b.dataset.nodeId || b.dataset.edgeId;
      if (!id) continue;
      if (b.dataset.severity === 'error') want.set(id, 'issue-error');
      else if (!want.has(id)) want.set(id, 'issue-warning');
    }
    cy.batch(() => {
      for (const id of marked) {
        if (want.has(id)) continue;
        cy.getElementById(id).removeClass('issue-error issue-warning');
      }
      for (const [id, cls] of want) {
        const ele = cy.getElementById(id);
        if (ele.empty() || ele.hasClass(cls)) continue;
        ele.removeClass('issue-error issue-warning').addClass(cls);
      }
    });
    marked = new Set(want.keys());
    const why = errors > 0 ? 'Cannot run: fix ' + errors + (errors === 1 ? ' error' : ' errors') + ' first (see Validation)' : 'Run the saved chain';
    runBtn.disabled = errors > 0;
    runBtn.title = why;
    $('run-why').textContent = why;
  }

  // ---- canvas ------------------------------------------------------------

  function rebuild() {
    canvas.stopLoading(cy); // everything is redrawn from the document below
    const selected = new Set(cy.$(':selected').map((e) => e.id()));
    hideHandle();
    cy.batch(() => {
      cy.elements().remove();
      cy.add(canvas.elements(doc));
      for (const id of selected) cy.getElementById(id).select();
    });
    markIssues();
    showProps();
    root.dispatchEvent(new CustomEvent('studio:rebuilt')); // notes.js redraws the notes
  }

  function refreshNode(id) {
    const n = nodeById(id);
    const ele = cy.getElementById(id);
    if (!n || ele.empty()) return;
    ele.data('display', canvas.nodeDisplay(n));
    ele.data('kind', n.kind);
    refreshAttach(n);
  }

  // refreshAttach redraws a node's attachment links (map body, branches,
  // error handler): its own links only, found from the node, not by a scan
  // of every edge of the chain.
  function refreshAttach(n) {
    const ele = cy.getElementById(n.node_id);
    const old = ele.connectedEdges('.attach').filter((e) => e.data('owner') === n.node_id);
    const links = canvas.attachLinks(n, { has: (id) => cy.getElementById(id).nonempty() || !!nodeById(id) });
    if (old.empty() && !links.length) return;
    cy.batch(() => {
      old.remove();
      cy.add(links.filter((l) => cy.getElementById(l.data.target).nonempty()));
    });
  }

  function refreshEdge(id) {
    const e = edgeById(id);
    let ele = cy.getElementById(id);
    if (!e || ele.empty()) return;
    if (ele.data('source') !== e.source || ele.data('target') !== e.target) {
      if (cy.getElementById(e.source).empty() || cy.getElementById(e.target).empty()) return;
      const wasSelected = ele.selected();
      ele = ele.move({ source: e.source, target: e.target });
      if (wasSelected) ele.select();
    }
    ele.data('text', canvas.edgeText(e));
    ele.classes(canvas.edgeClasses(e) + (ele.hasClass('issue-error') ? ' issue-error' : '') + (ele.hasClass('issue-warning') ? ' issue-warning' : ''));
  }

  const DEFAULTS = {
    tool: () => ({ name: 'echo' }),
    branch: () => ({ condition: '' }),
    condition: () => ({ cases: [{ handle: 'yes', when: '' }] }),
    map: () => ({ items_path: 'input.items' }),
    interrupt: () => ({ config: { prompt: 'Approve?' } }),
    proc: () => ({ config: { argv: [] } }),
  };

  function addNode(kind, pos) {
    const id = uniqueNodeId(kind);
    const n = Object.assign({ node_id: id, kind }, DEFAULTS[kind] ? DEFAULTS[kind]() : {});
    if (!pos) pos = freeSpot();
    n.position = { x: Math.round(pos.x), y: Math.round(pos.y) };
    mutate(() => {
      doc.nodes.push(n);
      cy.add(canvas.nodeElement(n));
    });
    cy.$(':selected').unselect();
    cy.getElementById(id).select();
    focusPropsNext = true; // the new node's fields come next
    return id;
  }
  let focusPropsNext = false;

  // freeSpot finds a place near the middle of the view that no node covers.
  function freeSpot() {
    const ext = cy.extent();
    const cx = (ext.x1 + ext.x2) / 2, cy0 = (ext.y1 + ext.y2) / 2;
    const busy = (x, y) => doc.nodes.some((n) => n.position && Math.abs(n.position.x - x) < 180 && Math.abs(n.position.y - y) < 80);
    for (let ring = 0; ring < 12; ring++) {
      for (let k = 0; k <= ring * 2; k++) {
        const cands = [[cx + ring * 200, cy0 + (k - ring) * 90], [cx + (k - ring) * 200, cy0 + ring * 90]];
        for (const [x, y] of cands) if (!busy(x, y)) return { x, y };
      }
    }
    return { x: cx, y: cy0 };
  }

  // newEdge makes the edge src → dst as the designer draws it (a branch's
  // first edge is labelled true, its second false; a condition's take its
  // free case handles), or returns null with the reason it is not drawn:
  // never a self-loop, never a second edge between the same two nodes.
  // edges is the document's edges plus any planned in the same action.
  function newEdge(src, dst, edges) {
    if (src === dst) return { why: 'self' };
    if (edges.some((e) => e.source === src && e.target === dst)) return { why: 'dup' };
    const taken = new Set(edges.map((x) => x.id));
    let id = src + '->' + dst;
    for (let i = 2; taken.has(id); i++) id = src + '->' + dst + '#' + i;
    const e = { id, source: src, target: dst };
    const s = nodeById(src);
    const used = new Set(edges.filter((x) => x.source === src).map((x) => x.label));
    if (s && s.kind === 'branch') {
      if (!used.has('true')) e.label = 'true';
      else if (!used.has('false')) e.label = 'false';
    } else if (s && s.kind === 'condition') {
      const free = (s.cases || []).map((c) => c.handle).filter((h) => h && !used.has(h));
      if (free.length) e.label = free[0];
      else if (!used.has('default')) e.label = 'default';
    }
    return { edge: e };
  }

  // reaches reports whether dst can be reached from src along edges.
  function reaches(edges, src, dst) {
    const out = new Map();
    for (const e of edges) {
      if (!out.has(e.source)) out.set(e.source, []);
      out.get(e.source).push(e.target);
    }
    const seen = new Set([src]);
    const stack = [src];
    while (stack.length) {
      const n = stack.pop();
      if (n === dst) return true;
      for (const m of out.get(n) || []) if (!seen.has(m)) { seen.add(m); stack.push(m); }
    }
    return false;
  }

  // addEdge is one drawn edge (a drag from a node's handle). Drawing back to
  // an earlier node is allowed here: that is how a loop is made on purpose.
  function addEdge(src, dst) {
    const r = newEdge(src, dst, doc.edges);
    if (!r.edge) {
      if (r.why === 'dup') flash(src + ' → ' + dst + ' is already connected.');
      return null;
    }
    mutate(() => {
      doc.edges.push(r.edge);
      cy.add(canvas.edgeElement(r.edge));
    });
    return r.edge.id;
  }

  function deleteSelection() {
    const sel = cy.$(':selected').not('.eh-handle');
    if (sel.empty()) return;
    const nodes = new Set(sel.nodes().map((n) => n.id()));
    const edges = new Set(sel.edges().not('.attach').map((e) => e.id()));
    mutate(() => {
      doc.nodes = doc.nodes.filter((n) => !nodes.has(n.node_id));
      doc.edges = doc.edges.filter((e) => !edges.has(e.id) && !nodes.has(e.source) && !nodes.has(e.target));
      for (const n of doc.nodes) {
        if (nodes.has(n.map_node)) delete n.map_node;
        if (n.branches) n.branches = n.branches.filter((b) => !nodes.has(b));
        if (nodes.has(n.on_error)) delete n.on_error;
      }
      if (nodes.has(doc.entry_node)) delete doc.entry_node;
      hideHandle();
      cy.batch(() => sel.remove());
      cy.batch(() => { for (const n of doc.nodes) refreshAttach(n); });
    });
    selOrder = [];
    showProps();
  }

  // connectSelected joins the selected nodes as a path, in the order they
  // were selected (Ctrl+A: document order), as ONE undo step. A pair already
  // connected (either way round) is skipped, and so is a pair whose edge
  // would close a cycle: a loop needs max_iterations, so it is drawn by hand.
  function connectSelected() {
    const sel = cy.nodes(':selected').not('.eh-handle');
    const ordered = selOrder.filter((id) => sel.some((n) => n.id() === id));
    const rest = doc.nodes.map((n) => n.node_id).filter((id) => !ordered.includes(id) && cy.getElementById(id).selected());
    const ids = ordered.concat(rest);
    // canvas navigation: one node selected picks the target by name
    if (ids.length === 1 && hooks.pickTarget) { hooks.pickTarget(ids[0]); return; }
    if (ids.length < 2) {
      flash('Select two or more nodes (in order) to connect them.');
      return;
    }
    const planned = [];
    const skipped = { dup: 0, cycle: 0 };
    const all = doc.edges.slice();
    for (let i = 0; i + 1 < ids.length; i++) {
      const src = ids[i], dst = ids[i + 1];
      if (all.some((e) => (e.source === dst && e.target === src))) { skipped.dup++; continue; }
      const r = newEdge(src, dst, all);
      if (!r.edge) { skipped.dup++; continue; }
      if (reaches(all, dst, src)) { skipped.cycle++; continue; }
      all.push(r.edge);
      planned.push(r.edge);
    }
    const parts = [planned.length ? 'Connected ' + planned.length + (planned.length === 1 ? ' pair' : ' pairs') : 'Nothing new to connect'];
    if (skipped.dup) parts.push(skipped.dup + ' already connected');
    if (skipped.cycle) parts.push(skipped.cycle + ' would close a cycle (draw a loop edge by hand and give it max iterations)');
    flash(parts.join('; ') + '.');
    if (!planned.length) return;
    mutate(() => {
      doc.edges.push(...planned);
      cy.batch(() => { for (const e of planned) cy.add(canvas.edgeElement(e)); });
    });
  }

  function flash(msg) {
    let f = $('flash');
    if (!f) {
      f = common.el('div', { id: 'flash', class: 'flash', role: 'status' });
      root.append(f);
    }
    f.textContent = msg;
    f.hidden = false;
    clearTimeout(flash.t);
    flash.t = setTimeout(() => { f.hidden = true; }, 3000);
  }

  // ---- edge drawing: a handle on the hovered node ------------------------------

  let handle = null;
  let handleOwner = null;
  let drawing = false;

  function placeHandle(n) {
    if (drawing || n.hasClass('eh-handle')) return;
    if (!handle || handle.removed()) {
      handle = cy.add({ group: 'nodes', data: { id: '__handle__' }, classes: 'eh-handle', selectable: false, grabbable: false });
    }
    handleOwner = n;
    const bb = n.boundingBox({ includeLabels: false, includeOverlays: false });
    handle.position({ x: bb.x2 + 4, y: n.position('y') });
    handle.style('display', 'element');
  }

  function hideHandle() {
    if (handle && !handle.removed()) handle.style('display', 'none');
    handleOwner = null;
  }

  // ---- copy / paste --------------------------------------------------------

  function copySelection() {
    const nodes = new Set(cy.$('node:selected').not('.eh-handle').map((n) => n.id()));
    if (!nodes.size) return null;
    return JSON.stringify({
      name: 'clipboard',
      nodes: doc.nodes.filter((n) => nodes.has(n.node_id)),
      edges: doc.edges.filter((e) => nodes.has(e.source) && nodes.has(e.target)),
    });
  }

  function paste(text) {
    let data;
    try { data = JSON.parse(text); } catch { return false; }
    if (!data || !Array.isArray(data.nodes) || !data.nodes.length) return false;
    const rename = new Map();
    const newNodes = [];
    const taken = new Set(nodeIds());
    for (const src of data.nodes) {
      if (!src || typeof src.node_id !== 'string') continue;
      const n = JSON.parse(JSON.stringify(src));
      let id = n.node_id;
      if (taken.has(id)) id = uniqueNodeIdAvoid(id, taken);
      taken.add(id);
      rename.set(n.node_id, id);
      n.node_id = id;
      if (n.position) n.position = { x: n.position.x + 40, y: n.position.y + 40 };
      newNodes.push(n);
    }
    const ref = (id) => (rename.has(id) ? rename.get(id) : undefined);
    for (const n of newNodes) {
      if (n.map_node) { const r = ref(n.map_node); if (r) n.map_node = r; else delete n.map_node; }
      if (n.branches) n.branches = n.branches.map(ref).filter(Boolean);
      if (n.on_error && rename.has(n.on_error)) n.on_error = rename.get(n.on_error);
    }
    mutate(() => {
      doc.nodes.push(...newNodes);
      const edges = [];
      for (const e of data.edges || []) {
        const s = ref(e.source), t = ref(e.target);
        if (!s || !t) continue;
        const ne = Object.assign({}, e, { source: s, target: t });
        ne.id = uniqueEdgeId(s, t);
        doc.edges.push(ne);
        edges.push(ne);
      }
      const ids = new Set(nodeIds());
      cy.batch(() => {
        cy.$(':selected').unselect();
        for (const n of newNodes) cy.add(canvas.nodeElement(n)).select();
        for (const e of edges) cy.add(canvas.edgeElement(e));
        for (const n of newNodes) cy.add(canvas.attachLinks(n, ids));
      });
    });
    return true;
  }

  function uniqueNodeIdAvoid(base, taken) {
    for (let i = 2; ; i++) {
      const id = base.replace(/_\d+$/, '') + '_' + i;
      if (!taken.has(id)) return id;
    }
  }

  // ---- property panel --------------------------------------------------------

  // A node's panel request carries what the engine needs to say what the
  // node will receive: its incoming edges and the nodes that may own it
  // (map, parallel, error handler).
  function nodePropsBody(n) {
    const inEdges = (doc.edges || []).filter((e) => e.target === n.node_id);
    const srcs = new Set(inEdges.map((e) => e.source));
    const nodes = doc.nodes.filter((x) => x.map_node || x.branches || x.on_error || srcs.has(x.node_id))
      .map((x) => ({ node_id: x.node_id, kind: x.kind, map_node: x.map_node, branches: x.branches, on_error: x.on_error }));
    return { node: n, node_ids: nodeIds(), doc: { name: doc.name || 'x', nodes, edges: inEdges } };
  }
  // editing a node's input or input map changes what it receives: redraw
  // that block only (the fields being typed in stay as they are)
  const refreshReceives = common.debounce(async () => {
    const panel = propsEl.querySelector('.props[data-target="node"]');
    const n = panel && nodeById(panel.dataset.id);
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
    const sel = cy.$(':selected').not('.eh-handle');
    let body;
    if (sel.length === 1 && sel.isNode()) {
      const n = nodeById(sel.id());
      if (!n) return;
      body = nodePropsBody(n);
    } else if (sel.length === 1 && sel.isEdge() && !sel.hasClass('attach')) {
      const e = edgeById(sel.id());
      if (!e) return;
      const s = nodeById(e.source);
      const handles = s && s.kind === 'branch' ? ['true', 'false', 'default'] : s && s.kind === 'condition' ? (s.cases || []).map((c) => c.handle).concat(['default']) : [];
      body = { edge: e, node_ids: nodeIds(), source_kind: s ? s.kind : '', handles };
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
      const c = Object.assign({}, doc, { nodes: [], edges: [] });
      body = { chain: c, node_ids: nodeIds() };
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
    if (focusPropsNext) {
      focusPropsNext = false;
      const f = propsEl.querySelector('input:not([type=hidden]):not([disabled]), select, textarea');
      if (f) f.focus();
    }
  }
  const scheduleProps = common.debounce(showProps, 30);

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

  let lastPropField = '';
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
    if (target === 'node') obj = nodeById(panel.dataset.id);
    else if (target === 'edge') obj = edgeById(panel.dataset.id);
    else if (target === 'chain') obj = doc;
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
    mutate(() => {
      for (const [f, v] of values) setPath(obj, f, v);
      if (target === 'chain' && !doc.name) doc.name = 'untitled';
      if (target === 'node') refreshNode(obj.node_id);
      if (target === 'edge') refreshEdge(obj.id);
      if (target === 'chain') $('chain-title').textContent = doc.name;
    }, { noCheckpoint: !cp });
    if (target === 'node' && receivesOf() !== before) refreshReceives();
  }

  // ---- renaming a node -------------------------------------------------------

  const RESERVED = ['input', 'state', 'node_results', 'output', 'steps', 'item', 'index', 'resume', 'error', 'trigger', 'when', 'chain', 'run'];
  const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

  // idProblem says why id cannot be a node's new id, or ''.
  function idProblem(id, old) {
    if (!id) return 'A node needs an id.';
    if (id !== old && nodeById(id)) return 'Another node already has the id “' + id + '”.';
    if (RESERVED.includes(id)) return '“' + id + '” is reserved for expressions (' + RESERVED.join(', ') + ').';
    if (/[\u0000-\u001f\u007f]/.test(id)) return 'An id may not contain control characters.';
    if (new TextEncoder().encode(id).length > 256) return 'An id is at most 256 bytes.';
    return '';
  }

  // renameRefs rewrites the references to node old in an expression: the
  // ones the engine resolves by id, `old.output…` and `node_results.old…`
  // (plain or quoted). Text inside string literals is not looked at apart.
  function renameRefs(src, old, id) {
    if (typeof src !== 'string' || !src.includes(old)) return src;
    const esc = old.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const name = IDENT.test(id) ? id : JSON.stringify(id);
    return src
      .replace(new RegExp('(^|[^A-Za-z0-9_."\'])(' + esc + '|"' + esc + '")(?=\\.output\\b)', 'g'), (m, pre) => pre + name)
      .replace(new RegExp('(\\bnode_results\\.)(' + esc + '(?![A-Za-z0-9_])|"' + esc + '")', 'g'), (m, pre) => pre + name);
  }

  // rename renames node old to id everywhere the engine looks a node up by
  // id: edges' ends (and their automatic ids, "source->target"), the entry
  // node, map bodies, parallel branches, error handlers, successor fields,
  // and expressions reading the node's output.
  function rename(old, id) {
    const n = nodeById(old);
    n.node_id = id;
    const autoId = (e) => e.id === e.source + '->' + e.target || new RegExp('^' + (e.source + '->' + e.target).replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '#[1-9][0-9]*$').test(e.id);
    const touched = [];
    for (const e of doc.edges) {
      if (e.source !== old && e.target !== old) continue;
      const wasAuto = autoId(e);
      if (e.source === old) e.source = id;
      if (e.target === old) e.target = id;
      if (wasAuto) touched.push(e);
    }
    // new automatic ids, unique among all the others
    const taken = new Set(doc.edges.filter((e) => !touched.includes(e)).map((e) => e.id));
    for (const e of touched) {
      let eid = e.source + '->' + e.target;
      for (let i = 2; taken.has(eid); i++) eid = e.source + '->' + e.target + '#' + i;
      e.id = eid;
      taken.add(eid);
    }
    for (const e of doc.edges) if (e.condition) e.condition = renameRefs(e.condition, old, id);
    for (const m of doc.nodes) {
      for (const f of ['map_node', 'on_error', 'true_node', 'false_node', 'next_node']) if (m[f] === old) m[f] = id;
      if (m.branches) m.branches = m.branches.map((b) => (b === old ? id : b));
      for (const f of ['condition', 'items_path']) if (m[f]) m[f] = renameRefs(m[f], old, id);
      for (const f of ['input_map', 'set_state']) {
        if (m[f]) for (const k of Object.keys(m[f])) m[f][k] = renameRefs(m[f][k], old, id);
      }
      if (m.cases) for (const c of m.cases) c.when = renameRefs(c.when, old, id);
    }
    if (doc.entry_node === old) doc.entry_node = id;
  }

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
    const problem = idProblem(id, old);
    // the typed id stays in the field with the reason beside it; nothing changes
    showIdProblem(input, problem);
    if (problem) return;
    // the panel edits the node under its new id from now on: a label typed
    // before the panel is redrawn goes to the renamed node
    panel.dataset.id = id;
    mutate(() => {
      rename(old, id);
      cy.batch(() => {
        cy.$(':selected').unselect();
        cy.elements().remove();
        cy.add(canvas.elements(doc));
        cy.getElementById(id).select();
      });
    });
  }

  propsEl.addEventListener('input', (e) => {
    if (e.target.dataset.t === 'id') {
      // say at once when the id being typed is taken or not allowed
      const panel = e.target.closest('.props');
      const id = e.target.value.trim();
      showIdProblem(e.target, id === panel.dataset.id ? '' : idProblem(id, panel.dataset.id));
      return;
    }
    if (e.target.matches('input[type=text], input[type=number], textarea, input.k, .v-wrap input')) applyProps('input');
  });
  propsEl.addEventListener('focusout', () => { lastPropField = ''; });
  propsEl.addEventListener('change', (e) => {
    if (e.target.dataset.t === 'id') { renameNode(e.target); return; }
    if (e.target.matches('select, input[type=checkbox]')) applyProps('change');
  });
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
      rm.closest('.kv-row').remove();
      applyProps('change');
    }
  });

  // ---- node list (the canvas's text alternative) ----------------------------

  const scheduleNodeTable = common.debounce(renderNodeTable, 120);
  function renderNodeTable() {
    const tbody = document.querySelector('#node-table tbody');
    const next = new Map();
    for (const e of doc.edges) {
      if (!next.has(e.source)) next.set(e.source, []);
      next.get(e.source).push(e.label ? e.target + ' (' + e.label + ')' : e.target);
    }
    const selected = new Set(cy ? cy.$('node:selected').map((n) => n.id()) : []);
    // A large chain lists its first rows until asked for all (layout of
    // thousands of rows would delay the canvas).
    const all = tableShowAll || doc.nodes.length <= TABLE_ROWS;
    const shown = all ? doc.nodes : doc.nodes.filter((n, i) => i < TABLE_ROWS || selected.has(n.node_id));
    const rows = shown.map((n) => {
      const tr = common.el('tr', { 'data-node-id': n.node_id, 'aria-selected': selected.has(n.node_id) ? 'true' : 'false' });
      tr.append(
        common.el('td', {}, common.el('button', { type: 'button', class: 'linklike select-node', 'data-node-id': n.node_id, text: n.node_id, 'aria-label': 'Select node ' + n.node_id })),
        common.el('td', { text: n.kind }),
        common.el('td', { text: n.label || '' }),
        common.el('td', { text: (next.get(n.node_id) || []).join(', ') }),
      );
      return tr;
    });
    if (!all) {
      const more = common.el('button', { type: 'button', class: 'linklike', id: 'table-show-all', text: 'Show all ' + doc.nodes.length + ' nodes' });
      more.addEventListener('click', () => { tableShowAll = true; renderNodeTable(); });
      rows.push(common.el('tr', {}, common.el('td', { colspan: 4 }, more)));
    }
    tbody.replaceChildren(...rows);
    $('node-count').textContent = String(doc.nodes.length);
  }
  const TABLE_ROWS = 200;
  let tableShowAll = false;

  function syncTableSelection() {
    const selected = new Set(cy.$('node:selected').map((n) => n.id()));
    for (const tr of document.querySelectorAll('#node-table tbody tr')) tr.setAttribute('aria-selected', selected.has(tr.dataset.nodeId) ? 'true' : 'false');
  }

  document.querySelector('#node-table').addEventListener('click', (e) => {
    const b = e.target.closest('.select-node');
    if (!b) return;
    selectAndFocus(b.dataset.nodeId);
  });

  function selectAndFocus(id) {
    if (cy.getElementById(id).empty()) canvas.loadAll(cy);
    const ele = cy.getElementById(id);
    if (ele.empty()) return;
    cy.$(':selected').unselect();
    ele.select();
    canvas.focus(cy, ele);
  }

  issuesEl.addEventListener('click', (e) => {
    const b = e.target.closest('.issue-link');
    if (!b) return;
    const id = b.dataset.nodeId || b.dataset.edgeId;
    if (id) selectAndFocus(id);
  });

  // The editor fills the window below the page's top bar (app.css, .editor):
  // its top is measured, not assumed, since the bar wraps on a narrow window.
  const pane = $('node-list-pane');
  const summaryEl = pane.querySelector('summary');
  function measureChrome() {
    root.style.setProperty('--editor-top', Math.max(0, Math.round(root.getBoundingClientRect().top + window.scrollY)) + 'px');
  }
  measureChrome();
  const topbar = document.querySelector('.topbar');
  if (topbar) new ResizeObserver(measureChrome).observe(topbar);
  try { if (localStorage.getItem('studio.nodeList') === 'closed') pane.open = false; } catch { /* storage off */ }
  // A details element that is open in the page's HTML fires 'toggle' once
  // on its own after loading; only a person opening the list brings it into
  // view (scrolling on that first event moved the canvas off screen under
  // the pointer, at a moment that depended on the machine's speed).
  let listToggledByUser = false;
  summaryEl.addEventListener('click', () => { listToggledByUser = true; });
  pane.addEventListener('toggle', () => {
    try { localStorage.setItem('studio.nodeList', pane.open ? 'open' : 'closed'); } catch { /* storage off */ }
    if (pane.open && listToggledByUser) pane.scrollIntoView({ block: 'nearest' });
    listToggledByUser = false;
  });

  // ---- keyboard --------------------------------------------------------------

  function typing(e) {
    const t = e.target;
    return t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
  }

  document.addEventListener('keydown', (e) => {
    if (typing(e) || document.querySelector('dialog[open]')) return;
    const mod = e.ctrlKey || e.metaKey;
    if (mod && (e.key === 'z' || e.key === 'Z')) { e.preventDefault(); if (e.shiftKey) redo(); else undo(); return; }
    if (mod && (e.key === 'y' || e.key === 'Y')) { e.preventDefault(); redo(); return; }
    if (mod && (e.key === 'a' || e.key === 'A')) { e.preventDefault(); cy.nodes().not('.eh-handle').select(); return; }
    if (!canvas.canvasKey(e)) return;
    if (e.key === 'Delete' || e.key === 'Backspace') { e.preventDefault(); deleteSelection(); return; }
    if (e.key === 'c' || e.key === 'C') { e.preventDefault(); connectSelected(); return; } // the picker's field must not get the c
    if (e.key === 'f') { canvas.fit(cy); }
  });

  document.addEventListener('copy', (e) => {
    if (typing(e)) return;
    const text = copySelection();
    if (!text) return;
    e.clipboardData.setData('text/plain', text);
    e.preventDefault();
    flash('Copied ' + cy.$('node:selected').not('.eh-handle').length + ' node(s)');
  });
  document.addEventListener('cut', (e) => {
    if (typing(e)) return;
    const text = copySelection();
    if (!text) return;
    e.clipboardData.setData('text/plain', text);
    e.preventDefault();
    deleteSelection();
  });
  document.addEventListener('paste', (e) => {
    if (typing(e)) return;
    const text = e.clipboardData.getData('text/plain');
    if (text && paste(text)) e.preventDefault();
  });

  // ---- toolbar -----------------------------------------------------------------

  $('btn-undo').addEventListener('click', undo);
  $('btn-redo').addEventListener('click', redo);
  $('btn-delete').addEventListener('click', deleteSelection);
  $('btn-connect').addEventListener('click', connectSelected);
  $('btn-fit').addEventListener('click', () => canvas.fit(cy));
  $('btn-reload').addEventListener('click', () => location.reload());
  $('btn-layout').addEventListener('click', () => {
    hideHandle();
    mutate(() => {
      canvas.layout(cy);
      for (const n of doc.nodes) {
        const p = cy.getElementById(n.node_id).position();
        n.position = { x: Math.round(p.x), y: Math.round(p.y) };
      }
    });
  });

  const runDialog = $('run-dialog');
  const runInput = $('run-input');
  // The run dialog starts with the last input this browser ran the chain
  // with, else the chain's sample input, else {}; typing is kept until a run.
  const lastInputKey = 'studio:last-input:' + chainId;
  let runInputEdited = false;
  function prefillRunInput() {
    if (runInputEdited) return;
    let text = null;
    let from = '';
    try { text = localStorage.getItem(lastInputKey); } catch { text = null; }
    if (text) from = 'Pre-filled with the input of your last run of this chain.';
    else if (doc && doc.sample_input && typeof doc.sample_input === 'object') {
      text = JSON.stringify(doc.sample_input, null, 2);
      from = 'Pre-filled with the chain\'s sample input.';
    } else text = '{}';
    runInput.value = text;
    $('run-input-source').textContent = from;
    runInput.dispatchEvent(new Event('input'));
    runInputEdited = false;
  }
  runBtn.addEventListener('click', async () => {
    await flush();
    if (runBtn.disabled) return;
    $('run-result').replaceChildren();
    prefillRunInput();
    runDialog.showModal();
    runInput.focus();
  });
  // remembered when sent (the Run button is only enabled for a valid chain)
  $('run-form').addEventListener('submit', () => {
    if (runInput.getAttribute('aria-invalid') === 'true') return;
    try { localStorage.setItem(lastInputKey, runInput.value.trim() || '{}'); } catch { /* storage off: nothing to remember */ }
    runInputEdited = false;
  }, true);
  runInput.addEventListener('input', (e) => {
    if (e.isTrusted) runInputEdited = true;
    const check = $('run-input-check');
    let err = '';
    try {
      const v = JSON.parse(runInput.value || '{}');
      if (v === null || typeof v !== 'object' || Array.isArray(v)) err = 'The input must be a JSON object, e.g. {"items": [1, 2]}.';
    } catch (x) { err = 'Not JSON: ' + x.message; }
    check.textContent = err;
    check.classList.toggle('expr-err', !!err);
    runInput.setAttribute('aria-invalid', err ? 'true' : 'false');
    $('run-submit').disabled = !!err;
  });

  // "Save version…": the edits are saved already; this names the current
  // version (the server writes it again as a named version).
  const svDialog = $('save-version-dialog');
  const svMessage = $('save-version-message');
  $('btn-save-version').addEventListener('click', async () => {
    await flush();
    $('save-version-result').replaceChildren();
    svMessage.value = '';
    svDialog.showModal();
    svMessage.focus();
  });
  $('save-version-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const out = $('save-version-result');
    const message = svMessage.value.trim();
    if (!message) { out.replaceChildren(common.el('div', { class: 'form-error', text: 'Give the version a name.' })); return; }
    await flush();
    let body;
    try {
      body = await api.post('/v1/chains/' + encodeURIComponent(chainId) + '/versions', { message, version });
    } catch (err) {
      out.replaceChildren(common.el('div', { class: 'form-error', text: 'Not saved: ' + err.message }));
      return;
    }
    version = body.version;
    root.dataset.version = String(version);
    setSaveState('saved', 'Saved v' + version + ', named'); // short: the toolbar stays on one line
    saveStateEl.title = 'v' + version + ': ' + message;
    svDialog.close();
  });

  // palette: click to add, or drag onto the canvas
  for (const b of document.querySelectorAll('.palette-item')) {
    b.addEventListener('click', () => addNode(b.dataset.kind));
    b.addEventListener('dragstart', (e) => {
      e.dataTransfer.setData('application/x-studio-kind', b.dataset.kind);
      e.dataTransfer.effectAllowed = 'copy';
    });
  }
  const cyEl = $('cy');
  cyEl.addEventListener('dragover', (e) => {
    if ([...e.dataTransfer.types].includes('application/x-studio-kind')) { e.preventDefault(); e.dataTransfer.dropEffect = 'copy'; }
  });
  cyEl.addEventListener('drop', (e) => {
    const kind = e.dataTransfer.getData('application/x-studio-kind');
    if (!kind) return;
    e.preventDefault();
    const r = cyEl.getBoundingClientRect();
    const pan = cy.pan(), zoom = cy.zoom();
    addNode(kind, { x: (e.clientX - r.left - pan.x) / zoom, y: (e.clientY - r.top - pan.y) / zoom });
  });

  // ---- start -------------------------------------------------------------------

  const showLoading = canvas.showLoading(root);

  async function init() {
    let data;
    if (root.dataset.doc) {
      data = { doc: JSON.parse(root.dataset.doc), version: Number(root.dataset.version) };
      saved.fromText(root.dataset.doc, false); // what the server holds: saves diff against it
      delete root.dataset.doc;
    } else {
      // GET /v1/chains/{id}: {id, name, version, doc, issues, …}; its text
      // is the saved copy, and the diff reads the doc inside it
      const text = await (await api.request('GET', '/v1/chains/' + encodeURIComponent(chainId))).text();
      data = JSON.parse(text);
      saved.fromText(text, true);
    }
    performance.mark('studio:data');
    doc = data.doc;
    version = data.version;
    doc.nodes = doc.nodes || [];
    doc.edges = doc.edges || [];
    cy = canvas.createCy(cyEl, doc, { editable: true, progressive: true, onProgress: (loaded, total) => {
      showLoading(loaded, total);
      if (loaded >= total) window.__studio.canvasLoadedAt = performance.now();
    } });
    cy.on('studio-loaded', () => { markIssues(); syncTableSelection(); });
    // A click on the graph gives it the focus, so that the single-key
    // shortcuts (canvas.canvasKey) act: Cytoscape's own canvases do not take
    // it, and Cytoscape blurs the focused element on mousedown, so the focus
    // is given when the button comes up.
    cyEl.addEventListener('pointerup', (e) => {
      if (e.target.tagName === 'CANVAS' && document.activeElement !== cyEl) cyEl.focus({ preventScroll: true });
    }, true);
    // Cytoscape only notices window resizes: follow the container itself
    new ResizeObserver(() => { if (!cy.destroyed()) cy.resize(); }).observe(cyEl);
    performance.mark('studio:cy');
    if (cy.__laidOut) {
      for (const n of doc.nodes) {
        const p = cy.getElementById(n.node_id).position();
        n.position = { x: Math.round(p.x), y: Math.round(p.y) };
      }
    }
    eh = cy.edgehandles({
      canConnect: (s, t) => !s.same(t) && !s.hasClass('eh-handle') && !t.hasClass('eh-handle'),
      edgeParams: () => ({}),
      hoverDelay: 80,
      snap: true,
      snapThreshold: 30,
    });

    cy.on('mouseover', 'node', (e) => placeHandle(e.target));
    cy.on('tapstart', 'node.eh-handle', () => {
      if (!handleOwner) return;
      drawing = true;
      cy.userPanningEnabled(false);
      cy.boxSelectionEnabled(false);
      eh.start(handleOwner);
    });
    cy.on('ehstop', () => {
      drawing = false;
      cy.userPanningEnabled(true);
      cy.boxSelectionEnabled(true);
      hideHandle();
    });
    cy.on('ehcomplete', (evt, src, tgt, added) => {
      added.remove();
      const id = addEdge(src.id(), tgt.id());
      if (id) { cy.$(':selected').unselect(); cy.getElementById(id).select(); }
    });
    cy.on('grab', 'node', () => hideHandle());
    cy.on('tap', (e) => { if (e.target === cy) hideHandle(); });

    // moves: one undo step per drag, saved once
    let moved = new Set();
    const applyMoves = common.debounce(() => {
      const ids = moved;
      moved = new Set();
      mutate(() => {
        for (const id of ids) {
          const n = nodeById(id);
          if (!n) continue;
          const p = cy.getElementById(id).position();
          n.position = { x: Math.round(p.x), y: Math.round(p.y) };
        }
      });
    }, 30);
    cy.on('dragfree', 'node', (e) => {
      if (e.target.hasClass('eh-handle')) return;
      moved.add(e.target.id());
      applyMoves();
    });

    cy.on('select', (e) => {
      if (e.target.isNode()) selOrder = selOrder.filter((x) => x !== e.target.id()).concat(e.target.id());
      scheduleProps();
      syncTableSelectionSoon();
    });
    cy.on('unselect', (e) => {
      selOrder = selOrder.filter((x) => x !== e.target.id());
      scheduleProps();
      syncTableSelectionSoon();
    });

    renderNodeTable();
    performance.mark('studio:table');
    markIssues();
    performance.mark('studio:issues');
    await showProps();
    performance.mark('studio:props');
    // ready once the canvas has painted its first frame, not just been built
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    performance.mark('studio:painted');
    root.dataset.ready = '1';
    window.__studio.readyAt = performance.now();
    // how much of the canvas was drawn when the page became ready: the
    // progressive opening is measured here, not raced from outside
    window.__studio.nodesAtReady = cy.nodes().length;
    // ---- canvas navigation (navigate.js): what it may call ----
    Object.assign(window.__studio, { mutate, addNode, addEdge, copySelection, paste, deleteSelection, flash, hideHandle, nodeById, rebuild });
    root.dispatchEvent(new CustomEvent('studio:ready'));
    canvas.startLoading(cy);
  }
  const syncTableSelectionSoon = common.debounce(() => {
    if (!tableShowAll && doc.nodes.length > TABLE_ROWS) renderNodeTable();
    else syncTableSelection();
  }, 50);

  window.__studio.flush = flush;

  init().catch((err) => {
    setSaveState('error', 'Could not load: ' + err.message);
    throw err;
  });
})();
