// Canvas navigation for the designer: find a node (Ctrl+F),
// zoom to the selection, move the selection with the arrow keys, duplicate
// (Ctrl+D), connect to a node picked by name, a minimap, and `?` for the
// list of every shortcut. Every edit goes through the editor's mutate, so
// each action is one undo step and is saved like any other.
import * as canvas from './canvas.js';
import * as common from './common.js';
import { studio } from './editor-api.js';
import { hooks, whenReady } from './editor.js';
(function () {
  const root = document.getElementById('editor');
  if (!root) return;
  const $ = (id) => document.getElementById(id);
  const S = () => studio;

  // The shortcut list is the one source for the `?` dialog.
  const SHORTCUTS = [
    ['Ctrl+Enter (⌘+Enter)', 'Run the chain from anywhere in the editor, fields too: opens Run…, and in it starts the run (a chain with errors says why not)'],
    ['Alt+T', 'Go to the toolbar from anywhere (the side panel\'s "Skip to toolbar" link does too)'],
    ['← / → on the side tabs', 'Show the previous / next side panel (Home, End: the first, the last); one Tab stop for all the tabs'],
    ['Ctrl+F', 'Find a node by id, label or kind; Enter goes to the next match, Esc closes'],
    ['Z', 'Zoom to the selection (nothing selected: the whole chain)'],
    ['F', 'Fit the whole chain in view'],
    ['+ / −', 'Zoom in / out (the mouse wheel zooms 1.2× a notch)'],
    ['Arrow keys', 'Move the selected nodes (Shift: ten times as far)'],
    ['C', 'Connect: one node selected picks the target by name; several join in selection order'],
    ['Ctrl+D', 'Duplicate the selected nodes'],
    ['E', 'Extract the selected nodes to a new sub-chain (asks its name; a skill node takes their place)'],
    ['A', 'Add a node after the selected one, connected to it: a menu of kinds (arrow keys, Enter; Esc closes). The "+" beside a selected node opens it too, and so does an edge dragged from a node\'s handle onto empty canvas'],
    ['N', 'Add a sticky note in the middle of the view (drag it by its top bar)'],
    ['Ctrl+A', 'Select every node'],
    ['Delete', 'Delete the selection'],
    ['Enter', 'Open the selected node in the node view: its input, parameters and output at full size (double-click does too; on a node list row, Enter selects it first)'],
    ['Ctrl+C / Ctrl+X / Ctrl+V', 'Copy, cut, paste nodes (across tabs too)'],
    ['Ctrl+Z / Ctrl+Shift+Z', 'Undo / redo (each action above is one step)'],
    ['Esc', 'Close a dialog or the find bar'],
    ['← / → on the splitter', 'Resize the side panel (its left edge); ◧ / ◨ collapse the palette and the side panel'],
    ['?', 'This list'],
  ];
  const MOVE = 20; // px per arrow press; Shift ×10
  const PICK_ROWS = 50; // target picker rows shown at once (a 10,000-node chain filters first)

  function typing(e) {
    // composedPath: inside a shadow root (the code editor) e.target is its host
    const t = (e.composedPath && e.composedPath()[0]) || e.target;
    return t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
  }
  function selectedNodes(cy) { return cy.nodes(':selected').not('.eh-handle'); }

  // ---- zoom ---------------------------------------------------------------

  function zoomTo(cy, eles) {
    canvas.loadAll(cy);
    if (!eles || eles.empty()) eles = cy.nodes().not('.eh-handle');
    if (eles.empty()) return;
    const bb = eles.boundingBox({ includeLabels: false });
    const pad = 60;
    const zoom = Math.max(cy.minZoom(), Math.min(1.5, (cy.width() - 2 * pad) / Math.max(bb.w, 1), (cy.height() - 2 * pad) / Math.max(bb.h, 1)));
    cy.animate({ zoom, pan: { x: cy.width() / 2 - zoom * (bb.x1 + bb.w / 2), y: cy.height() / 2 - zoom * (bb.y1 + bb.h / 2) } }, { duration: 150 });
  }
  function zoomBy(cy, f) {
    cy.zoom({ level: Math.max(cy.minZoom(), Math.min(cy.maxZoom(), cy.zoom() * f)), renderedPosition: { x: cy.width() / 2, y: cy.height() / 2 } });
  }

  // ---- find ---------------------------------------------------------------

  let find = null;
  function matchesOf(q) {
    q = q.trim().toLowerCase();
    if (!q) return [];
    return S().doc.nodes.filter((n) => [n.node_id, n.label, n.kind, n.name].some((v) => typeof v === 'string' && v.toLowerCase().includes(q))).map((n) => n.node_id);
  }
  function openFind() {
    if (!find) {
      const input = common.el('input', { type: 'search', id: 'find-input', placeholder: 'Find node: id, label or kind', 'aria-label': 'Find a node by id, label or kind', autocomplete: 'off', spellcheck: 'false' });
      const count = common.el('span', { id: 'find-count', class: 'hint', role: 'status', 'aria-live': 'polite' });
      const close = common.el('button', { type: 'button', class: 'find-close', 'aria-label': 'Close find', text: '×' });
      const bar = common.el('div', { id: 'find-bar', class: 'find-bar', role: 'search' }, input, count, close);
      $('cy').parentElement.append(bar);
      find = { bar, input, count, matches: [], at: -1 };
      input.addEventListener('input', () => { find.matches = matchesOf(input.value); find.at = -1; step(1); });
      input.addEventListener('keydown', (e) => {
        if (e.key === 'Enter') { e.preventDefault(); step(e.shiftKey ? -1 : 1); }
        if (e.key === 'Escape') { e.preventDefault(); closeFind(); }
      });
      close.addEventListener('click', closeFind);
    }
    find.bar.hidden = false;
    find.input.focus();
    find.input.select();
  }
  function closeFind() {
    if (!find) return;
    find.bar.hidden = true;
    $('cy').focus();
  }
  // step goes to the next (or previous) match: selects it and centres on it.
  function step(dir) {
    const cy = S().cy;
    const m = find.matches;
    if (!m.length) { find.count.textContent = find.input.value.trim() ? 'no match' : ''; return; }
    find.at = (find.at + dir + m.length) % m.length;
    find.count.textContent = (find.at + 1) + ' of ' + m.length;
    canvas.loadAll(cy);
    const ele = cy.getElementById(m[find.at]);
    cy.$(':selected').unselect();
    ele.select();
    cy.stop();
    cy.animate({ center: { eles: ele }, zoom: Math.max(cy.zoom(), 0.9) }, { duration: 150 });
  }

  // ---- shortcuts dialog ------------------------------------------------------

  let help = null;
  function openHelp() {
    if (!help) {
      const rows = SHORTCUTS.map(([k, what]) => common.el('tr', {}, common.el('th', { scope: 'row' }, common.el('kbd', { text: k })), common.el('td', { text: what })));
      const table = common.el('table', { class: 'list compact shortcuts' }, common.el('tbody', {}, ...rows));
      // WCAG 2.1.4: the single-key shortcuts can be turned off
      const toggle = common.el('input', { type: 'checkbox', id: 'single-keys', 'aria-describedby': 'single-keys-help' });
      toggle.checked = canvas.singleKeysOn();
      toggle.addEventListener('change', () => canvas.setSingleKeys(toggle.checked));
      help = common.el('dialog', { id: 'shortcuts-dialog', 'aria-labelledby': 'shortcuts-title' },
        common.el('h2', { id: 'shortcuts-title', text: 'Keyboard shortcuts' }),
        common.el('p', { class: 'single-keys' }, common.el('label', {}, toggle, ' Single-key shortcuts')),
        common.el('p', { class: 'hint', id: 'single-keys-help', text: 'The shortcuts of one key (a letter, ?, + / −, Delete, the arrow keys) act only while the canvas has the focus (click it, or Tab to it). Turned off, they do nothing; the Ctrl shortcuts still work. Remembered in this browser.' }),
        table,
        common.el('div', { class: 'dialog-actions' }, common.el('button', { type: 'button', class: 'close-dialog primary', text: 'Close' })));
      root.append(help);
    }
    help.querySelector('#single-keys').checked = canvas.singleKeysOn();
    help.showModal();
    help.querySelector('.close-dialog').focus();
  }

  // ---- connect: the target picker ------------------------------------------

  let picker = null;
  hooks.pickTarget = function (src) {
    if (!picker) {
      const input = common.el('input', { type: 'text', id: 'pick-input', role: 'combobox', 'aria-expanded': 'true', 'aria-controls': 'pick-list', 'aria-autocomplete': 'list', autocomplete: 'off', spellcheck: 'false', 'aria-label': 'Target node: type to filter' });
      const list = common.el('ul', { id: 'pick-list', class: 'pick-list', role: 'listbox', 'aria-label': 'Target nodes' });
      const title = common.el('h2', { id: 'pick-title' });
      const dlg = common.el('dialog', { id: 'pick-dialog', 'aria-labelledby': 'pick-title' }, title, input, list,
        common.el('div', { class: 'dialog-actions' }, common.el('button', { type: 'button', class: 'close-dialog', text: 'Cancel' })));
      root.append(dlg);
      picker = { dlg, input, list, title, src: '', ids: [], at: 0 };
      input.addEventListener('input', () => { picker.at = 0; renderPick(); });
      input.addEventListener('keydown', (e) => {
        if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
          e.preventDefault();
          const n = picker.list.children.length;
          if (n) { picker.at = (picker.at + (e.key === 'ArrowDown' ? 1 : -1) + n) % n; markPick(); }
        } else if (e.key === 'Enter') {
          e.preventDefault();
          const li = picker.list.children[picker.at];
          if (li && li.dataset.id) choose(li.dataset.id);
        }
      });
      list.addEventListener('click', (e) => {
        const li = e.target.closest('li[data-id]');
        if (li) choose(li.dataset.id);
      });
      dlg.addEventListener('close', restoreFocus);
    }
    picker.opener = document.activeElement;
    picker.src = src;
    picker.title.textContent = 'Connect ' + src + ' to…';
    picker.input.value = '';
    picker.at = 0;
    renderPick();
    picker.dlg.showModal();
    picker.input.focus();
  };
  function renderPick() {
    const q = picker.input.value.trim().toLowerCase();
    const doc = S().doc;
    const taken = new Set(doc.edges.filter((e) => e.source === picker.src).map((e) => e.target));
    const rows = [];
    let more = 0;
    for (const n of doc.nodes) {
      if (n.node_id === picker.src) continue;
      if (q && ![n.node_id, n.label, n.kind, n.name].some((v) => typeof v === 'string' && v.toLowerCase().includes(q))) continue;
      if (rows.length >= PICK_ROWS) { more++; continue; }
      const li = common.el('li', { role: 'option', id: 'pick-' + rows.length, 'data-id': n.node_id },
        common.el('code', { text: n.node_id }), ' ', common.el('span', { class: 'hint', text: (n.label ? n.label + ' · ' : '') + n.kind + (taken.has(n.node_id) ? ' · connected' : '') }));
      rows.push(li);
    }
    if (!rows.length) rows.push(common.el('li', { class: 'hint', text: 'No node matches.' }));
    if (more) rows.push(common.el('li', { class: 'hint', text: more + ' more: type to narrow' }));
    picker.list.replaceChildren(...rows);
    markPick();
  }
  function markPick() {
    [...picker.list.children].forEach((li, i) => li.setAttribute('aria-selected', i === picker.at ? 'true' : 'false'));
    const cur = picker.list.children[picker.at];
    if (cur && cur.id) { picker.input.setAttribute('aria-activedescendant', cur.id); cur.scrollIntoView({ block: 'nearest' }); }
  }
  // A closed dialog's field can stay the focused element for a moment; a
  // shortcut pressed then (Ctrl+Z right after Enter) would go to the field,
  // so focus goes back at once to where it was, or nowhere.
  function restoreFocus() {
    const a = document.activeElement;
    if (a && a !== picker.input && a !== document.body && !picker.dlg.contains(a)) return;
    const o = picker.opener;
    if (o && o.isConnected && o !== document.body && !picker.dlg.contains(o)) o.focus();
    else if (a && a !== document.body) a.blur();
  }
  function choose(dst) {
    picker.dlg.close();
    restoreFocus();
    const st = S();
    const id = st.addEdge(picker.src, dst);
    if (id) {
      st.cy.$(':selected').unselect();
      st.cy.getElementById(id).select();
      st.flash('Connected ' + picker.src + ' → ' + dst + '.');
    }
  }

  // ---- move, duplicate ----------------------------------------------------------

  function moveSelection(dx, dy) {
    const st = S();
    const sel = selectedNodes(st.cy);
    if (sel.empty()) return false;
    st.hideHandle();
    st.mutate(() => {
      st.cy.batch(() => sel.forEach((ele) => {
        const n = st.nodeById(ele.id());
        if (!n) return;
        const p = ele.position();
        const to = { x: Math.round(p.x + dx), y: Math.round(p.y + dy) };
        ele.position(to);
        n.position = to;
      }));
    });
    return true;
  }
  function duplicate() {
    const st = S();
    const text = st.copySelection();
    if (!text) { st.flash('Select the nodes to duplicate.'); return; }
    st.paste(text);
  }

  // ---- minimap ----------------------------------------------------------------
  // Every node of the document as a dot (from the document, so a large chain
  // shows whole while it is still drawing) and the view as a frame; a click
  // or a drag moves the view there.

  function minimap(cy) {
    const W = 200, H = 130;
    const mini = common.el('canvas', { id: 'minimap', class: 'minimap', width: String(W), height: String(H), role: 'img', 'aria-label': 'Minimap: click or drag to move the view' });
    const collapse = common.el('button', { type: 'button', id: 'minimap-toggle', class: 'minimap-toggle', 'aria-expanded': 'true', 'aria-controls': 'minimap', title: 'Hide the minimap', text: '▾ Map' });
    const box = common.el('div', { class: 'minimap-box' }, collapse, mini);
    $('cy').parentElement.append(box);
    const ctx = mini.getContext('2d');
    let frame = null; // model box the minimap shows
    let pending = false;
    function bounds() {
      let x1 = Infinity, y1 = Infinity, x2 = -Infinity, y2 = -Infinity;
      for (const n of S().doc.nodes) {
        const p = n.position;
        if (!p) continue;
        if (p.x < x1) x1 = p.x; if (p.x > x2) x2 = p.x;
        if (p.y < y1) y1 = p.y; if (p.y > y2) y2 = p.y;
      }
      if (x1 === Infinity) return null;
      x1 -= 100; x2 += 100; y1 -= 50; y2 += 50;
      const s = Math.max((x2 - x1) / W, (y2 - y1) / H);
      return { x1: (x1 + x2) / 2 - (W * s) / 2, y1: (y1 + y2) / 2 - (H * s) / 2, s };
    }
    function draw() {
      pending = false;
      if (mini.hidden || cy.destroyed()) return;
      frame = bounds();
      ctx.clearRect(0, 0, W, H);
      if (!frame) return;
      const sel = new Set(selectedNodes(cy).map((n) => n.id()));
      // nodes at their size (156 × 54), never under 2 × 1.5 px
      const w = Math.max(2, 156 / frame.s), h = Math.max(1.5, 54 / frame.s);
      const box = (n, k) => ctx.fillRect((n.position.x - frame.x1) / frame.s - (w * k) / 2, (n.position.y - frame.y1) / frame.s - (h * k) / 2, w * k, h * k);
      ctx.fillStyle = canvas.cssVar('--node-border', '#8a94a8');
      for (const n of S().doc.nodes) if (n.position && !sel.has(n.node_id)) box(n, 1);
      ctx.fillStyle = canvas.cssVar('--accent', '#2f6fed');
      for (const id of sel) {
        const n = S().nodeById(id);
        if (n && n.position) box(n, w < 4 ? 2 : 1);
      }
      const ext = cy.extent();
      ctx.strokeStyle = canvas.cssVar('--accent', '#2f6fed');
      ctx.lineWidth = 1.5;
      ctx.strokeRect((ext.x1 - frame.x1) / frame.s, (ext.y1 - frame.y1) / frame.s, ext.w / frame.s, ext.h / frame.s);
    }
    const redraw = () => { if (!pending) { pending = true; requestAnimationFrame(draw); } };
    cy.on('viewport position select unselect add remove', redraw);
    root.addEventListener('studio:saved', redraw);
    new ResizeObserver(redraw).observe($('cy'));
    function panTo(e) {
      if (!frame) return;
      const r = mini.getBoundingClientRect();
      const mx = frame.x1 + (e.clientX - r.left) * frame.s, my = frame.y1 + (e.clientY - r.top) * frame.s;
      const z = cy.zoom();
      cy.stop();
      cy.pan({ x: cy.width() / 2 - mx * z, y: cy.height() / 2 - my * z });
    }
    mini.addEventListener('pointerdown', (e) => { mini.setPointerCapture(e.pointerId); panTo(e); });
    mini.addEventListener('pointermove', (e) => { if (mini.hasPointerCapture(e.pointerId)) panTo(e); });
    let open = true;
    try { open = localStorage.getItem('studio.minimap') !== 'closed'; } catch { /* storage off */ }
    const show = (on) => {
      mini.hidden = !on;
      collapse.setAttribute('aria-expanded', String(on));
      collapse.textContent = on ? '▾ Map' : '▸ Map';
      collapse.title = on ? 'Hide the minimap' : 'Show the minimap';
      if (on) redraw();
    };
    collapse.addEventListener('click', () => {
      open = mini.hidden;
      show(open);
      try { localStorage.setItem('studio.minimap', open ? 'open' : 'closed'); } catch { /* storage off */ }
    });
    show(open);
  }

  // ---- wiring -------------------------------------------------------------------

  whenReady(() => {
    const cy = S().cy;
    minimap(cy);
    const controls = common.el('div', { class: 'canvas-controls', role: 'group', 'aria-label': 'View' },
      common.el('button', { type: 'button', id: 'btn-zoom-in', title: 'Zoom in (+)', 'aria-label': 'Zoom in', text: '+' }),
      common.el('button', { type: 'button', id: 'btn-zoom-out', title: 'Zoom out (−)', 'aria-label': 'Zoom out', text: '−' }),
      common.el('button', { type: 'button', id: 'btn-zoom-sel', title: 'Zoom to the selection (Z)', text: 'Zoom to selection' }),
      common.el('button', { type: 'button', id: 'btn-find', title: 'Find a node (Ctrl+F)', text: 'Find' }),
      common.el('button', { type: 'button', id: 'btn-shortcuts', title: 'Keyboard shortcuts (?)', 'aria-label': 'Keyboard shortcuts', text: '?' }));
    $('cy').parentElement.append(controls);
    $('btn-zoom-in').addEventListener('click', () => zoomBy(cy, 1.2));
    $('btn-zoom-out').addEventListener('click', () => zoomBy(cy, 1 / 1.2));
    $('btn-zoom-sel').addEventListener('click', () => zoomTo(cy, selectedNodes(cy)));
    $('btn-find').addEventListener('click', openFind);
    $('btn-shortcuts').addEventListener('click', openHelp);
    root.dataset.navigate = '1';
  });

  document.addEventListener('keydown', (e) => {
    const st = S();
    if (!st || !st.mutate) return; // the editor is not ready yet
    const mod = e.ctrlKey || e.metaKey;
    // Ctrl+F finds in the canvas even from a field: the browser's own find
    // cannot see canvas text
    if (mod && !e.shiftKey && !e.altKey && (e.key === 'f' || e.key === 'F') && !document.querySelector('dialog[open]')) { e.preventDefault(); openFind(); return; }
    if (typing(e) || document.querySelector('dialog[open]')) return;
    const cy = st.cy;
    if (mod && (e.key === 'd' || e.key === 'D')) { e.preventDefault(); duplicate(); return; }
    if (!canvas.canvasKey(e)) return;
    if (e.key === '?') { e.preventDefault(); openHelp(); return; }
    if (e.key === 'z' || e.key === 'Z') { zoomTo(cy, selectedNodes(cy)); return; }
    if (e.key === '+' || e.key === '=') { zoomBy(cy, 1.2); return; }
    if (e.key === '-' || e.key === '−') { zoomBy(cy, 1 / 1.2); return; }
    const arrows = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };
    const d = arrows[e.key];
    if (d) {
      const k = e.shiftKey ? MOVE * 10 : MOVE;
      if (moveSelection(d[0] * k, d[1] * k)) e.preventDefault();
    }
  });
})();
