// A skill node's chain, read-only, in place: "Open chain" in a
// skill node's properties shows the chain the node runs in a dialog over
// the canvas, without leaving the editor. Skill nodes inside it open their
// own chain in the same view (a list of buttons, or a double-click on the
// node); Back returns one level, Esc or Close returns to the editor with
// the focus where it was. The chain is read from the server by the name the
// node calls it by, as it is saved now: GET /v1/chains?name= finds it (an
// empty list when no chain has the name, so the console stays free of a
// failed request), GET /v1/chains/{id} gives its document.
import * as api from './api.js';
import * as canvas from './canvas.js';
import * as common from './common.js';
import { studio } from './editor-api.js';
(function () {
  const root = document.getElementById('editor');
  if (!root) return;
  const S = () => studio;
  const MAX_LEVELS = 20; // a chain that (indirectly) runs itself stops somewhere
  const MAX_SKILL_BUTTONS = 50;

  let dlg = null;
  let cy = null;
  let stack = []; // [{ name, data, via }]: the chains shown, outermost first
  let opener = null;

  const $ = (id) => document.getElementById(id);

  function build() {
    dlg = common.el('dialog', { id: 'subchain-dialog', class: 'subchain-dialog', 'aria-labelledby': 'subchain-title', 'aria-describedby': 'subchain-hint' },
      common.el('div', { class: 'subchain-head' },
        common.el('button', { type: 'button', id: 'subchain-back', text: '← Back', title: 'The chain this one was opened from' }),
        common.el('h2', { id: 'subchain-title' }),
        common.el('span', { class: 'subchain-badge', text: 'read-only' }),
        common.el('a', { id: 'subchain-edit', href: '#', text: 'Open in the editor' }),
        common.el('button', { type: 'button', class: 'close-dialog primary', id: 'subchain-close', text: 'Close' })),
      common.el('nav', { id: 'subchain-path', class: 'subchain-path', 'aria-label': 'Chains opened' }),
      common.el('p', { id: 'subchain-hint', class: 'hint', text: 'The saved chain this skill node runs, as it is now. Nothing here can be changed; Esc returns to the editor.' }),
      common.el('div', { id: 'subchain-msg', role: 'status' }),
      common.el('div', { id: 'subchain-cy', class: 'subchain-cy', role: 'img' }),
      common.el('div', { id: 'subchain-skills', class: 'subchain-skills' }));
    root.append(dlg);
    $('subchain-back').addEventListener('click', back);
    dlg.addEventListener('close', () => {
      if (cy) { cy.destroy(); cy = null; }
      stack = [];
      root.dataset.subchain = '';
      if (opener && opener.isConnected) opener.focus();
      opener = null;
    });
    $('subchain-skills').addEventListener('click', (e) => {
      const b = e.target.closest('[data-skill]');
      if (b) open(b.dataset.skill, b.dataset.node);
    });
  }

  async function open(name, via) {
    if (!dlg) build();
    if (!dlg.open) {
      opener = document.activeElement;
      dlg.showModal();
    }
    const msg = $('subchain-msg');
    msg.replaceChildren();
    if (stack.length >= MAX_LEVELS) {
      msg.append(common.el('p', { class: 'form-error', text: 'Not opened: ' + MAX_LEVELS + ' chains deep already.' }));
      return;
    }
    root.dataset.subchain = 'loading';
    let body;
    try {
      body = await chainNamed(name);
    } catch (err) {
      body = { error: err.message }; // the API's error envelope, read by api.js
    }
    if (body.error) {
      msg.append(common.el('p', { class: 'form-error', text: 'Cannot open “' + name + '”: ' + body.error }));
      root.dataset.subchain = 'error';
      if (!stack.length) $('subchain-title').textContent = 'Chain “' + name + '”';
      return;
    }
    stack.push({ name, data: body, via });
    show();
  }

  // chainNamed is the saved chain named name ({id, name, version, doc}), or
  // {error} when no chain has that name.
  async function chainNamed(name) {
    const list = await api.get('/v1/chains?name=' + encodeURIComponent(name) + '&limit=1');
    const row = list.chains[0];
    if (!row) return { error: 'no saved chain is named ' + JSON.stringify(name) };
    return api.get('/v1/chains/' + encodeURIComponent(row.id));
  }

  function back() {
    if (stack.length <= 1) { dlg.close(); return; }
    stack.pop();
    $('subchain-msg').replaceChildren();
    show();
  }

  function show() {
    const top = stack[stack.length - 1];
    const d = top.data;
    $('subchain-title').textContent = 'Chain “' + d.name + '”';
    $('subchain-edit').href = '/chains/' + encodeURIComponent(d.id);
    $('subchain-edit').textContent = 'Open in the editor (v' + d.version + ')';
    $('subchain-back').hidden = stack.length <= 1;
    // where we are: this chain › node › chain › node › chain
    const path = $('subchain-path');
    path.replaceChildren(common.el('span', { text: S().doc.name || 'this chain' }));
    for (const lvl of stack) {
      path.append(' › ', common.el('span', { class: 'hint', text: lvl.via ? 'node ' + lvl.via : '' }), lvl.via ? ' › ' : '', common.el('strong', { text: lvl.name }));
    }
    const doc = JSON.parse(JSON.stringify(d.doc || { nodes: [] }));
    doc.nodes = doc.nodes || [];
    doc.edges = doc.edges || [];
    $('subchain-cy').setAttribute('aria-label', 'Graph of chain ' + d.name + ': ' + doc.nodes.length + ' nodes, ' + doc.edges.length + ' edges');
    const skills = doc.nodes.filter((n) => n.kind === 'skill' && n.name);
    const list = $('subchain-skills');
    list.replaceChildren();
    if (skills.length) {
      list.append(common.el('span', { class: 'hint', text: 'Skill nodes here (open the chain each runs): ' }));
      for (const n of skills.slice(0, MAX_SKILL_BUTTONS)) {
        list.append(common.el('button', { type: 'button', class: 'linklike', 'data-skill': n.name, 'data-node': n.node_id, text: '⊞ ' + (n.label || n.node_id) + ' → ' + n.name }));
      }
      if (skills.length > MAX_SKILL_BUTTONS) list.append(common.el('span', { class: 'hint', text: ' and ' + (skills.length - MAX_SKILL_BUTTONS) + ' more (double-click them on the graph)' }));
    }
    if (cy) cy.destroy();
    cy = canvas.createCy($('subchain-cy'), doc, { editable: false, progressive: true, userZoom: true });
    cy.on('dbltap', 'node', (e) => {
      const n = doc.nodes.find((x) => x.node_id === e.target.id());
      if (n && n.kind === 'skill' && n.name) open(n.name, n.node_id);
    });
    if (doc.nodes.length <= 400) cy.fit(undefined, 30);
    root.dataset.subchain = d.name;
    window.__subchain = { cy, doc, stack: stack.map((l) => l.name) };
  }

  // "Open chain" in a skill node's properties: the node's chain as the
  // document says now (the select may have changed it since the panel was drawn)
  document.addEventListener('click', (e) => {
    const b = e.target.closest('[data-open-subchain]');
    if (!b) return;
    const panel = b.closest('.props');
    const n = panel && S().doc.nodes.find((x) => x.node_id === panel.dataset.id);
    const name = n && n.name;
    if (!name) { S().flash('Choose the chain this node runs first.'); return; }
    open(name, n.node_id);
  });
})();
