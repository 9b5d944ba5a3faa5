// Keyboard shortcuts, the clipboard's events and the toolbar with its two
// dialogs (Run… and Save version…). Single-key shortcuts act only when the
// canvas has the focus (canvas.canvasKey) and never while a field is typed
// in or a dialog is open. Two act from anywhere in the editor, fields
// included: Ctrl+Enter (Cmd+Enter) runs the chain as Run… does, and Alt+T
// goes to the toolbar (so does the side panel's skip link).
import * as api from './api.js';
import * as canvas from './canvas.js';
import * as common from './common.js';

export function install(ed) {
  const { root, $, runBtn, saveStateEl } = ed;

  // ---- keyboard --------------------------------------------------------------

  function typing(e) {
    // composedPath: inside a shadow root (the code editor) e.target is its host
    const t = (e.composedPath && e.composedPath()[0]) || e.target;
    return t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
  }

  document.addEventListener('keydown', (e) => {
    if (typing(e) || document.querySelector('dialog[open]')) return;
    const mod = e.ctrlKey || e.metaKey;
    if (mod && (e.key === 'z' || e.key === 'Z')) { e.preventDefault(); if (e.shiftKey) ed.redo(); else ed.undo(); return; }
    if (mod && (e.key === 'y' || e.key === 'Y')) { e.preventDefault(); ed.redo(); return; }
    if (mod && (e.key === 'a' || e.key === 'A')) { e.preventDefault(); ed.cy.nodes().not('.eh-handle').select(); return; }
    if (!canvas.canvasKey(e)) return;
    if (e.key === 'Delete' || e.key === 'Backspace') { e.preventDefault(); ed.deleteSelection(); return; }
    if (e.key === 'c' || e.key === 'C') { e.preventDefault(); ed.connectSelected(); return; } // the picker's field must not get the c
    if (e.key === 'f') { canvas.fit(ed.cy); }
    if ((e.key === 'a' || e.key === 'A') && ed.openKindMenu && document.body.dataset.canEdit !== 'no') { e.preventDefault(); ed.openKindMenu(); }
  });

  document.addEventListener('copy', (e) => {
    if (typing(e)) return;
    const text = ed.copySelection();
    if (!text) return;
    e.clipboardData.setData('text/plain', text);
    e.preventDefault();
    ed.flash('Copied ' + ed.cy.$('node:selected').not('.eh-handle').length + ' node(s)');
  });
  document.addEventListener('cut', (e) => {
    if (typing(e)) return;
    const text = ed.copySelection();
    if (!text) return;
    e.clipboardData.setData('text/plain', text);
    e.preventDefault();
    ed.deleteSelection();
  });
  document.addEventListener('paste', (e) => {
    if (typing(e)) return;
    const text = e.clipboardData.getData('text/plain');
    if (text && ed.paste(text)) e.preventDefault();
  });

  // ---- toolbar -----------------------------------------------------------------

  $('btn-undo').addEventListener('click', () => ed.undo());
  $('btn-redo').addEventListener('click', () => ed.redo());
  $('btn-delete').addEventListener('click', () => ed.deleteSelection());
  $('btn-connect').addEventListener('click', () => ed.connectSelected());
  $('btn-fit').addEventListener('click', () => canvas.fit(ed.cy));
  $('btn-reload').addEventListener('click', () => location.reload());
  $('btn-layout').addEventListener('click', () => {
    ed.hideHandle();
    ed.mutate(() => {
      canvas.layout(ed.cy);
      for (const n of ed.doc.nodes) {
        const p = ed.cy.getElementById(n.node_id).position();
        n.position = { x: Math.round(p.x), y: Math.round(p.y) };
      }
    });
  });

  // ---- Run… ---------------------------------------------------------------------

  const runDialog = $('run-dialog');
  const runInput = $('run-input');
  // The run dialog starts with the last input this browser ran the chain
  // with, else the chain's sample input, else {}; typing is kept until a run.
  const lastInputKey = 'studio:last-input:' + ed.chainId;
  let runInputEdited = false;
  function prefillRunInput() {
    if (runInputEdited) return;
    let text = null;
    let from = '';
    try { text = localStorage.getItem(lastInputKey); } catch { text = null; }
    if (text) from = 'Pre-filled with the input of your last run of this chain.';
    else if (ed.doc && ed.doc.sample_input && typeof ed.doc.sample_input === 'object') {
      text = JSON.stringify(ed.doc.sample_input, null, 2);
      from = 'Pre-filled with the chain\'s sample input.';
    } else text = '{}';
    runInput.value = text;
    $('run-input-source').textContent = from;
    runInput.dispatchEvent(new Event('input'));
    runInputEdited = false;
  }
  // openRun is Run…: the waiting edit saved first, since it may fix or make
  // the errors that disable Run. It returns whether the dialog opened.
  async function openRun() {
    await ed.flush();
    if (runBtn.disabled) return false;
    $('run-result').replaceChildren();
    prefillRunInput();
    runDialog.showModal();
    runInput.focus();
    return true;
  }
  runBtn.addEventListener('click', openRun);

  // Ctrl+Enter (Cmd+Enter on a Mac) runs from anywhere in the editor: it
  // opens the Run dialog, and in the dialog starts the run. A field with a
  // Ctrl+Enter of its own (a test's form applies the test) marks itself
  // with data-own-ctrl-enter. Captured before the fields' own keys: the
  // code editor's Ctrl+Enter would insert a blank line. A Run that cannot
  // run says why instead.
  const ownCtrlEnter = (e) => (e.composedPath ? e.composedPath() : [e.target]).some((n) => n instanceof Element && n.hasAttribute('data-own-ctrl-enter'));
  window.addEventListener('keydown', async (e) => {
    if (e.key !== 'Enter' || !(e.ctrlKey || e.metaKey) || e.altKey || e.shiftKey || e.isComposing) return;
    if (!root.contains(e.target) && e.target !== document.body) return;
    const open = document.querySelector('dialog[open]');
    if (open && open !== runDialog) return; // another dialog's keys are its own
    if (!open && ownCtrlEnter(e)) return;
    e.preventDefault();
    e.stopPropagation();
    if (open) {
      if (!$('run-submit').disabled) $('run-form').requestSubmit();
      return;
    }
    if (document.body.dataset.canEdit === 'no') { ed.flash('Your role cannot run chains.'); return; }
    if (!(await openRun())) ed.flash(runBtn.title || 'Cannot run the chain now.');
  }, true);

  // ---- the way back to the toolbar ----------------------------------------------

  // toToolbar focuses the toolbar's first control that takes the focus (Run…
  // unless it is disabled).
  const toolbar = $('editor-toolbar');
  function toToolbar() {
    const first = [...toolbar.querySelectorAll('button, a[href], summary, input, select')]
      .find((x) => !x.disabled && x.offsetParent !== null);
    (first || toolbar).focus();
  }
  ed.toToolbar = toToolbar;
  window.addEventListener('keydown', (e) => {
    // e.code: on a Mac, Option+T types a character (e.key is †)
    if (e.code !== 'KeyT' || !e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
    if (document.querySelector('dialog[open]') || (!root.contains(e.target) && e.target !== document.body)) return;
    e.preventDefault();
    e.stopPropagation();
    toToolbar();
  }, true);
  const skip = $('skip-toolbar');
  if (skip) skip.addEventListener('click', (e) => { e.preventDefault(); toToolbar(); });
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

  // ---- The Export menu --------------------------------------------------------------

  // A <details> menu closes on a click elsewhere, after a choice, and on
  // Escape (the focus goes back to its button).
  const exportMenu = $('export-menu');
  if (exportMenu) {
    document.addEventListener('click', (e) => { if (exportMenu.open && !exportMenu.contains(e.target)) exportMenu.open = false; });
    exportMenu.addEventListener('click', (e) => { if (e.target.closest('a')) exportMenu.open = false; });
    exportMenu.addEventListener('keydown', (e) => {
      if (e.key === 'Escape' && exportMenu.open) { e.preventDefault(); e.stopPropagation(); exportMenu.open = false; exportMenu.querySelector('summary').focus(); }
    });
  }

  // ---- Save version… -------------------------------------------------------------

  // "Save version…": the edits are saved already; this names the current
  // version (the server writes it again as a named version).
  const svDialog = $('save-version-dialog');
  const svMessage = $('save-version-message');
  $('btn-save-version').addEventListener('click', async () => {
    await ed.flush();
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
    await ed.flush();
    let body;
    try {
      body = await api.post('/v1/chains/' + encodeURIComponent(ed.chainId) + '/versions', { message, version: ed.version });
    } catch (err) {
      out.replaceChildren(common.el('div', { class: 'form-error', text: 'Not saved: ' + err.message }));
      return;
    }
    ed.version = body.version;
    root.dataset.version = String(ed.version);
    ed.setSaveState('saved', 'Saved v' + ed.version + ', named'); // short: the toolbar stays on one line
    saveStateEl.title = 'v' + ed.version + ': ' + message;
    svDialog.close();
  });
}
