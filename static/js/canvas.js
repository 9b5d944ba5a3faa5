// The chain canvas shared by the editor, the run page and the versions page:
// turns a chain document into Cytoscape elements and styles them from the
// page's CSS variables (so dark and light themes follow the system).
import * as layered from './layout.js';

export const ICONS = { tool: '⚙', skill: '⊞', proc: '▶', branch: '◇', condition: '◈', map: '⋔', parallel: '⇉', interrupt: '⚑', agent: '✦' };
const SHAPES = { tool: 'round-rectangle', skill: 'round-rectangle', proc: 'rectangle', branch: 'polygon', condition: 'hexagon', map: 'round-tag', parallel: 'barrel', interrupt: 'octagon', agent: 'ellipse' };

export function cssVar(name, fallback) {
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}

function shorten(s, n) {
  s = String(s);
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

// nodeDisplay is the text drawn in a node.
export function nodeDisplay(n, extra) {
  const title = n.label || n.node_id;
  let sub = n.kind;
  if (n.kind === 'tool' && n.name) sub = n.name;
  if (n.kind === 'skill' && n.name) sub = '⊞ ' + n.name;
  let s = (ICONS[n.kind] || '') + ' ' + shorten(title, 22) + '\n' + shorten(sub, 24);
  if (extra) s += '\n' + extra;
  return s;
}

// edgeText is the text drawn on an edge: its label, its condition, default, loop cap.
export function edgeText(e) {
  const parts = [];
  if (e.label) parts.push(e.label);
  if (e.condition) parts.push('if ' + shorten(e.condition, 40));
  if (e.default && e.label !== 'default') parts.push('default');
  if (e.max_iterations) parts.push('↻ ≤' + e.max_iterations);
  return parts.join(' · ');
}

export function edgeClasses(e) {
  const c = ['flow'];
  if (edgeText(e)) c.push('has-text');
  if (e.default || e.label === 'default') c.push('is-default');
  if (e.condition) c.push('is-cond');
  if (e.label) c.push('is-labelled');
  if (e.max_iterations) c.push('is-loop');
  return c.join(' ');
}

// attachLinks derives the links that are not edges in the document: map
// bodies, parallel branches, error handlers.
export function attachLinks(n, ids) {
  const out = [];
  const add = (target, kind, label) => {
    if (!target || !ids.has(target)) return;
    out.push({ group: 'edges', data: { id: 'attach:' + kind + ':' + n.node_id + ':' + target, source: n.node_id, target, text: label, owner: n.node_id, attach: kind }, classes: 'attach has-text attach-' + kind, selectable: false });
  };
  if (n.kind === 'map') add(n.map_node, 'map', 'each item');
  if (n.kind === 'parallel') for (const b of n.branches || []) add(b, 'branch', 'branch');
  const oe = n.on_error;
  if (oe && !['abort', 'stop', 'skip', 'continue'].includes(oe)) add(oe, 'error', 'on error');
  return out;
}

export function nodeElement(n, extraClasses) {
  const big = n.kind === 'branch' || n.kind === 'condition';
  const el = { group: 'nodes', data: { id: n.node_id, kind: n.kind, shape: SHAPES[n.kind] || 'round-rectangle', w: big ? 170 : 156, h: big ? 62 : 54, display: nodeDisplay(n) }, classes: 'kind-' + n.kind + (extraClasses ? ' ' + extraClasses : '') };
  if (n.position) el.position = { x: n.position.x, y: n.position.y };
  return el;
}

// Pinned outputs (docs/chain-format.md, "Pinned outputs"): the designer
// marks a node its draft pins with a pin line in the node and the pinned
// class (a double border); the run page marks the nodes a run took from
// their pins the same way.
export const PIN_NOTE = '⚲ pinned';
export function isPinned(doc, id) {
  const p = doc && doc.pinned_outputs;
  return !!p && Object.prototype.hasOwnProperty.call(p, id);
}

// showPin draws node n's element ele pinned or not.
export function showPin(ele, n, pinned) {
  if (!ele || ele.empty()) return;
  ele.data('display', nodeDisplay(n, pinned ? PIN_NOTE : ''));
  if (pinned) ele.addClass('pinned'); else ele.removeClass('pinned');
}

export function edgeElement(e, extraClasses) {
  return { group: 'edges', data: { id: e.id, source: e.source, target: e.target, text: edgeText(e) }, classes: edgeClasses(e) + (extraClasses ? ' ' + extraClasses : '') };
}

// elements builds every element of a document (edges to missing nodes are
// left out: validation reports them). opts.pins marks the nodes the
// document pins (the designer's canvas; a run's canvas marks what the run
// did instead).
export function elements(doc, opts) {
  const els = [];
  const ids = new Set();
  const pins = opts && opts.pins ? doc.pinned_outputs : null;
  for (const n of doc.nodes || []) {
    ids.add(n.node_id);
    const pinned = pins && Object.prototype.hasOwnProperty.call(pins, n.node_id);
    const el = nodeElement(n, pinned ? 'pinned' : '');
    if (pinned) el.data.display = nodeDisplay(n, PIN_NOTE);
    els.push(el);
  }
  for (const e of doc.edges || []) if (ids.has(e.source) && ids.has(e.target)) els.push(edgeElement(e));
  for (const n of doc.nodes || []) els.push(...attachLinks(n, ids));
  return els;
}

// style is the Cytoscape stylesheet for a mode (edit, run, diff); fewer
// selectors make the first render of a large chain much faster.
export function style(mode) {
  const fg = cssVar('--fg', '#1d2330');
  const bg = cssVar('--bg', '#ffffff');
  const nodeBg = cssVar('--node-bg', '#f4f6fb');
  const border = cssVar('--node-border', '#8a94a8');
  const accent = cssVar('--accent', '#2f6fed');
  const edge = cssVar('--edge', '#7c8699');
  const cond = cssVar('--edge-cond', '#b45309');
  const loop = cssVar('--edge-loop', '#7c3aed');
  const attach = cssVar('--edge-attach', '#0e9f8f');
  const err = cssVar('--error', '#d92d20');
  const warn = cssVar('--warning', '#dc8a00');
  const ok = cssVar('--ok', '#138a43');
  const okBg = cssVar('--ok-bg', '#e3f6ea');
  const errBg = cssVar('--error-bg', '#fde8e7');
  const warnBg = cssVar('--warning-bg', '#fff3d6');
  const runBg = cssVar('--run-bg', '#e4edff');
  const muted = cssVar('--muted', '#7c8699');
  const pin = cssVar('--pin', '#0f766e');
  const base = [
    { selector: 'node', style: {
      'min-zoomed-font-size': 7, 'background-color': nodeBg, 'border-width': 1.5, 'border-color': border,
      'text-wrap': 'wrap', 'text-max-width': 140, 'text-valign': 'center', 'text-halign': 'center',
      color: fg, 'font-size': 11, 'font-family': 'system-ui, sans-serif', 'line-height': 1.25,
    } },
    // Mappings only where the data is: the edge-drawing handle and
    // edgehandles' ghost node carry none, and Cytoscape warns on every
    // element a mapping cannot read.
    { selector: 'node[display]', style: { shape: 'data(shape)', width: 'data(w)', height: 'data(h)', label: 'data(display)' } },
    // A diamond whose top and bottom corners sit a hair off the centre line:
    // Cytoscape's point-in-polygon test casts a vertical ray, and a ray
    // through both corners (a click on the exact centre) counts them twice
    // and misses the node.
    { selector: 'node[kind = "branch"]', style: { 'shape-polygon-points': [-1, 0, 0.0001, -1, 1, 0, -0.0001, 1] } },
    // a pinned node: a double border in the pin colour (and its pin line)
    { selector: 'node.pinned', style: { 'border-style': 'double', 'border-width': 5, 'border-color': pin } },
    { selector: 'node:selected', style: { 'border-width': 3, 'border-color': accent, 'underlay-color': accent, 'underlay-opacity': 0.15, 'underlay-padding': 6 } },
    { selector: 'edge', style: {
      width: 1.6, 'line-color': edge, 'target-arrow-color': edge, 'target-arrow-shape': 'triangle', 'curve-style': 'bezier', 'arrow-scale': 0.9,
    } },
    // only edges with text get a label: label styles are most of the cost of a large chain
    { selector: 'edge.has-text[text]', style: {
      label: 'data(text)', 'font-size': 10, color: fg, 'text-background-color': bg, 'text-background-opacity': 0.9, 'text-background-padding': 2,
      'text-rotation': 'none', 'font-family': 'system-ui, sans-serif', 'min-zoomed-font-size': 7,
    } },
    { selector: 'edge.is-default', style: { 'line-style': 'dashed', 'line-dash-pattern': [7, 4] } },
    { selector: 'edge.is-cond', style: { 'line-color': cond, 'target-arrow-color': cond, color: cond } },
    { selector: 'edge.is-loop', style: { 'line-color': loop, 'target-arrow-color': loop, 'curve-style': 'unbundled-bezier', 'control-point-distances': [60], 'control-point-weights': [0.5] } },
    { selector: 'edge.attach', style: { 'line-style': 'dotted', 'line-color': attach, 'target-arrow-color': attach, 'target-arrow-shape': 'circle', color: attach, width: 2, 'font-style': 'italic' } },
    { selector: 'edge:selected', style: { width: 3.5, 'line-color': accent, 'target-arrow-color': accent } },
  ];
  const edit = [
    { selector: '.issue-warning', style: { 'border-color': warn, 'border-width': 3, 'background-color': warnBg } },
    { selector: 'edge.issue-warning', style: { 'line-color': warn, 'target-arrow-color': warn, width: 3 } },
    { selector: '.issue-error', style: { 'border-color': err, 'border-width': 3, 'background-color': errBg } },
    { selector: 'edge.issue-error', style: { 'line-color': err, 'target-arrow-color': err, width: 3 } },
    // edge drawing
    { selector: '.eh-handle', style: { width: 14, height: 14, shape: 'ellipse', 'background-color': accent, 'border-width': 2, 'border-color': bg, label: '', 'overlay-opacity': 0 } },
    { selector: '.eh-hover, .eh-source, .eh-target', style: { 'border-color': accent, 'border-width': 3 } },
    { selector: '.eh-preview, .eh-ghost-edge', style: { 'line-color': accent, 'target-arrow-color': accent, 'line-style': 'dashed', label: '' } },
    { selector: '.eh-ghost-edge.eh-preview-active', style: { opacity: 0 } },
    { selector: '.eh-ghost-node', style: { width: 1, height: 1, opacity: 0, label: '' } },
  ];
  const run = [
    { selector: 'node.ph-start', style: { 'border-color': accent, 'border-width': 3, 'background-color': runBg } },
    { selector: 'node.ph-start.pulse', style: { 'border-width': 6, 'underlay-color': accent, 'underlay-opacity': 0.2, 'underlay-padding': 8 } },
    { selector: 'node.ph-done', style: { 'border-color': ok, 'border-width': 2.5, 'background-color': okBg } },
    // done, but its agent's tool calls failed (the note says how many)
    { selector: 'node.ph-done.warned', style: { 'border-color': warn, 'border-width': 3, 'border-style': 'double', 'background-color': warnBg } },
    { selector: 'node.ph-done.reused', style: { 'border-style': 'dashed', 'background-color': bg } },
    { selector: 'node.ph-done.pinned', style: { 'border-style': 'double', 'border-width': 5, 'border-color': pin } },
    { selector: 'node.ph-skip', style: { opacity: 0.5, 'border-style': 'dashed', 'background-color': bg } },
    { selector: 'node.ph-error', style: { 'border-color': err, 'border-width': 3, 'background-color': errBg } },
    { selector: 'node.ph-paused', style: { 'border-color': warn, 'border-width': 4, 'background-color': warnBg } },
    { selector: 'edge.fired', style: { 'line-color': ok, 'target-arrow-color': ok, width: 3.5 } },
    { selector: 'edge.pruned', style: { opacity: 0.25 } },
  ];
  const diff = [
    { selector: '.diff-added', style: { 'border-color': ok, 'border-width': 3.5, 'line-color': ok, 'target-arrow-color': ok, 'background-color': okBg } },
    { selector: '.diff-removed', style: { 'border-color': err, 'border-style': 'dashed', 'border-width': 3, opacity: 0.75, 'line-color': err, 'target-arrow-color': err, 'line-style': 'dashed', 'background-color': errBg } },
    { selector: '.diff-changed', style: { 'border-color': warn, 'border-width': 3.5, 'line-color': warn, 'target-arrow-color': warn, 'background-color': warnBg } },
    { selector: '.faded', style: { opacity: 0.35, color: muted } },
  ];
  const out = base.concat(mode === 'run' ? run : mode === 'diff' ? diff : edit);
  return out;
}

// layout lays the document's nodes out left to right, in layers that fold
// (layout.js).
export function layout(cy) {
  loadAll(cy);
  const pos = layered.layeredPositions(layered.layoutDocOf(cy));
  cy.batch(() => { for (const [id, p] of pos) cy.getElementById(id).position(p); });
  quickFit(cy);
}

// Large chains load progressively. Cytoscape styles, measures and caches
// every element before its first frame, and on a machine without a GPU that
// costs about 1 ms per element: a 1,000-node chain would hold the page for
// two seconds or more whatever it shows. So a chain past PROGRESSIVE_NODES
// opens at a readable zoom on its entry node, with only the nodes in and
// around that view; the rest are added in small batches between frames, so
// the page answers clicks and keys at once and the canvas fills in behind.
// loadAll finishes the load at once, for anything that needs every
// element (fit, layout, an edit, selecting a node that is not there yet).
const PROGRESSIVE_NODES = 400;
const PROGRESSIVE_BATCH = 60; // nodes per step, with their links

export function createCy(container, doc, opts) {
  opts = opts || {};
  const nodes = doc.nodes || [];
  let needsLayout = nodes.some((n) => !n.position);
  // ---- a chain without positions is laid out before it is
  // drawn (linear time), so even a 10,000-node one opens progressively
  if (needsLayout) {
    const pos = layered.layeredPositions(doc);
    for (const n of nodes) n.position = pos.get(n.node_id);
    needsLayout = false; // (the positions are in doc now: nothing to copy back)
  }
  const progressive = !!opts.progressive && !needsLayout && nodes.length > PROGRESSIVE_NODES;
  const all = elements(doc, { pins: !!opts.editable });
  let first = all;
  let view = null;
  if (progressive) {
    view = readableView(container, doc, opts.anchor);
    first = elementsInside(all, view.box);
  }
  const cy = window.cytoscape({
    container,
    elements: first,
    style: style(opts.mode),
    layout: { name: 'preset', fit: false },
    minZoom: 0.05,
    maxZoom: 3,
    boxSelectionEnabled: !!opts.editable,
    autoungrabify: !opts.editable,
    selectionType: 'single',
    textureOnViewport: nodes.length > 300,
    hideEdgesOnViewport: nodes.length > 600,
    pixelRatio: nodes.length > 300 ? 1 : 'auto',
  });
  performance.mark('studio:cy-constructed');
  // ---- wheel zoom about 1.2× a notch (Cytoscape's own is
  // about 5%, and changing its sensitivity logs a warning). Captured on
  // the container's parent so Cytoscape never sees the wheel.
  if (container.parentElement && opts.userZoom !== false) {
    container.parentElement.addEventListener('wheel', (e) => {
      if (cy.destroyed() || !container.contains(e.target)) return;
      e.preventDefault();
      e.stopPropagation();
      const px = e.deltaMode === 1 ? e.deltaY * 33 : e.deltaMode === 2 ? e.deltaY * 400 : e.deltaY;
      // a notch is 100–120 px; a trackpad's small steps zoom smoothly
      const factor = Math.pow(1.2, -Math.max(-3, Math.min(3, px / 100)));
      const r = container.getBoundingClientRect();
      const zoom = Math.max(cy.minZoom(), Math.min(cy.maxZoom(), cy.zoom() * factor));
      cy.zoom({ level: zoom, renderedPosition: { x: e.clientX - r.left, y: e.clientY - r.top } });
      container.dispatchEvent(new Event('studio:wheel'));
    }, { capture: true, passive: false });
  }
  // The theme can change while the page is open: restyle from the new
  // CSS variables (classes on the elements keep their meaning).
  const restyle = () => { if (!cy.destroyed()) cy.style(style(opts.mode)); };
  document.addEventListener('studio:theme', restyle);
  cy.on('destroy', () => document.removeEventListener('studio:theme', restyle));
  if (progressive) {
    cy.viewport({ zoom: view.zoom, pan: view.pan });
    // Cytoscape 3.35's canvas renderer draws every element into its layer
    // textures on the first frame, visible or not (hundreds of ms here);
    // after that it fills layers lazily between frames and draws what is in
    // view meanwhile. Start in the lazy mode. (A private field: when a
    // later Cytoscape lacks it, this does nothing and only costs speed.)
    const r = cy.renderer && cy.renderer();
    const layers = r && r.data && r.data.lyrTxrCache;
    if (layers && layers.firstGet === true) layers.firstGet = false;
    startProgressiveLoad(cy, all, first, opts.onProgress);
    return cy;
  }
  if (needsLayout && nodes.length > 0) {
    layout(cy);
    cy.__laidOut = true;
  }
  quickFit(cy);
  // The page may still be settling (fonts, panels opening beside or above
  // the canvas): until the person touches the canvas, a change of its size
  // fits the chain again, so nothing opens cut off at an edge.
  let touched = false;
  const el = cy.container();
  const touch = () => { touched = true; };
  el.addEventListener('pointerdown', touch, { once: true });
  el.addEventListener('wheel', touch, { once: true, passive: true });
  el.addEventListener('studio:wheel', touch, { once: true });
  const refit = new ResizeObserver(() => {
    if (cy.destroyed()) { refit.disconnect(); return; }
    cy.resize();
    if (!touched) quickFit(cy);
  });
  refit.observe(el);
  cy.on('destroy', () => refit.disconnect());
  return cy;
}

// readableView is the opening view of a large chain: zoom 0.8 with the
// anchor node (else the entry node, else the top-left node) a little in
// from the left edge, and the model-space box of that view, whose nodes
// load first.
function readableView(container, doc, anchorId) {
  const w = container.clientWidth || 1000, h = container.clientHeight || 700;
  const zoom = 0.8;
  const positioned = doc.nodes.filter((n) => n.position);
  let anchor = positioned.find((n) => n.node_id === anchorId) || positioned.find((n) => n.node_id === doc.entry_node);
  if (!anchor) {
    anchor = positioned.reduce((a, n) => (n.position.x + n.position.y < a.position.x + a.position.y ? n : a), positioned[0]);
  }
  const ax = anchor.position.x, ay = anchor.position.y;
  const pan = { x: 120 - ax * zoom, y: Math.min(h / 2, 100) - ay * zoom };
  const x1 = -pan.x / zoom, y1 = -pan.y / zoom;
  const x2 = x1 + w / zoom, y2 = y1 + h / zoom;
  const mx = 120, my = 60; // a node's half size: whatever shows even in part
  return { zoom, pan, box: { x1: x1 - mx, y1: y1 - my, x2: x2 + mx, y2: y2 + my } };
}

// elementsInside: the nodes positioned inside box, and the links between them.
function elementsInside(all, box) {
  const ids = new Set();
  const out = [];
  for (const el of all) {
    if (el.group !== 'nodes') continue;
    const p = el.position;
    if (p && p.x >= box.x1 && p.x <= box.x2 && p.y >= box.y1 && p.y <= box.y2) { ids.add(el.data.id); out.push(el); }
  }
  for (const el of all) if (el.group === 'edges' && ids.has(el.data.source) && ids.has(el.data.target)) out.push(el);
  return out;
}

function startProgressiveLoad(cy, all, first, onProgress) {
  const loaded = new Set(first.map((el) => el.data.id));
  const total = all.filter((el) => el.group === 'nodes').length;
  // nodes nearest the view come first
  const c = cy.extent();
  const cx = (c.x1 + c.x2) / 2, cyy = (c.y1 + c.y2) / 2;
  const nodes = all.filter((el) => el.group === 'nodes' && !loaded.has(el.data.id))
    .sort((a, b) => dist(a) - dist(b));
  function dist(el) { const p = el.position || { x: 0, y: 0 }; return Math.abs(p.x - cx) + Math.abs(p.y - cyy); }
  let edges = all.filter((el) => el.group === 'edges' && !loaded.has(el.data.id));
  let next = 0;
  const state = { done: false };
  cy.scratch('_studioLoad', state);

  // step adds up to max nodes, then every link whose two ends are now there.
  // (Pages finish the load before they change the graph, so the elements
  // are the document's; an element already on the canvas is left as it is.)
  function step(max) {
    const batch = nodes.slice(next, next + max);
    next += batch.length;
    for (const el of batch) loaded.add(el.data.id);
    const rest = [];
    for (const e of edges) {
      if (loaded.has(e.data.source) && loaded.has(e.data.target)) batch.push(e);
      else rest.push(e);
    }
    edges = rest;
    if (batch.length) cy.batch(() => { for (const el of batch) if (cy.getElementById(el.data.id).empty()) cy.add(el); });
    if (next >= nodes.length) {
      end();
      return;
    }
    if (onProgress) onProgress(total - (nodes.length - next), total);
  }
  // Each step runs as a background task where the browser has them
  // (input, network and rendering go first), else as a timer.
  let cancelled = false; // finish() ran: the queued step does nothing
  const later = window.scheduler && typeof window.scheduler.postTask === 'function'
    ? (fn) => { window.scheduler.postTask(() => { if (!cancelled) fn(); }, { priority: 'background' }); }
    : (fn) => { setTimeout(() => { if (!cancelled) fn(); }, 0); };
  function end() {
    state.done = true;
    cancelled = true;
    cy.scratch('_studioLoad', null);
    if (onProgress) onProgress(total, total);
    cy.emit('studio-loaded');
  }
  function tick() {
    if (state.done || cy.destroyed()) return;
    step(PROGRESSIVE_BATCH);
    if (!state.done) later(tick);
  }
  state.finish = () => {
    if (state.done) return;
    cancelled = true;
    step(Infinity);
  };
  state.stop = () => { if (!state.done) end(); };
  state.start = () => {
    if (state.started) return;
    state.started = true;
    // after the next frame, so the page paints and answers input first
    requestAnimationFrame(() => later(tick));
  };
  if (onProgress) onProgress(total - nodes.length, total);
}

// startLoading lets a large chain's remaining elements load: a page calls
// it once it is ready, so loading never competes with the page opening.
export function startLoading(cy) {
  const st = cy && cy.scratch('_studioLoad');
  if (st && !st.done) st.start();
}

// showLoading is the usual onProgress: a "Drawing N of M nodes…" note in
// the page's #cy-loading, and data-canvas-loaded on root when done.
// The note is a polite live region, so its text changes at most every
// half second: a screen reader hears progress, not a stream of numbers.
export function showLoading(root) {
  let shownAt = 0;
  return function (loaded, total) {
    const done = loaded >= total;
    const el = document.getElementById('cy-loading');
    const now = performance.now();
    if (el && (done || now - shownAt >= 500)) {
      shownAt = now;
      el.hidden = done;
      el.textContent = 'Drawing ' + loaded + ' of ' + total + ' nodes…';
    }
    if (root) root.dataset.canvasLoaded = done ? '1' : '0';
  };
}

// loading reports whether cy is still adding a large chain's elements.
export function loading(cy) {
  const st = cy && cy.scratch('_studioLoad');
  return !!(st && !st.done);
}

// loadAll adds every element not yet loaded, at once.
export function loadAll(cy) {
  const st = cy && cy.scratch('_studioLoad');
  if (st && !st.done) st.finish();
}

// stopLoading drops what is not loaded yet, for a page about to redraw
// the whole graph itself.
export function stopLoading(cy) {
  const st = cy && cy.scratch('_studioLoad');
  if (st && !st.done) st.stop();
}

// quickFit fits the nodes in view from their positions alone: cy.fit also
// measures every label, which costs seconds on a 1,000-node chain.
export function quickFit(cy) {
  const nodes = cy.nodes();
  if (nodes.empty()) return;
  let x1 = Infinity, y1 = Infinity, x2 = -Infinity, y2 = -Infinity;
  nodes.forEach((n) => {
    const p = n.position();
    if (p.x < x1) x1 = p.x; if (p.x > x2) x2 = p.x;
    if (p.y < y1) y1 = p.y; if (p.y > y2) y2 = p.y;
  });
  x1 -= 90; x2 += 90; y1 -= 40; y2 += 40;
  const w = cy.width(), h = cy.height(), pad = 30;
  const zoom = Math.max(cy.minZoom(), Math.min(1.2, (w - 2 * pad) / (x2 - x1), (h - 2 * pad) / (y2 - y1)));
  cy.viewport({ zoom, pan: { x: (w - zoom * (x1 + x2)) / 2, y: (h - zoom * (y1 + y2)) / 2 } });
}

export function fit(cy) {
  loadAll(cy);
  const eles = cy.elements().not('.eh-handle');
  if (eles.length === 0) return;
  cy.fit(eles, 40);
  if (cy.zoom() > 1.2) { cy.zoom(1.2); cy.center(eles); }
}

// Single-key shortcuts (a letter, ?, + and −, Delete, Backspace, the
// arrows) act only while the focus is on the canvas (the graph or its
// controls): a key typed anywhere else, e.g. just after a properties field
// was redrawn under it, must not edit the chain. They can be turned off
// (WCAG 2.1.4); the choice is kept in this browser.
const SINGLE_KEYS = 'studio.singleKeyShortcuts';
export function singleKeysOn() {
  try { return localStorage.getItem(SINGLE_KEYS) !== 'off'; } catch { return true; }
}
export function setSingleKeys(on) {
  try { if (on) localStorage.removeItem(SINGLE_KEYS); else localStorage.setItem(SINGLE_KEYS, 'off'); } catch { /* storage off: this page only */ }
}
// canvasKey says whether the single-key shortcut in keydown e may act.
export function canvasKey(e) {
  if (e.ctrlKey || e.metaKey || e.altKey || !singleKeysOn()) return false;
  if (document.querySelector('dialog[open]')) return false;
  const t = document.activeElement;
  if (!t || t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName)) return false;
  return !!t.closest('.canvas-wrap');
}

export function focus(cy, ele) {
  if (!ele || ele.empty()) return;
  cy.animate({ center: { eles: ele }, zoom: Math.max(cy.zoom(), 0.9) }, { duration: 200 });
}
