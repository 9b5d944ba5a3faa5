// "Why did it go this way" on the run page: hover or focus an edge of the
// canvas to read the decision on it ("fired: `output.score > 5` —
// `output.score` was 7"); a node's drawer lists why it ran, or for a skipped
// node the chain of causes back to the decision that pruned it, each step a
// button that centres the canvas on it. Everything comes from
// GET /v1/runs/{id}/nodes/{node}/why (the node that decides an edge is its
// source). run.js owns the canvas; this file only reads it.
import * as api from './api.js';
import * as canvas from './canvas.js';
import * as common from './common.js';
(function () {
  const root = document.getElementById('runpage');
  if (!root) return;
  const runId = root.dataset.runId;
  const cyEl = document.getElementById('cy');
  const wrap = cyEl && cyEl.closest('.canvas-wrap');
  const drawer = document.getElementById('drawer');
  if (!cyEl || !wrap) return;

  // the stylesheet beside this module (the same version in its path)
  document.head.append(common.el('link', { rel: 'stylesheet', href: new URL('../css/why.css', import.meta.url).href }));

  // ---- answers ------------------------------------------------------------------

  // Answers are kept per node once the run has stopped; while it runs a
  // node's answer can change with every event, so it is asked again.
  const cache = new Map();
  const settled = () => !['running', 'queued'].includes(root.dataset.status);
  new MutationObserver(() => cache.clear()).observe(root, { attributes: true, attributeFilter: ['data-status'] });

  async function whyOf(node) {
    if (cache.has(node)) return cache.get(node);
    const p = api.get('/v1/runs/' + encodeURIComponent(runId) + '/nodes/' + encodeURIComponent(node) + '/why');
    if (settled()) cache.set(node, p);
    p.catch(() => cache.delete(node));
    return p;
  }

  // ---- words --------------------------------------------------------------------

  const code = (s) => common.el('code', { text: s });

  // readsText: "`output.score` was 7, `output.x` does not exist"
  function reads(d) {
    const out = [];
    for (const r of d.reads || []) {
      if (out.length) out.push(', ');
      out.push(code(r.path), r.missing ? ' does not exist' : ' was ', r.missing ? '' : code(r.value));
    }
    return out;
  }

  // stepParts: the decision on an edge (or a router's test, a join) as
  // words, the outcome first. answer is the deciding node's answer (for a
  // router's chosen handle).
  function stepParts(d, answer) {
    const cls = d.outcome === 'fired' ? 'why-fired' : d.outcome === 'failed' || d.result === 'error' ? 'why-failed' : 'why-not';
    const head = (t) => common.el('span', { class: cls, text: t });
    const withReads = (parts) => {
      const r = reads(d);
      return r.length ? parts.concat([' — '], r) : parts;
    };
    if (d.note && !d.rule) return [head(d.note === 'no decision recorded' ? 'no decision recorded' : d.note)];
    if (d.kind === 'join') return [head('skipped: '), 'every input edge was pruned (join)'];
    if (d.kind === 'node') return [head('skipped: '), 'not needed' + (d.note ? ' (' + d.note + ')' : '')];
    if (d.kind === 'branch_condition' || d.kind === 'case') {
      const what = d.kind === 'case' ? 'case “' + d.handle + '”' : 'condition';
      if (d.result === 'not_evaluated') return [head(what + ': not evaluated'), ' (an earlier case matched)'];
      return withReads([head(what + ' ' + (d.result === 'error' ? 'failed' : d.result) + ': '), code(d.expr || '')]);
    }
    switch (d.rule) {
      case 'pruned_upstream_skipped': return [head('not taken: '), 'its source ', code(d.node), ' was skipped'];
      case 'upstream_failed': return [head('not taken: '), d.note || 'its source failed'];
      case 'unconditional': return [head('fired: '), 'no condition'];
      case 'loop_cap_reached': return withReads([head('not taken: '), 'loop cap reached' + (d.expr ? ' (' : '')].concat(d.expr ? [code(d.expr), ')'] : []));
      case 'default_no_match':
        if (d.outcome === 'fired' || d.outcome === 'deferred') return [head(d.outcome === 'deferred' ? 'default, after the fan-out: ' : 'default: '), 'nothing matched'];
        return [head('not taken: '), 'another fallback edge was taken'];
    }
    if (d.expr) {
      if (d.result === 'not_evaluated') return [head('not evaluated: '), code(d.expr), ' (an earlier edge matched first)'];
      if (d.result === 'error') return [head('failed: '), code(d.expr), ' — ' + (d.error || 'error')];
      const verb = d.outcome === 'fired' ? 'fired: ' : d.outcome === 'held' ? 'waiting (the loop went round): ' : 'not taken: ';
      return withReads([head(verb), code(d.expr)]);
    }
    if (d.handle) { // a router's edge: say what the router chose
      if (d.outcome === 'fired') return [head('fired: '), code(d.node), ' chose “' + d.handle + '”'];
      // a cause names what the router chose and how (its tests, their reads)
      const matched = d.chose || (answer && answer.node === d.node && answer.matched);
      const parts = [head('not taken: '), code(d.node), matched ? ' chose “' + matched + '”' : ' chose another edge'];
      for (const t of d.tests || []) {
        if (t.result === 'not_evaluated') continue;
        parts.push('; ', ...stepParts(t, answer));
      }
      return parts;
    }
    if (d.rule === 'all_matches') return [head('not taken: '), 'default — a guard matched'];
    if (d.rule === 'first_match') return [head('not taken: '), 'an earlier edge matched'];
    if (d.note) return [head(d.note)];
    return [head(d.outcome || 'not decided yet')];
  }

  const plain = (parts) => parts.map((p) => (typeof p === 'string' ? p : p.textContent)).join('');

  function edgeName(d) {
    return d.node + ' → ' + (d.target || '?');
  }

  // ---- the canvas -----------------------------------------------------------------

  const tip = common.el('div', { class: 'why-tip', id: 'why-tip', role: 'tooltip', hidden: '' });
  wrap.append(tip);
  let tipEdge = null; // the edge the tip is about
  let tipSeq = 0;

  function cy() { return window.__run && window.__run.cy; }

  function placeTip() {
    const c = cy();
    if (!tipEdge || !c || tip.hidden) return;
    const e = c.getElementById(tipEdge);
    if (e.empty()) return;
    const m = e.renderedMidpoint();
    const off = cyEl.offsetTop;
    tip.style.left = Math.round(cyEl.offsetLeft + m.x) + 'px';
    tip.style.top = Math.round(off + m.y) + 'px';
  }

  function hideTip() {
    tipSeq++;
    tip.hidden = true;
    const c = cy();
    if (c && tipEdge) c.getElementById(tipEdge).removeClass('why-focus');
    tipEdge = null;
  }

  // edgeDecision: the answer about an edge, from its source's answer.
  async function edgeDecision(edgeId) {
    const c = cy();
    const e = c && c.getElementById(edgeId);
    if (!e || e.empty()) return null;
    const src = e.data('source');
    const a = await whyOf(src);
    const d = (a.decisions || []).find((x) => x.edge === edgeId);
    return { answer: a, d: d || { node: src, target: e.data('target'), edge: edgeId, note: a.status === 'not_reached' || a.status === 'start' ? 'not decided yet: ' + src + ' has not finished' : 'no decision recorded' } };
  }

  async function showTip(edgeId, button) {
    const seq = ++tipSeq;
    const c = cy();
    if (!c) return;
    if (tipEdge && tipEdge !== edgeId) c.getElementById(tipEdge).removeClass('why-focus');
    tipEdge = edgeId;
    c.getElementById(edgeId).addClass('why-focus');
    let parts;
    let name = edgeId;
    try {
      const r = await edgeDecision(edgeId);
      if (!r) return;
      name = edgeName(r.d);
      parts = stepParts(r.d, r.answer);
    } catch (err) {
      parts = ['could not read why: ' + err.message];
    }
    if (seq !== tipSeq) return; // another edge since
    tip.replaceChildren(common.el('span', { class: 'why-edge-name', text: name }), common.el('span', { class: 'why-text' }, ...parts));
    tip.hidden = false;
    tip.dataset.edge = edgeId;
    placeTip();
    if (button) button.setAttribute('aria-label', 'Edge ' + name + ': ' + plain(parts));
  }

  // ---- the edges as a keyboard list (roving focus: one tab stop, arrows move) ----

  const list = common.el('ul', { class: 'why-edges', id: 'why-edges', 'aria-label': 'Edges of the chain: arrow keys move, each says why it fired or not' });
  wrap.append(list);
  let buttons = [];

  function buildEdgeList() {
    const run = window.__run;
    const doc = run && run.doc;
    const edges = doc ? (doc.edges || []).filter((e) => e.id) : [];
    buttons = edges.map((e, k) => common.el('button', {
      type: 'button', class: 'why-edge', 'data-edge-id': e.id, tabindex: k === 0 ? '0' : '-1',
      'aria-label': 'Edge ' + e.source + ' → ' + e.target + (e.condition ? ', if ' + e.condition : '') + ': press to centre it',
      'aria-describedby': 'why-tip', text: 'Edge ' + e.source + ' → ' + e.target,
    }));
    list.replaceChildren(...buttons.map((b) => common.el('li', {}, b)));
  }

  list.addEventListener('focusin', (ev) => {
    const b = ev.target.closest('.why-edge');
    if (!b) return;
    for (const o of buttons) o.tabIndex = o === b ? 0 : -1;
    const c = cy();
    if (c && c.getElementById(b.dataset.edgeId).empty()) canvas.loadAll(c);
    const e = c && c.getElementById(b.dataset.edgeId);
    if (e && e.nonempty() && !inView(e)) centre(e);
    showTip(b.dataset.edgeId, b);
  });
  list.addEventListener('focusout', (ev) => {
    if (!list.contains(ev.relatedTarget)) hideTip();
  });
  list.addEventListener('keydown', (ev) => {
    const k = buttons.indexOf(document.activeElement);
    if (k < 0) return;
    let n = -1;
    if (ev.key === 'ArrowDown' || ev.key === 'ArrowRight') n = Math.min(k + 1, buttons.length - 1);
    else if (ev.key === 'ArrowUp' || ev.key === 'ArrowLeft') n = Math.max(k - 1, 0);
    else if (ev.key === 'Home') n = 0;
    else if (ev.key === 'End') n = buttons.length - 1;
    else if (ev.key === 'Escape') { hideTip(); return; }
    if (n < 0) return;
    ev.preventDefault();
    buttons[n].focus();
  });
  list.addEventListener('click', (ev) => {
    const b = ev.target.closest('.why-edge');
    const c = cy();
    if (b && c) centre(c.getElementById(b.dataset.edgeId));
  });

  function inView(ele) {
    const c = cy();
    const bb = ele.renderedBoundingBox();
    return bb.x1 >= 0 && bb.y1 >= 0 && bb.x2 <= c.width() && bb.y2 <= c.height();
  }

  function centre(ele) {
    const c = cy();
    if (!c || !ele || ele.empty()) return;
    c.stop();
    c.animate({ center: { eles: ele }, zoom: Math.max(c.zoom(), 0.9) }, { duration: 200, complete: placeTip });
  }

  // ---- the drawer: why this node ran, or the chain of causes of a skip ----------

  function stepButton(d, answer) {
    const parts = stepParts(d, answer);
    const where = d.edge ? 'edge ' + edgeName(d) : 'node ' + d.node;
    const b = common.el('button', { type: 'button', class: 'linklike why-step', 'data-node-id': d.node || '', 'data-edge-id': d.edge || '' },
      common.el('span', { class: 'why-where', text: where }), ...parts);
    b.setAttribute('aria-label', where + ': ' + plain(parts) + '. Centre the canvas on it');
    return b;
  }

  async function augmentDrawer() {
    const box = drawer && drawer.querySelector('.drawer[data-node-id]');
    if (!box || box.dataset.why) return;
    const node = box.dataset.nodeId;
    box.dataset.why = 'loading';
    let a;
    try { a = await whyOf(node); } catch (err) { box.dataset.why = 'error'; return; }
    if (!box.isConnected) return;
    box.dataset.why = 'done';
    let title = '';
    let steps = [];
    if (a.status === 'skip') { title = 'Why skipped'; steps = a.causes || []; }
    else if (a.status === 'done' || a.status === 'error') { title = 'Why it ran'; steps = a.incoming || []; }
    const tests = (a.decisions || []).filter((d) => !d.edge);
    if (!title && !tests.length) return;
    const sec = common.el('section', { class: 'why-panel', id: 'why-panel', 'aria-label': title || 'Decisions' });
    if (title) {
      sec.append(common.el('h3', { text: title }));
      if (steps.length) {
        const ol = common.el('ol', { class: 'why-causes' });
        for (const d of steps) ol.append(common.el('li', {}, stepButton(d, a)));
        sec.append(ol);
      }
      if (a.note) sec.append(common.el('p', { class: 'hint', text: a.note }));
    }
    if (tests.length) { // a router: how it chose its handle
      sec.append(common.el('h3', { text: 'How it chose' }));
      const ol = common.el('ol', { class: 'why-tests' });
      for (const d of tests) ol.append(common.el('li', {}, ...stepParts(d, a)));
      sec.append(ol);
    }
    const facts = box.querySelector('dl.facts');
    if (facts) facts.after(sec); else box.append(sec);
  }

  if (drawer) {
    new MutationObserver(() => { augmentDrawer(); }).observe(drawer, { childList: true });
    drawer.addEventListener('click', (ev) => {
      const b = ev.target.closest('.why-step');
      const c = cy();
      if (!b || !c) return;
      canvas.loadAll(c);
      const ele = b.dataset.edgeId ? c.getElementById(b.dataset.edgeId) : c.getElementById(b.dataset.nodeId);
      if (ele.empty()) return;
      centre(ele);
      if (b.dataset.edgeId) showTip(b.dataset.edgeId);
      else hideTip();
    });
  }

  // ---- start once run.js has the canvas ---------------------------------------------

  function start() {
    const c = cy();
    if (!c) return;
    // the focused edge, drawn over the run colours
    const style = () => {
      const accent = canvas.cssVar('--accent', '#2f6fed');
      c.style().selector('edge.why-focus').style({ width: 5, opacity: 1, 'line-color': accent, 'target-arrow-color': accent, 'underlay-color': accent, 'underlay-opacity': 0.2, 'underlay-padding': 4 }).update();
    };
    style();
    document.addEventListener('studio:theme', () => setTimeout(style, 0));
    c.on('mouseover', 'edge.flow', (e) => showTip(e.target.id()));
    c.on('mouseout', 'edge.flow', () => { if (!list.contains(document.activeElement)) hideTip(); });
    c.on('viewport', placeTip);
    cyEl.addEventListener('mouseleave', () => { if (!list.contains(document.activeElement)) hideTip(); });
    document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && !tip.hidden) hideTip(); });
    buildEdgeList();
    augmentDrawer();
    root.dataset.whyReady = '1';
  }
  if (root.dataset.ready === '1') start();
  else {
    const mo = new MutationObserver(() => {
      if (root.dataset.ready === '1') { mo.disconnect(); start(); }
    });
    mo.observe(root, { attributes: true, attributeFilter: ['data-ready'] });
  }
})();
