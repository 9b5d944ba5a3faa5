// Sticky notes on the designer's canvas. They live in the chain
// document's `notes` (the engine ignores them) and are drawn as HTML over
// the canvas, in a plane that follows Cytoscape's pan and zoom, so their
// text is ordinary text: selectable, editable, read by a screen reader.
// Every change goes through the editor's mutate: one undo step, saved.
import * as canvas from './canvas.js';
import * as common from './common.js';
import { studio } from './editor-api.js';
import { whenReady } from './editor.js';
(function () {
  const root = document.getElementById('editor');
  if (!root) return;
  const S = () => studio;
  const W = 200, H = 110; // the default size (docs/chain-format.md)
  const MAX_NOTES = 500; // engine.MaxNotes
  const MAX_TEXT = 4096; // engine.MaxNoteTextBytes (bytes; the field counts characters, the encoder checks bytes)

  let plane = null;
  const els = new Map(); // note id → element

  function notes() {
    const d = S().doc;
    if (!Array.isArray(d.notes)) d.notes = [];
    return d.notes;
  }
  const noteById = (id) => notes().find((n) => n.id === id);

  function newId() {
    const taken = new Set(notes().map((n) => n.id));
    for (let i = 1; ; i++) if (!taken.has('note' + i)) return 'note' + i;
  }

  // commit applies one change to the document as one undo step. An empty
  // notes list is left out of the document (as before any note existed).
  function commit(fn) {
    S().mutate(() => {
      fn();
      if (S().doc.notes && !S().doc.notes.length) delete S().doc.notes;
    });
    render();
  }

  function addNote() {
    if (notes().length >= MAX_NOTES) { S().flash('A chain holds at most ' + MAX_NOTES + ' notes.'); return; }
    const cy = S().cy;
    const ext = cy.extent();
    const id = newId();
    // the middle of the view, a little up and left so it does not hide the node there
    const n = { id, text: '', position: { x: Math.round((ext.x1 + ext.x2) / 2 - W / 2 - 40), y: Math.round((ext.y1 + ext.y2) / 2 - H / 2 - 40) } };
    commit(() => notes().push(n));
    const el = els.get(id);
    if (el) el.querySelector('textarea').focus();
  }

  function place() {
    const cy = S().cy;
    const p = cy.pan(), z = cy.zoom();
    plane.style.transform = 'translate(' + p.x + 'px,' + p.y + 'px) scale(' + z + ')';
  }

  function make(n) {
    const ta = common.el('textarea', { 'aria-label': 'Note ' + n.id, maxlength: String(MAX_TEXT), spellcheck: 'true', placeholder: 'Note…' });
    const del = common.el('button', { type: 'button', class: 'note-del', 'aria-label': 'Delete note ' + n.id, title: 'Delete this note', text: '×' });
    const grip = common.el('div', { class: 'note-grip', title: 'Drag to move; arrow keys move it when focused', tabindex: '0', role: 'button', 'aria-label': 'Move note ' + n.id + ' (arrow keys)' });
    const el = common.el('div', { class: 'note', 'data-id': n.id }, grip, del, ta);
    // typing: one undo step per burst, saved when the burst ends
    const typed = common.debounce(() => {
      const cur = noteById(n.id);
      if (cur && cur.text !== ta.value) commit(() => { cur.text = ta.value; });
    }, 400);
    ta.addEventListener('input', typed);
    ta.addEventListener('blur', () => { if (typed.pending()) { typed.cancel(); const cur = noteById(n.id); if (cur && cur.text !== ta.value) commit(() => { cur.text = ta.value; }); } });
    del.addEventListener('click', () => commit(() => { S().doc.notes = notes().filter((x) => x.id !== n.id); }));
    // drag by the grip
    grip.addEventListener('pointerdown', (e) => {
      e.preventDefault();
      grip.setPointerCapture(e.pointerId);
      const cur = noteById(n.id);
      const start = { x: e.clientX, y: e.clientY, px: cur.position.x, py: cur.position.y };
      const z = S().cy.zoom();
      const move = (ev) => {
        el.style.left = (start.px + (ev.clientX - start.x) / z) + 'px';
        el.style.top = (start.py + (ev.clientY - start.y) / z) + 'px';
      };
      const up = (ev) => {
        grip.removeEventListener('pointermove', move);
        grip.removeEventListener('pointerup', up);
        const to = { x: Math.round(start.px + (ev.clientX - start.x) / z), y: Math.round(start.py + (ev.clientY - start.y) / z) };
        if (to.x !== start.px || to.y !== start.py) commit(() => { noteById(n.id).position = to; });
      };
      grip.addEventListener('pointermove', move);
      grip.addEventListener('pointerup', up);
    });
    grip.addEventListener('keydown', (e) => {
      const d = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] }[e.key];
      if (!d) return;
      e.preventDefault();
      e.stopPropagation(); // not the canvas's arrow keys
      const k = e.shiftKey ? 200 : 20;
      commit(() => { const cur = noteById(n.id); cur.position = { x: cur.position.x + d[0] * k, y: cur.position.y + d[1] * k }; });
      els.get(n.id).querySelector('.note-grip').focus();
    });
    // a resize (the corner handle) is saved when the pointer is let go
    el.addEventListener('pointerup', () => {
      const cur = noteById(n.id);
      if (!cur) return;
      const w = Math.round(el.offsetWidth), h = Math.round(el.offsetHeight);
      if (Math.abs(w - (cur.width || W)) > 1 || Math.abs(h - (cur.height || H)) > 1) {
        commit(() => { cur.width = Math.max(40, Math.min(4000, w)); cur.height = Math.max(40, Math.min(4000, h)); });
      }
    });
    return el;
  }

  // render brings the plane in line with the document (after an undo too),
  // leaving alone a note whose text is being typed.
  function render() {
    const want = new Map(notes().map((n) => [n.id, n]));
    for (const [id, el] of els) if (!want.has(id)) { el.remove(); els.delete(id); }
    for (const n of want.values()) {
      let el = els.get(n.id);
      if (!el) { el = make(n); els.set(n.id, el); plane.append(el); }
      el.style.left = n.position.x + 'px';
      el.style.top = n.position.y + 'px';
      el.style.width = (n.width || W) + 'px';
      el.style.height = (n.height || H) + 'px';
      const ta = el.querySelector('textarea');
      if (ta.value !== n.text && document.activeElement !== ta) ta.value = n.text;
    }
    root.dataset.notes = String(want.size);
  }

  whenReady(() => {
    const cy = S().cy;
    const layer = common.el('div', { id: 'notes-layer', class: 'notes-layer' });
    plane = common.el('div', { class: 'notes-plane' });
    layer.append(plane);
    document.getElementById('cy').after(layer);
    cy.on('viewport', place);
    place();
    render();
    const controls = document.querySelector('.canvas-controls');
    const btn = common.el('button', { type: 'button', id: 'btn-note', title: 'Add a sticky note (N)', text: '+ Note' });
    btn.dataset.needs = 'edit'; // hidden from viewers
    btn.addEventListener('click', addNote);
    if (controls) controls.prepend(btn);
    root.addEventListener('studio:rebuilt', render);
  });

  document.addEventListener('keydown', (e) => {
    if (!plane || !canvas.canvasKey(e)) return;
    if (e.key === 'n' || e.key === 'N') { e.preventDefault(); addNote(); }
  });
})();
