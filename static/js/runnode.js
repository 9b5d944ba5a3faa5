// "Run this node" in the editor: the selected node runs alone, the outputs
// it reads pinned from an earlier run (POST /v1/chains/{id}/nodes/{node}/run).
// The button goes into the node's property panel; the dialog comes from the
// server (the chain's latest runs, checked as sources); the node's output
// or error is shown in the panel with a link to the run.
import * as api from './api.js';
import * as common from './common.js';
import { studio } from './editor-api.js';
import { pinControls } from './pins.js';
(function () {
  const root = document.getElementById('editor');
  const props = document.getElementById('props');
  if (!root || !props) return;
  const chainId = root.dataset.chainId;
  const results = new Map(); // node id → the last node run's result element, kept across selections
  let dialog = null;
  let opener = null;

  // ---- the button in the node's panel ---------------------------------------

  function decorate() {
    const panel = props.querySelector('.props[data-target="node"]');
    if (!panel || panel.querySelector('#runnode-section')) return;
    const id = panel.dataset.id;
    const out = common.el('div', { id: 'runnode-result', class: 'runnode-result', role: 'status', 'aria-live': 'polite' });
    if (results.has(id)) out.append(results.get(id));
    const section = common.el('section', { id: 'runnode-section', class: 'runnode-section', 'aria-label': 'Run this node' },
      common.el('button', { type: 'button', id: 'btn-run-node', 'aria-haspopup': 'dialog', 'data-node-id': id, title: 'Run only this node, with the outputs it reads taken from an earlier run' }, 'Run this node…'),
      out);
    const h = panel.querySelector('h2');
    if (h) h.after(section); else panel.prepend(section);
  }
  new MutationObserver(decorate).observe(props, { childList: true, subtree: false });
  decorate();

  // ---- the dialog ----------------------------------------------------------------

  function ensureDialog() {
    if (dialog) return dialog;
    dialog = common.el('dialog', { id: 'runnode-dialog', class: 'runnode-dialog', 'aria-labelledby': 'runnode-title', 'aria-describedby': 'runnode-what' });
    root.append(dialog);
    dialog.addEventListener('close', () => { if (opener && opener.isConnected) opener.focus(); });
    dialog.addEventListener('submit', onSubmit);
    // keep Tab inside the dialog
    dialog.addEventListener('keydown', (e) => {
      if (e.key !== 'Tab') return;
      const f = [...dialog.querySelectorAll('button, input:not([type=hidden]), a[href]')].filter((x) => !x.disabled && !(x.type === 'radio' && !x.checked));
      if (!f.length) return;
      const first = f[0], last = f[f.length - 1];
      if (e.shiftKey && document.activeElement === first) { e.preventDefault(); last.focus(); }
      else if (!e.shiftKey && document.activeElement === last) { e.preventDefault(); first.focus(); }
    });
    return dialog;
  }

  async function openDialog(nodeId, btn, before) {
    if (btn) opener = btn;
    // the node must be saved as shown before it can run
    if (studio.flush) await studio.flush();
    const dlg = ensureDialog();
    dlg.replaceChildren(common.el('p', { class: 'hint', text: 'Looking for runs with this node\'s inputs…' }));
    if (!dlg.open) dlg.showModal();
    // before: the next page of the older runs that reached the node
    const q = before ? '?before=' + encodeURIComponent(before) : '';
    try {
      dlg.innerHTML = (await api.html('GET', '/chains/' + encodeURIComponent(chainId) + '/nodes/' + encodeURIComponent(nodeId) + '/runnode' + q)).html;
    } catch (e) {
      // the route answers an error with a fragment to show; without one, its message
      if (e.body) dlg.innerHTML = e.body;
      else dlg.replaceChildren(common.el('div', { class: 'form-error', text: e.message }));
    }
    if (!dlg.querySelector('form')) { // an error fragment: let it be closed
      dlg.append(common.el('div', { class: 'dialog-actions' }, common.el('button', { type: 'button', class: 'close-dialog', id: 'runnode-cancel' }, 'Close')));
    }
    const first = dlg.querySelector('input[name=from_run]:checked') || dlg.querySelector('#runnode-submit:not([disabled])') || dlg.querySelector('#runnode-more') || dlg.querySelector('#runnode-cancel');
    if (first) first.focus();
  }

  document.addEventListener('click', (e) => {
    const b = e.target.closest('#btn-run-node');
    if (b) openDialog(b.dataset.nodeId, b);
    const more = e.target.closest('#runnode-more');
    if (more) openDialog(more.closest('form').dataset.nodeId, null, more.dataset.before);
  });

  async function onSubmit(e) {
    e.preventDefault();
    const form = e.target;
    const nodeId = form.dataset.nodeId;
    const err = form.querySelector('#runnode-error');
    const choice = form.querySelector('input[name=from_run]:checked');
    if (!choice) { err.replaceChildren(common.el('div', { class: 'form-error', text: 'Choose where the upstream outputs come from.' })); return; }
    // "no earlier run": nothing pinned, and no run looked for
    const body = choice.value ? { from_run: choice.value } : { pinned: {} };
    body.version = Number(form.dataset.version);
    const submit = form.querySelector('#runnode-submit');
    submit.disabled = true;
    let data;
    try {
      data = await api.post('/v1/chains/' + encodeURIComponent(chainId) + '/nodes/' + encodeURIComponent(nodeId) + '/run', body);
    } catch (e) {
      err.replaceChildren(common.el('div', { class: 'form-error' }, common.el('strong', { text: 'Not run' }), common.el('pre', { text: e.message })));
      return;
    } finally { submit.disabled = false; }
    dialog.close();
    follow(nodeId, data.run_id);
  }

  // ---- the result -----------------------------------------------------------------

  function show(nodeId, el) {
    results.set(nodeId, el);
    const panel = props.querySelector('.props[data-target="node"]');
    if (!panel || panel.dataset.id !== nodeId) return; // another node is selected: shown when it is again
    const out = panel.querySelector('#runnode-result');
    if (out) out.replaceChildren(el);
  }

  function runLink(runId) {
    return common.el('a', { href: '/runs/' + encodeURIComponent(runId), class: 'runnode-link', id: 'runnode-link' }, 'Open the run');
  }

  const pretty = (v) => JSON.stringify(v, null, 2);

  async function follow(nodeId, runId) {
    show(nodeId, common.el('div', { class: 'runnode-out', 'data-run-id': runId },
      common.el('p', {}, common.el('span', { class: 'status status-running', text: 'running' }), ' ', runLink(runId))));
    let wait = 150;
    const until = Date.now() + 10 * 60 * 1000; // a node that runs longer is followed on its run page
    let run = null;
    while (Date.now() < until) {
      await new Promise((r) => setTimeout(r, wait));
      wait = Math.min(wait * 1.5, 2000);
      try { run = await api.get('/v1/runs/' + encodeURIComponent(runId)); } catch { continue; } // asked again after the next wait
      if (!run.active && run.status !== 'running' && run.status !== 'queued') break;
    }
    if (!run) return;
    const nr = (run.nodes || []).find((n) => n.node_id === nodeId) || {};
    const parts = [common.el('p', {},
      common.el('span', { class: 'status status-' + run.status, id: 'runnode-status', text: run.status.replace(/_/g, ' ') }), ' ',
      nr.status ? common.el('span', { class: 'phase ph-' + nr.status, text: nr.status }) : '', ' ',
      runLink(runId))];
    if (nr.matched) parts.push(common.el('p', { class: 'hint', text: 'matched ' + nr.matched }));
    const error = nr.error || (run.error && run.error.message);
    if (error) parts.push(common.el('div', { class: 'form-error', id: 'runnode-node-error' }, common.el('strong', { text: 'Error' }), common.el('pre', { text: error })));
    if (nr.status === 'done' || nr.output !== undefined) {
      parts.push(common.el('details', { open: '' }, common.el('summary', { text: 'Output' }), common.el('pre', { class: 'json', id: 'runnode-output', text: pretty(nr.output === undefined ? null : nr.output) })));
      // a node that ran (not one whose pin stood in) can have its output pinned
      if (nr.status === 'done' && !nr.pinned && !nr.credentialed) parts.push(pinControls(nodeId, nr.output === undefined ? null : nr.output));
    }
    show(nodeId, common.el('div', { class: 'runnode-out', 'data-run-id': runId, 'data-status': run.status }, ...parts));
  }
})();
