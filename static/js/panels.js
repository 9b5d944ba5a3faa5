// Resizable, collapsible panels of the designer: the side panel (its tabs:
// properties, validation, tests, triggers, MCP; editor-tabs.js) is resized
// by dragging the splitter at its left edge or with the arrow keys on it;
// the palette and the side panel collapse; the layout is remembered in this
// browser (localStorage).
import * as common from './common.js';
import { whenReady } from './editor.js';
(function () {
  const root = document.getElementById('editor');
  if (!root) return;
  const side = root.querySelector('.editor-body > .side');
  const palette = root.querySelector('.editor-body > .palette');
  if (!side || !palette) return;
  const KEY = 'studio.panels';
  const MIN = 260, MAX = 900, DEF = 380;

  let st = { side: DEF, sideOpen: true, paletteOpen: true };
  try { st = Object.assign(st, JSON.parse(localStorage.getItem(KEY) || '{}')); } catch { /* storage off or bad: defaults */ }
  const clamp = (w) => Math.max(MIN, Math.min(MAX, Math.min(w, window.innerWidth - 300)));
  const save = () => { try { localStorage.setItem(KEY, JSON.stringify(st)); } catch { /* storage off */ } };

  const splitter = common.el('div', { class: 'splitter', id: 'side-splitter', role: 'separator', tabindex: '0', 'aria-orientation': 'vertical', 'aria-controls': 'side', 'aria-label': 'Resize the side panel (arrow keys)', 'aria-valuemin': String(MIN), 'aria-valuemax': String(MAX), title: 'Drag to resize; double-click for the default width' });
  side.before(splitter);

  function apply() {
    st.side = clamp(Number(st.side) || DEF);
    side.style.width = st.side + 'px';
    side.hidden = !st.sideOpen;
    splitter.hidden = !st.sideOpen;
    palette.hidden = !st.paletteOpen;
    splitter.setAttribute('aria-valuenow', String(st.side));
    const sb = document.getElementById('btn-toggle-side'), pb = document.getElementById('btn-toggle-palette');
    if (sb) { sb.setAttribute('aria-pressed', String(!st.sideOpen)); sb.title = st.sideOpen ? 'Hide the side panel' : 'Show the side panel'; }
    if (pb) { pb.setAttribute('aria-pressed', String(!st.paletteOpen)); pb.title = st.paletteOpen ? 'Hide the palette' : 'Show the palette'; }
  }
  apply();

  splitter.addEventListener('pointerdown', (e) => {
    e.preventDefault();
    splitter.setPointerCapture(e.pointerId);
    const x0 = e.clientX, w0 = st.side;
    const move = (ev) => { st.side = clamp(w0 + (x0 - ev.clientX)); apply(); };
    const up = () => {
      splitter.removeEventListener('pointermove', move);
      splitter.removeEventListener('pointerup', up);
      save();
    };
    splitter.addEventListener('pointermove', move);
    splitter.addEventListener('pointerup', up);
  });
  splitter.addEventListener('dblclick', () => { st.side = DEF; apply(); save(); });
  splitter.addEventListener('keydown', (e) => {
    const d = { ArrowLeft: 20, ArrowRight: -20 }[e.key];
    if (!d) return;
    e.preventDefault();
    e.stopPropagation(); // not the canvas's arrow keys
    st.side = clamp(st.side + (e.shiftKey ? d * 5 : d));
    apply();
    save();
  });

  whenReady(() => {
    const controls = root.querySelector('.canvas-controls');
    if (!controls) return;
    const pb = common.el('button', { type: 'button', id: 'btn-toggle-palette', 'aria-label': 'Collapse the palette', text: '◧' });
    const sb = common.el('button', { type: 'button', id: 'btn-toggle-side', 'aria-label': 'Collapse the side panel', text: '◨' });
    pb.addEventListener('click', () => { st.paletteOpen = !st.paletteOpen; apply(); save(); });
    sb.addEventListener('click', () => { st.sideOpen = !st.sideOpen; apply(); save(); });
    controls.append(pb, sb);
    apply();
  });
})();
