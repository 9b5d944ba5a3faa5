// Extract to sub-chain: the selected nodes move into a new
// chain and one skill node takes their place. The server does the rewrite
// and refuses what it cannot do faithfully (POST /v1/chains/{id}/extract,
// engine/edit); it creates the new chain only when both documents
// validate. Here we ask the name, send the editor's current document, and
// apply the rewritten parent as one undo step, saved like any edit.
import * as api from './api.js';
import * as canvas from './canvas.js';
import * as common from './common.js';
import { studio } from './editor-api.js';
(function () {
  const root = document.getElementById('editor');
  if (!root) return;
  const S = () => studio;
  const chainId = root.dataset.chainId;

  function selectedIds() {
    const cy = S().cy;
    const sel = new Set(cy.nodes(':selected').not('.eh-handle').map((n) => n.id()));
    // document order, so the new chain lists its nodes as this one did
    return S().doc.nodes.map((n) => n.node_id).filter((id) => sel.has(id));
  }

  let dlg = null;
  function open() {
    const ids = selectedIds();
    if (!ids.length) { S().flash('Select the nodes to extract first.'); return; }
    if (!dlg) {
      const input = common.el('input', { type: 'text', id: 'extract-name', name: 'name', required: '', maxlength: '200', autocomplete: 'off', spellcheck: 'false' });
      const err = common.el('div', { id: 'extract-error', role: 'alert' });
      const form = common.el('form', { method: 'dialog' },
        common.el('h2', { id: 'extract-title' }),
        common.el('p', { class: 'hint', id: 'extract-hint' }),
        common.el('label', { for: 'extract-name', text: 'Name of the new chain' }), input, err,
        common.el('div', { class: 'dialog-actions' },
          common.el('button', { type: 'submit', class: 'primary', id: 'extract-ok', text: 'Extract' }),
          common.el('button', { type: 'button', class: 'close-dialog', text: 'Cancel' })));
      dlg = common.el('dialog', { id: 'extract-dialog', 'aria-labelledby': 'extract-title' }, form);
      root.append(dlg);
      dlg.querySelector('.close-dialog').addEventListener('click', () => dlg.close());
      form.addEventListener('submit', (e) => { e.preventDefault(); submit(); });
    }
    dlg.ids = ids;
    dlg.querySelector('#extract-title').textContent = 'Extract ' + ids.length + ' node' + (ids.length === 1 ? '' : 's') + ' to a sub-chain';
    dlg.querySelector('#extract-hint').textContent = 'A new chain gets ' + ids.join(', ') + ' and the edges among them; one skill node calling it takes their place here.';
    dlg.querySelector('#extract-error').replaceChildren();
    const input = dlg.querySelector('#extract-name');
    input.value = '';
    dlg.showModal();
    input.focus();
  }

  async function submit() {
    const input = dlg.querySelector('#extract-name');
    const ok = dlg.querySelector('#extract-ok');
    const err = dlg.querySelector('#extract-error');
    const name = input.value.trim();
    if (!name) { err.replaceChildren(common.el('div', { class: 'form-error', text: 'Give the new chain a name.' })); input.focus(); return; }
    ok.disabled = true;
    let data;
    try {
      data = await api.post('/v1/chains/' + encodeURIComponent(chainId) + '/extract', { nodes: dlg.ids, name, doc: S().doc });
    } catch (e) {
      err.replaceChildren(common.el('div', { class: 'form-error' }, common.el('strong', { text: 'Not extracted' }), common.el('pre', { text: e.message })));
      input.focus();
      return;
    } finally { ok.disabled = false; }
    dlg.close();
    const parent = data.parent;
    const skill = parent.nodes.find((n) => n.kind === 'skill' && n.name === data.chain.name && dlg.ids.includes(n.node_id));
    // one undo step: the whole document is replaced in place (the editor
    // keeps its reference to it)
    S().mutate(() => {
      const doc = S().doc;
      for (const k of Object.keys(doc)) delete doc[k];
      Object.assign(doc, parent);
    });
    S().rebuild();
    const cy = S().cy;
    cy.$(':selected').unselect();
    if (skill) cy.getElementById(skill.node_id).select();
    S().flash('Extracted ' + dlg.ids.length + ' node(s) into chain "' + data.chain.name + '"');
  }

  document.addEventListener('click', (e) => { if (e.target.closest('#btn-extract')) open(); });
  document.addEventListener('keydown', (e) => {
    const st = S();
    if (!st || !st.mutate || !canvas.canvasKey(e)) return;
    if (e.key === 'e' || e.key === 'E') { e.preventDefault(); open(); }
  });
})();
