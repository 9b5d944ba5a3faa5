// The canvas bound to the document: redrawing what an edit changed, adding
// and deleting nodes, drawing and connecting edges (a handle on the hovered
// node starts an edge), moves, the palette, and what a selection shows.
// Every change goes through ed.mutate, so it is one undo step and saved.
import * as canvas from './canvas.js';
import * as common from './common.js';

// A new node of a kind starts with what it cannot do without.
const DEFAULTS = {
  tool: () => ({ name: 'echo' }),
  branch: () => ({ condition: '' }),
  condition: () => ({ cases: [{ handle: 'yes', when: '' }] }),
  map: () => ({ items_path: 'input.items' }),
  interrupt: () => ({ config: { prompt: 'Approve?' } }),
  proc: () => ({ config: { argv: [] } }),
};

// newEdge makes the edge src → dst as the designer draws it (a branch's
// first edge is labelled true, its second false; a condition's take its
// free case handles), or returns null with the reason it is not drawn:
// never a self-loop, never a second edge between the same two nodes.
// edges is the document's edges plus any planned in the same action.
function newEdge(doc, src, dst, edges) {
  if (src === dst) return { why: 'self' };
  if (edges.some((e) => e.source === src && e.target === dst)) return { why: 'dup' };
  const taken = new Set(edges.map((x) => x.id));
  let id = src + '->' + dst;
  for (let i = 2; taken.has(id); i++) id = src + '->' + dst + '#' + i;
  const e = { id, source: src, target: dst };
  const s = doc.nodes.find((n) => n.node_id === src);
  const used = new Set(edges.filter((x) => x.source === src).map((x) => x.label));
  if (s && s.kind === 'branch') {
    if (!used.has('true')) e.label = 'true';
    else if (!used.has('false')) e.label = 'false';
  } else if (s && s.kind === 'condition') {
    const free = (s.cases || []).map((c) => c.handle).filter((h) => h && !used.has(h));
    if (free.length) e.label = free[0];
    else if (!used.has('default')) e.label = 'default';
  } else if (s && s.kind === 'interrupt') {
    const o = outcomeLabel(s, edges);
    if (o) e.label = o;
  }
  return { edge: e };
}

// outcomeLabel is the outcome an approval's next edge takes: approved,
// then rejected (then timeout when its on_timeout is "edge"), so a
// person's "no" has a path as soon as the node has a second edge, as
// n8n's send-and-wait goes on with approved: false. An interrupt that
// already routes by a plain edge keeps its edges plain (a labelled one
// would change where its answers go); "" when every outcome has its edge.
export function outcomeLabel(s, edges) {
  const outs = edges.filter((x) => x.source === s.node_id);
  if (outs.some((x) => !x.label)) return '';
  const used = new Set(outs.map((x) => x.label));
  const wanted = ['approved', 'rejected'];
  if (s.config && s.config.on_timeout === 'edge') wanted.push('timeout');
  return wanted.find((l) => !used.has(l)) || '';
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

export function install(ed) {
  const { root, cyEl } = ed;
  let selOrder = []; // the selected nodes' ids in the order they were selected

  // rebuild redraws the canvas from the document (undo, redo).
  ed.rebuild = () => {
    const cy = ed.cy;
    canvas.stopLoading(cy); // everything is redrawn from the document below
    const selected = new Set(cy.$(':selected').map((e) => e.id()));
    hideHandle();
    ed.redrawing = true; // the selection kept is not a new one (editor-tabs.js)
    try {
      cy.batch(() => {
        cy.elements().remove();
        cy.add(canvas.elements(ed.doc, { pins: true }));
        for (const id of selected) cy.getElementById(id).select();
      });
    } finally {
      ed.redrawing = false;
    }
    ed.markIssues();
    ed.showProps();
    root.dispatchEvent(new CustomEvent('studio:rebuilt')); // notes.js redraws the notes
  };

  ed.refreshNode = (id) => {
    const n = ed.nodeById(id);
    const ele = ed.cy.getElementById(id);
    if (!n || ele.empty()) return;
    canvas.showPin(ele, n, canvas.isPinned(ed.doc, id));
    ele.data('kind', n.kind);
    refreshAttach(n);
  };

  // refreshAttach redraws a node's attachment links (map body, branches,
  // error handler): its own links only, found from the node, not by a scan
  // of every edge of the chain.
  function refreshAttach(n) {
    const cy = ed.cy;
    const ele = cy.getElementById(n.node_id);
    const old = ele.connectedEdges('.attach').filter((e) => e.data('owner') === n.node_id);
    const links = canvas.attachLinks(n, { has: (id) => cy.getElementById(id).nonempty() || !!ed.nodeById(id) });
    if (old.empty() && !links.length) return;
    cy.batch(() => {
      old.remove();
      cy.add(links.filter((l) => cy.getElementById(l.data.target).nonempty()));
    });
  }

  ed.refreshEdge = (id) => {
    const cy = ed.cy;
    const e = ed.edgeById(id);
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
  };

  // addNode adds a node of kind at pos (else a free spot in view), selects
  // it and gives its fields the focus. It comes after node afterId (by
  // default the one selected node, if any): placed to its right (unless
  // dropped somewhere) and connected from it in the same undo step, a
  // branch's or condition's edge taking its next free label, as n8n's "+"
  // does.
  ed.addNode = (kind, pos, afterId) => {
    const cy = ed.cy;
    const id = ed.uniqueNodeId(kind);
    const n = Object.assign({ node_id: id, kind }, DEFAULTS[kind] ? DEFAULTS[kind]() : {});
    const selected = cy.nodes(':selected').not('.eh-handle');
    const afterWhom = afterId || (selected.length === 1 ? selected[0].id() : '');
    const after = afterWhom ? ed.doc.nodes.find((x) => x.node_id === afterWhom) : null;
    if (!pos) pos = after && after.position ? spotAfter(after) : freeSpot();
    n.position = { x: Math.round(pos.x), y: Math.round(pos.y) };
    const link = after ? newEdge(ed.doc, after.node_id, id, ed.doc.edges) : null;
    ed.mutate(() => {
      ed.doc.nodes.push(n);
      cy.add(canvas.nodeElement(n));
      if (link && link.edge) {
        ed.doc.edges.push(link.edge);
        cy.add(canvas.edgeElement(link.edge));
      }
    });
    cy.$(':selected').unselect();
    cy.getElementById(id).select();
    ed.focusPropsNext = true; // the new node's fields come next
    return id;
  };

  // spotAfter is a free place to the right of node n, below the nodes that
  // already follow it.
  function spotAfter(n) {
    const busy = (x, y) => ed.doc.nodes.some((m) => m.position && Math.abs(m.position.x - x) < 180 && Math.abs(m.position.y - y) < 80);
    const x = n.position.x + 260;
    for (let k = 0; k < 20; k++) {
      const y = n.position.y + (k % 2 ? -1 : 1) * Math.ceil(k / 2) * 100;
      if (!busy(x, y)) return { x, y };
    }
    return { x, y: n.position.y };
  }

  // freeSpot finds a place near the middle of the view that no node covers.
  function freeSpot() {
    const ext = ed.cy.extent();
    const cx = (ext.x1 + ext.x2) / 2, cy0 = (ext.y1 + ext.y2) / 2;
    const busy = (x, y) => ed.doc.nodes.some((n) => n.position && Math.abs(n.position.x - x) < 180 && Math.abs(n.position.y - y) < 80);
    for (let ring = 0; ring < 12; ring++) {
      for (let k = 0; k <= ring * 2; k++) {
        const cands = [[cx + ring * 200, cy0 + (k - ring) * 90], [cx + (k - ring) * 200, cy0 + ring * 90]];
        for (const [x, y] of cands) if (!busy(x, y)) return { x, y };
      }
    }
    return { x: cx, y: cy0 };
  }

  // addEdge is one drawn edge (a drag from a node's handle). Drawing back to
  // an earlier node is allowed here: that is how a loop is made on purpose.
  ed.addEdge = (src, dst) => {
    const r = newEdge(ed.doc, src, dst, ed.doc.edges);
    if (!r.edge) {
      if (r.why === 'dup') ed.flash(src + ' → ' + dst + ' is already connected.');
      return null;
    }
    ed.mutate(() => {
      ed.doc.edges.push(r.edge);
      ed.cy.add(canvas.edgeElement(r.edge));
    });
    return r.edge.id;
  };

  ed.deleteSelection = () => {
    const cy = ed.cy;
    const sel = cy.$(':selected').not('.eh-handle');
    if (sel.empty()) return;
    const nodes = new Set(sel.nodes().map((n) => n.id()));
    const edges = new Set(sel.edges().not('.attach').map((e) => e.id()));
    ed.mutate(() => {
      const doc = ed.doc;
      doc.nodes = doc.nodes.filter((n) => !nodes.has(n.node_id));
      doc.edges = doc.edges.filter((e) => !edges.has(e.id) && !nodes.has(e.source) && !nodes.has(e.target));
      for (const n of doc.nodes) {
        if (nodes.has(n.map_node)) delete n.map_node;
        if (n.branches) n.branches = n.branches.filter((b) => !nodes.has(b));
        if (nodes.has(n.on_error)) delete n.on_error;
      }
      if (nodes.has(doc.entry_node)) delete doc.entry_node;
      // a removed node's pinned output goes with it
      if (doc.pinned_outputs) {
        for (const id of nodes) delete doc.pinned_outputs[id];
        if (!Object.keys(doc.pinned_outputs).length) delete doc.pinned_outputs;
      }
      hideHandle();
      cy.batch(() => sel.remove());
      cy.batch(() => { for (const n of doc.nodes) refreshAttach(n); });
    });
    selOrder = [];
    ed.showProps();
  };

  // connectSelected joins the selected nodes as a path, in the order they
  // were selected (Ctrl+A: document order), as ONE undo step. A pair already
  // connected (either way round) is skipped, and so is a pair whose edge
  // would close a cycle: a loop needs max_iterations, so it is drawn by hand.
  ed.connectSelected = () => {
    const cy = ed.cy;
    const sel = cy.nodes(':selected').not('.eh-handle');
    const ordered = selOrder.filter((id) => sel.some((n) => n.id() === id));
    const rest = ed.doc.nodes.map((n) => n.node_id).filter((id) => !ordered.includes(id) && cy.getElementById(id).selected());
    const ids = ordered.concat(rest);
    // canvas navigation: one node selected picks the target by name
    if (ids.length === 1 && ed.hooks.pickTarget) { ed.hooks.pickTarget(ids[0]); return; }
    if (ids.length < 2) {
      ed.flash('Select two or more nodes (in order) to connect them.');
      return;
    }
    const planned = [];
    const skipped = { dup: 0, cycle: 0 };
    const all = ed.doc.edges.slice();
    for (let i = 0; i + 1 < ids.length; i++) {
      const src = ids[i], dst = ids[i + 1];
      if (all.some((e) => (e.source === dst && e.target === src))) { skipped.dup++; continue; }
      const r = newEdge(ed.doc, src, dst, all);
      if (!r.edge) { skipped.dup++; continue; }
      if (reaches(all, dst, src)) { skipped.cycle++; continue; }
      all.push(r.edge);
      planned.push(r.edge);
    }
    const parts = [planned.length ? 'Connected ' + planned.length + (planned.length === 1 ? ' pair' : ' pairs') : 'Nothing new to connect'];
    if (skipped.dup) parts.push(skipped.dup + ' already connected');
    if (skipped.cycle) parts.push(skipped.cycle + ' would close a cycle (draw a loop edge by hand and give it max iterations)');
    ed.flash(parts.join('; ') + '.');
    if (!planned.length) return;
    ed.mutate(() => {
      ed.doc.edges.push(...planned);
      cy.batch(() => { for (const e of planned) cy.add(canvas.edgeElement(e)); });
    });
  };

  // flash says msg for three seconds over the canvas.
  let flashTimer = 0;
  ed.flash = (msg) => {
    let f = ed.$('flash');
    if (!f) {
      f = common.el('div', { id: 'flash', class: 'flash', role: 'status' });
      root.append(f);
    }
    f.textContent = msg;
    f.hidden = false;
    clearTimeout(flashTimer);
    flashTimer = setTimeout(() => { f.hidden = true; }, 3000);
  };

  // ---- edge drawing: a handle on the hovered node ------------------------------

  let handle = null;
  let handleOwner = null;
  let drawing = false;

  function placeHandle(n) {
    if (drawing || n.hasClass('eh-handle')) return;
    if (!handle || handle.removed()) {
      handle = ed.cy.add({ group: 'nodes', data: { id: '__handle__' }, classes: 'eh-handle', selectable: false, grabbable: false });
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
  ed.hideHandle = hideHandle;

  // ---- the canvas's events, once it is built -----------------------------------

  // bindCanvas listens to the canvas ed.cy once it is built: the focus, its
  // size, the edge handle, moves and selection.
  ed.bindCanvas = () => {
    const cy = ed.cy;
    cy.on('studio-loaded', () => { ed.markIssues(); ed.syncTableSelection(); });
    // A click on the graph gives it the focus, so that the single-key
    // shortcuts (canvas.canvasKey) act: Cytoscape's own canvases do not take
    // it, and Cytoscape blurs the focused element on mousedown, so the focus
    // is given when the button comes up.
    cyEl.addEventListener('pointerup', (e) => {
      if (e.target.tagName === 'CANVAS' && document.activeElement !== cyEl) cyEl.focus({ preventScroll: true });
    }, true);
    // Cytoscape only notices window resizes: follow the container itself
    new ResizeObserver(() => { if (!cy.destroyed()) cy.resize(); }).observe(cyEl);

    const eh = cy.edgehandles({
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
      const id = ed.addEdge(src.id(), tgt.id());
      if (id) { cy.$(':selected').unselect(); cy.getElementById(id).select(); }
    });
    cy.on('grab', 'node', () => hideHandle());
    cy.on('tap', (e) => { if (e.target === cy) hideHandle(); });

    // moves: one undo step per drag, saved once
    let moved = new Set();
    const applyMoves = common.debounce(() => {
      const ids = moved;
      moved = new Set();
      ed.mutate(() => {
        for (const id of ids) {
          const n = ed.nodeById(id);
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
      ed.scheduleProps();
      ed.syncTableSelectionSoon();
    });
    cy.on('unselect', (e) => {
      selOrder = selOrder.filter((x) => x !== e.target.id());
      ed.scheduleProps();
      ed.syncTableSelectionSoon();
    });
  };

  // ---- the palette: click to add, or drag onto the canvas ----------------------

  for (const b of document.querySelectorAll('.palette-item')) {
    b.addEventListener('click', () => ed.addNode(b.dataset.kind));
    b.addEventListener('dragstart', (e) => {
      e.dataTransfer.setData('application/x-studio-kind', b.dataset.kind);
      e.dataTransfer.effectAllowed = 'copy';
    });
  }
  cyEl.addEventListener('dragover', (e) => {
    if ([...e.dataTransfer.types].includes('application/x-studio-kind')) { e.preventDefault(); e.dataTransfer.dropEffect = 'copy'; }
  });
  cyEl.addEventListener('drop', (e) => {
    const kind = e.dataTransfer.getData('application/x-studio-kind');
    if (!kind) return;
    e.preventDefault();
    const r = cyEl.getBoundingClientRect();
    const pan = ed.cy.pan(), zoom = ed.cy.zoom();
    ed.addNode(kind, { x: (e.clientX - r.left - pan.x) / zoom, y: (e.clientY - r.top - pan.y) / zoom });
  });
}
