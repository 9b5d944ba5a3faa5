// Saving and validation. An edit is saved a moment after it is made (one
// save in flight at a time; an edit made meanwhile is saved after it) as a
// patch of the nodes and edges that changed, or the whole document when the
// diff cannot say it or the server refuses the patch. The server answers
// with the validation panel, whose issues mark the canvas and say whether
// the chain can run. A conflict (another tab saved first) stops saving
// until the page is reloaded: nothing is overwritten.
import * as api from './api.js';
import * as common from './common.js';
import { SavedCopy } from './patch.js';

export function install(ed) {
  const { root, $, issuesEl, saveStateEl, runBtn } = ed;
  let saving = false;
  let saveAgain = false;
  let conflict = false;
  let marked = new Set(); // ids of the elements markIssues gave a marker

  // saved is what the server holds at ed.version (patch.js): a save sends
  // the patch from it
  ed.saved = new SavedCopy();
  ed.rtts = []; // each save's round trip, for the browser suite's figures
  ed.saveSteps = []; // where each save's time went

  // The texts are short on purpose: the state keeps one width (app.css) so
  // the toolbar never wraps mid-edit (see .save-state).
  function setSaveState(state, text, title) {
    saveStateEl.dataset.state = state;
    saveStateEl.textContent = text;
    if (title) saveStateEl.title = title;
    else saveStateEl.removeAttribute('title');
  }
  ed.setSaveState = setSaveState;

  const saveSoon = common.debounce(() => save(), 300);
  // A viewer may look and try things, but the server refuses
  // saves: say so instead of sending them.
  const readOnly = document.body.dataset.canEdit === 'no';
  ed.scheduleSave = () => {
    if (conflict) return;
    if (readOnly) { setSaveState('readonly', 'Read only', 'Your role cannot save: changes here are not kept'); return; }
    setSaveState('pending', 'Unsaved…', 'Unsaved changes: saved in a moment');
    saveSoon();
  };

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
      const d = full ? null : ed.saved.diff(ed.doc);
      const text = d ? null : JSON.stringify(ed.doc);
      const body = d ? JSON.stringify({ base_version: ed.version, patch: d.patch }) : '{"base_version":' + ed.version + ',"doc":' + text + '}';
      const next = d ? d.next : null;
      const tSent = performance.now();
      const res = await api.request('POST', '/chains/' + encodeURIComponent(ed.chainId) + '/save', { body, accept: 'html' });
      const html = await res.text();
      const tBack = performance.now();
      const state = res.headers.get('X-Save-State');
      if (state === 'patch_refused') {
        ed.saved.forget(); // the server's copy is not what this page thinks: send it all
        retryFull = true;
      } else if (state === 'saved') {
        // what the server now holds; the full form keeps the text to diff later
        if (next) ed.saved.took(next);
        else ed.saved.fromText(text, false);
        ed.version = Number(res.headers.get('X-Chain-Version'));
        root.dataset.version = String(ed.version);
        issuesEl.innerHTML = html;
        markIssues();
        // an edit made while this save was in flight is not saved yet: say so
        if (saveAgain || saveSoon.pending()) setSaveState('pending', 'Unsaved…', 'Unsaved changes: saved in a moment');
        else setSaveState('saved', 'Saved v' + ed.version);
        root.dispatchEvent(new CustomEvent('studio:saved', { detail: { version: ed.version } })); // tests.js runs the tests
        // where the time went, for the browser suite's figures
        ed.saveSteps.push({ form: d ? 'patch' : 'full', bytes: body.length, diff: tSent - t0, request: tBack - tSent,
          server: res.headers.get('Server-Timing') || '', after: performance.now() - tBack });
        if (ed.saveSteps.length > 100) ed.saveSteps.shift();
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
      ed.rtts.push(rtt);
      root.dataset.rtt = rtt.toFixed(1);
      root.dataset.saves = String(ed.rtts.length);
    }
    if (saveAgain) { saveAgain = false; save(); }
  }

  // flush saves now if an edit is waiting, and waits for saving to finish.
  ed.flush = async () => {
    if (saveSoon.pending()) { saveSoon.cancel(); await save(); }
    while (saving) await new Promise((r) => setTimeout(r, 20));
  };

  // markIssues marks the canvas's elements the validation panel names, and
  // enables Run only for a chain without errors.
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
    const cy = ed.cy;
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
  ed.markIssues = markIssues;
}
