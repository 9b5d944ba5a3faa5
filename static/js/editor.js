// The designer. The page keeps the chain document (what the canvas needs);
// every edit is sent to the server, which saves it as a new version and
// answers with the validation panel (HTML). Undo/redo keep snapshots of the
// document.
//
// This module starts the editor: it loads the document, builds the canvas
// and wires the modules that each keep one concern. They share one context,
// ed (the document, the canvas, the version, the page's elements), and call
// each other through it:
//   editor-doc.js        the document, its ids, undo/redo and mutate
//   editor-save.js       saving (patches, conflicts) and validation markers
//   editor-canvas.js     the canvas: redraws, adding, deleting, connecting, the edge handle
//   editor-clipboard.js  copy and paste
//   editor-props.js      the property panel and renaming (editor-rename.js)
//   editor-table.js      the node list and the validation panel's links
//   editor-tabs.js       the side panel's tabs and their counts
//   editor-keys.js       keyboard shortcuts (Ctrl+Enter runs), the toolbar, Run… and Save version…
//   editor-publish.js    Publish… and whether the draft is what is published
// Add-ons (navigate.js, notes.js, …) use studio (editor-api.js) and the
// studio:ready / studio:rebuilt / studio:saved events.
import * as api from './api.js';
import * as canvas from './canvas.js';
import { studio } from './editor-api.js';
import * as canvasPart from './editor-canvas.js';
import * as clipboard from './editor-clipboard.js';
import * as docPart from './editor-doc.js';
import * as keys from './editor-keys.js';
import * as plus from './editor-plus.js';
import * as props from './editor-props.js';
import * as publish from './editor-publish.js';
import * as savePart from './editor-save.js';
import * as table from './editor-table.js';
import * as tabs from './editor-tabs.js';

export { studio };

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
  const $ = (id) => document.getElementById(id);
  const ed = {
    root, $, hooks,
    chainId: root.dataset.chainId,
    version: Number(root.dataset.version), // the version the server holds, which saves build on
    doc: null, // the chain document being edited
    cy: null, // its canvas
    focusPropsNext: false, // a new node's fields take the focus when its panel is drawn
    propsEl: $('props'),
    issuesEl: $('issues'),
    saveStateEl: $('save-state'),
    runBtn: $('btn-run'),
    cyEl: $('cy'),
  };
  docPart.install(ed);
  savePart.install(ed);
  canvasPart.install(ed);
  clipboard.install(ed);
  props.install(ed);
  table.install(ed);
  tabs.install(ed);
  keys.install(ed);
  publish.install(ed);
  plus.install(ed);
  Object.defineProperties(studio, Object.getOwnPropertyDescriptors({
    rtts: ed.rtts, saveSteps: ed.saveSteps,
    get doc() { return ed.doc; }, get cy() { return ed.cy; }, get version() { return ed.version; },
    edit: (fn) => ed.mutate(fn),
    flush: () => ed.flush(), // saves the waiting edit and waits for saves in flight
  }));

  // The editor fills the window below the page's top bar (app.css, .editor):
  // its top is measured, not assumed, since the bar wraps on a narrow window.
  function measureChrome() {
    root.style.setProperty('--editor-top', Math.max(0, Math.round(root.getBoundingClientRect().top + window.scrollY)) + 'px');
  }
  measureChrome();
  const topbar = document.querySelector('.topbar');
  if (topbar) new ResizeObserver(measureChrome).observe(topbar);

  const showLoading = canvas.showLoading(root);

  async function init() {
    let data;
    if (root.dataset.doc) {
      data = { doc: JSON.parse(root.dataset.doc), version: Number(root.dataset.version) };
      ed.saved.fromText(root.dataset.doc, false); // what the server holds: saves diff against it
      delete root.dataset.doc;
    } else {
      // GET /v1/chains/{id}: {id, name, version, doc, issues, …}; its text
      // is the saved copy, and the diff reads the doc inside it
      const text = await (await api.request('GET', '/v1/chains/' + encodeURIComponent(ed.chainId))).text();
      data = JSON.parse(text);
      ed.saved.fromText(text, true);
    }
    performance.mark('studio:data');
    const doc = data.doc;
    ed.doc = doc;
    ed.version = data.version;
    doc.nodes = doc.nodes || [];
    doc.edges = doc.edges || [];
    const cy = canvas.createCy(ed.cyEl, doc, { editable: true, progressive: true, onProgress: (loaded, total) => {
      showLoading(loaded, total);
      if (loaded >= total) studio.canvasLoadedAt = performance.now();
    } });
    ed.cy = cy;
    ed.bindCanvas();
    ed.bindPlus();
    performance.mark('studio:cy');
    if (cy.__laidOut) {
      for (const n of doc.nodes) {
        const p = cy.getElementById(n.node_id).position();
        n.position = { x: Math.round(p.x), y: Math.round(p.y) };
      }
    }

    ed.renderNodeTable();
    performance.mark('studio:table');
    ed.markIssues();
    performance.mark('studio:issues');
    await ed.showProps();
    performance.mark('studio:props');
    // ready once the canvas has painted its first frame, not just been built
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    performance.mark('studio:painted');
    root.dataset.ready = '1';
    studio.readyAt = performance.now();
    // how much of the canvas was drawn when the page became ready: the
    // progressive opening is measured here, not raced from outside
    studio.nodesAtReady = cy.nodes().length;
    // ---- canvas navigation (navigate.js): what it may call ----
    const { mutate, addNode, addEdge, copySelection, paste, deleteSelection, flash, hideHandle, nodeById, rebuild } = ed;
    Object.assign(studio, { mutate, addNode, addEdge, copySelection, paste, deleteSelection, flash, hideHandle, nodeById, rebuild });
    root.dispatchEvent(new CustomEvent('studio:ready'));
    canvas.startLoading(cy);
  }

  init().catch((err) => {
    ed.setSaveState('error', 'Could not load: ' + err.message);
    throw err;
  });
})();
