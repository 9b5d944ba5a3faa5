// Versions page: draws the selected version and the current one together,
// with added (only in current), removed (only in the old version) and changed
// nodes and edges highlighted.
'use strict';
(function () {
  const Studio = window.Studio;
  const root = document.getElementById('versions');
  if (!root || !root.dataset.selected) return;
  const cyEl = document.getElementById('cy');
  if (!cyEl) return;

  async function init() {
    const res = await fetch('/chains/' + encodeURIComponent(root.dataset.chainId) + '/versions/' + root.dataset.selected + '/data', { headers: { Accept: 'application/json' } });
    const d = await res.json();
    const diff = d.diff || {};
    const added = new Set(diff.nodes_added || []);
    const removed = new Set(diff.nodes_removed || []);
    const changed = new Set((diff.nodes_changed || []).filter((c) => !(c.fields.length === 1 && c.fields[0] === 'position')).map((c) => c.node_id));
    const eAdded = new Set(diff.edges_added || []);
    const eRemoved = new Set(diff.edges_removed || []);
    const eChanged = new Set((diff.edges_changed || []).map((c) => c.edge_id));
    const cur = d.cur || { nodes: [], edges: [] };
    const old = d.old || { nodes: [], edges: [] };
    // The union: current nodes and edges, plus what only the old version had.
    const union = {
      nodes: (cur.nodes || []).concat((old.nodes || []).filter((n) => removed.has(n.node_id))),
      edges: (cur.edges || []).concat((old.edges || []).filter((e) => eRemoved.has(e.id))),
    };
    const cy = Studio.createCy(cyEl, union, { editable: false, mode: 'diff' });
    cy.batch(() => {
      for (const id of added) cy.getElementById(id).addClass('diff-added');
      for (const id of removed) cy.getElementById(id).addClass('diff-removed');
      for (const id of changed) cy.getElementById(id).addClass('diff-changed');
      for (const id of eAdded) cy.getElementById(id).addClass('diff-added');
      for (const id of eRemoved) cy.getElementById(id).addClass('diff-removed');
      for (const id of eChanged) cy.getElementById(id).addClass('diff-changed');
    });
    const fit = document.getElementById('btn-fit');
    if (fit) fit.addEventListener('click', () => Studio.fit(cy));
    root.dataset.ready = '1';
    window.__versions = { cy };
  }
  init();
})();
