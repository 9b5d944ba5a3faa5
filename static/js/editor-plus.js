// The "+" after the selected node and the menu of node kinds it opens, as
// n8n has them: a kind picked there (or from the menu that opens where an
// edge dragged from a node's handle is dropped on empty canvas) is added
// after that node and connected to it, in one undo step (ed.addNode). The
// kinds, their icons and help are the palette's own buttons, read from the
// page, so the two lists cannot differ. The A key opens the menu from the
// canvas. Editors only: a read-only editor (a role that cannot save) gets
// neither the "+" nor the menu.
import * as common from './common.js';
import { outcomeLabel } from './editor-canvas.js';

export function install(ed) {
  const wrap = ed.cyEl.closest('.canvas-wrap');
  const kinds = [...document.querySelectorAll('.palette-item')].map((b) => ({
    kind: b.dataset.kind,
    icon: (b.querySelector('.icon') || {}).textContent || '',
    help: (b.querySelector('.help') || {}).textContent || '',
  }));
  if (!wrap || !kinds.length || document.body.dataset.canEdit === 'no') { ed.bindPlus = () => {}; return; }

  const plus = common.el('button', { type: 'button', id: 'node-plus', class: 'node-plus', 'data-needs': 'edit', hidden: 'hidden', 'aria-haspopup': 'menu', 'aria-controls': 'kind-menu', 'aria-expanded': 'false', title: 'Add a node after this one (A)', text: '+' });
  const menu = common.el('div', { id: 'kind-menu', class: 'kind-menu', role: 'menu', 'data-needs': 'edit', hidden: 'hidden', 'aria-label': 'Add a node' });
  const items = kinds.map((k) => common.el('button', { type: 'button', role: 'menuitem', tabindex: '-1', class: 'kind-item', 'data-kind': k.kind },
    common.el('span', { class: 'icon', 'aria-hidden': 'true', text: k.icon }), ' ', common.el('span', { class: 'kind-name', text: k.kind }),
    common.el('span', { class: 'help', text: k.help })));
  const title = common.el('p', { class: 'kind-menu-title', id: 'kind-menu-title' });
  menu.setAttribute('aria-labelledby', 'kind-menu-title');
  menu.append(title, ...items);
  // while the menu of a dropped edge is open: the edge it will become,
  // dashed, from the node to the drop point, which is where the node lands
  const NS = 'http://www.w3.org/2000/svg';
  const ghost = document.createElementNS(NS, 'svg');
  ghost.setAttribute('class', 'kind-ghost');
  ghost.setAttribute('aria-hidden', 'true');
  ghost.style.display = 'none';
  ghost.append(document.createElementNS(NS, 'line'), document.createElementNS(NS, 'circle'));
  wrap.append(plus, menu, ghost);

  // what the open menu adds: after which node, and where (undefined: the
  // free spot to its right); and what gets the focus back when it closes
  let pending = null;

  // selectedOne is the one selected node, or null.
  function selectedOne() {
    const sel = ed.cy.nodes(':selected').not('.eh-handle');
    return sel.length === 1 ? sel[0] : null;
  }

  // toWrap turns a point on the canvas (rendered, px) into one inside the
  // canvas's wrapper, where the button and the menu are placed.
  function toWrap(x, y) {
    const a = ed.cyEl.getBoundingClientRect(), b = wrap.getBoundingClientRect();
    return { x: x + a.left - b.left, y: y + a.top - b.top };
  }

  // drawGhost draws (or hides) the dropped edge to be, in the current view.
  function drawGhost() {
    const src = pending && pending.pos && ed.cy ? ed.cy.getElementById(pending.afterId) : null;
    if (!src || src.empty()) { ghost.style.display = 'none'; return; }
    const bb = src.boundingBox({ includeLabels: false, includeOverlays: false });
    const pan = ed.cy.pan(), z = ed.cy.zoom();
    const a = toWrap(bb.x2 * z + pan.x, src.position('y') * z + pan.y);
    const b = toWrap(pending.pos.x * z + pan.x, pending.pos.y * z + pan.y);
    const [line, dot] = ghost.children;
    for (const [k, v] of [['x1', a.x], ['y1', a.y], ['x2', b.x], ['y2', b.y]]) line.setAttribute(k, String(Math.round(v)));
    for (const [k, v] of [['cx', b.x], ['cy', b.y], ['r', 5]]) dot.setAttribute(k, String(Math.round(v)));
    ghost.style.display = '';
  }

  // place puts the "+" at the right edge of the selected node, once a frame.
  let queued = false;
  function place() {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      drawGhost();
      const n = ed.cy && !ed.cy.destroyed() ? selectedOne() : null;
      if (!n || !n.visible()) { plus.hidden = true; return; }
      // past the edge handle (editor-canvas.js: centred 4 past the node's
      // box, 14 wide with its border), which must stay grabbable
      const bb = n.boundingBox({ includeLabels: false, includeOverlays: false });
      const pan = ed.cy.pan(), zoom = ed.cy.zoom();
      const p = toWrap((bb.x2 + 13) * zoom + pan.x + 4, n.position('y') * zoom + pan.y);
      const r = ed.cyEl.getBoundingClientRect();
      plus.hidden = p.x < 0 || p.y < 0 || p.x > r.width + 40 || p.y > r.height;
      plus.style.left = Math.round(p.x) + 'px';
      plus.style.top = Math.round(p.y) + 'px';
      plus.setAttribute('aria-label', 'Add a node after ' + n.id());
    });
  }

  // open shows the menu at (x, y) in the wrapper, for a node after node id;
  // at beside instead when it fits there (right of the "+", which then
  // stays in sight). A menu at a drop point (pos) that has no room to its
  // right opens to its left, not over the point.
  function open(afterId, at, pos, returnTo, beside) {
    pending = { afterId, pos, returnTo };
    // after an approval, say which of its outcomes the new node handles
    const src = afterId ? ed.doc.nodes.find((x) => x.node_id === afterId) : null;
    const outcome = src && src.kind === 'interrupt' ? outcomeLabel(src, ed.doc.edges || []) : '';
    title.textContent = afterId ? 'Add after ' + afterId + (outcome ? ', when ' + outcome : '') : 'Add a node';
    menu.hidden = false;
    plus.setAttribute('aria-expanded', 'true');
    const w = wrap.getBoundingClientRect();
    const mw = menu.offsetWidth, mh = menu.offsetHeight;
    if (beside && beside.x + mw <= w.width - 4) at = beside;
    else if (pos) at = { x: at.x + 12 + mw <= w.width - 4 || at.x - mw - 12 < 4 ? at.x + 12 : at.x - mw - 12, y: at.y - 12 };
    menu.style.left = Math.round(Math.max(4, Math.min(at.x, w.width - mw - 4))) + 'px';
    menu.style.top = Math.round(Math.max(4, Math.min(at.y, w.height - mh - 4))) + 'px';
    drawGhost();
    items[0].focus();
  }

  function close(restore) {
    if (menu.hidden) return;
    menu.hidden = true;
    plus.setAttribute('aria-expanded', 'false');
    const back = pending && pending.returnTo;
    pending = null;
    drawGhost();
    if (restore && back && document.contains(back)) back.focus({ preventScroll: true });
  }

  function pick(kind) {
    const p = pending;
    close(false);
    if (!p) return;
    ed.addNode(kind, p.pos, p.afterId);
  }

  // openFor opens the menu for the selected node, right of its "+" (else
  // below the node).
  function openFor(returnTo) {
    const n = selectedOne();
    if (!n) {
      ed.flash('Select the node to add after (or use the palette).');
      return;
    }
    const bb = n.renderedBoundingBox({ includeLabels: false, includeOverlays: false });
    // the "+" is centred on its top (translate -50%)
    const beside = plus.hidden ? null : { x: plus.offsetLeft + plus.offsetWidth + 6, y: plus.offsetTop - plus.offsetHeight / 2 };
    open(n.id(), toWrap(bb.x2 + 6, bb.y2 + 4), undefined, returnTo, beside);
  }

  plus.addEventListener('click', () => (menu.hidden ? openFor(plus) : close(true)));
  menu.addEventListener('click', (e) => {
    const it = e.target.closest('.kind-item');
    if (it) pick(it.dataset.kind);
  });
  // Keys pressed in the menu stay in it: the menu sits on the canvas, whose
  // single-key shortcuts (Delete, C, E, N, Z…) would otherwise act on the
  // chain behind it. A letter goes to the next kind starting with it.
  menu.addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    e.stopPropagation();
    const i = items.indexOf(document.activeElement);
    const go = (k) => { e.preventDefault(); items[(k + items.length) % items.length].focus(); };
    if (e.key === 'ArrowDown') go(i + 1);
    else if (e.key === 'ArrowUp') go(i - 1);
    else if (e.key === 'Home') go(0);
    else if (e.key === 'End') go(items.length - 1);
    else if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); close(true); }
    else if (e.key === 'Tab') close(false);
    else if (e.key.length === 1 && /\S/.test(e.key)) {
      const k = e.key.toLowerCase();
      for (let d = 1; d <= items.length; d++) {
        if (items[(i + d) % items.length].dataset.kind.startsWith(k)) { go(i + d); break; }
      }
    }
  });
  document.addEventListener('pointerdown', (e) => {
    if (!menu.hidden && !menu.contains(e.target) && e.target !== plus) close(false);
  }, true);

  // A with the canvas focused: the menu for the selected node.
  ed.openKindMenu = () => openFor(ed.cyEl);

  // bindPlus follows the canvas once it is built: the "+" tracks the
  // selection and the view, and an edge dropped on empty canvas opens the
  // menu there.
  ed.bindPlus = () => {
    const cy = ed.cy;
    cy.on('select unselect remove', place);
    cy.on('position', 'node:selected', place);
    cy.on('viewport resize', place);
    // the node the menu would add after is gone (undo, another tab's edit)
    cy.on('remove', 'node', (e) => { if (pending && pending.afterId === e.target.id()) close(false); });
    new ResizeObserver(place).observe(ed.cyEl);
    // edgehandles' cancel: the drag ended on no node. A drop next to the
    // source (a click on its handle) places the node to its right, as "+".
    cy.on('ehcancel', (e, source) => {
      if (!source || !e.position) return;
      const bb = source.boundingBox({ includeLabels: false });
      const near = e.position.x < bb.x2 + 60 && e.position.x > bb.x1 - 60 && e.position.y > bb.y1 - 40 && e.position.y < bb.y2 + 40;
      const pan = cy.pan(), zoom = cy.zoom();
      const at = toWrap(e.position.x * zoom + pan.x, e.position.y * zoom + pan.y);
      open(source.id(), at, near ? undefined : { x: e.position.x, y: e.position.y }, ed.cyEl);
    });
  };
}
