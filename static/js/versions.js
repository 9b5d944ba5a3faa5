// Versions page: draws the selected version and the current one together,
// with added (only in current), removed (only in the old version) and changed
// nodes and edges highlighted.
import * as api from './api.js';
import * as canvas from './canvas.js';
(function () {
  const root = document.getElementById('versions');
  if (!root || !root.dataset.selected) return;
  const cyEl = document.getElementById('cy');
  if (!cyEl) return;

  async function init() {
    // the selected version and the current one, then their diff: the
    // current version is read first so that the diff is taken against it
    const chain = '/v1/chains/' + encodeURIComponent(root.dataset.chainId);
    const v = root.dataset.selected;
    const [oldV, curC] = await Promise.all([api.get(chain + '/versions/' + v), api.get(chain)]);
    const diff = (await api.get(chain + '/diff?from=' + v + '&to=' + curC.version)).diff || {};
    const added = new Set(diff.nodes_added || []);
    const removed = new Set(diff.nodes_removed || []);
    const changed = new Set((diff.nodes_changed || []).filter((c) => !(c.fields.length === 1 && c.fields[0] === 'position')).map((c) => c.node_id));
    const eAdded = new Set(diff.edges_added || []);
    const eRemoved = new Set(diff.edges_removed || []);
    const eChanged = new Set((diff.edges_changed || []).map((c) => c.edge_id));
    const cur = curC.doc || { nodes: [], edges: [] };
    const old = oldV.doc || { nodes: [], edges: [] };
    // The union: current nodes and edges, plus what only the old version had.
    const union = {
      nodes: (cur.nodes || []).concat((old.nodes || []).filter((n) => removed.has(n.node_id))),
      edges: (cur.edges || []).concat((old.edges || []).filter((e) => eRemoved.has(e.id))),
    };
    // A large chain opens progressively, on the first changed node; each
    // element gets its highlight as it is drawn.
    const anchor = [...changed, ...added, ...removed].find((id) => union.nodes.some((n) => n.node_id === id && n.position));
    const cy = canvas.createCy(cyEl, union, { editable: false, mode: 'diff', progressive: true, anchor, onProgress: canvas.showLoading(root) });
    const diffClass = (id, isEdge) => {
      if ((isEdge ? eAdded : added).has(id)) return 'diff-added';
      if ((isEdge ? eRemoved : removed).has(id)) return 'diff-removed';
      if ((isEdge ? eChanged : changed).has(id)) return 'diff-changed';
      return '';
    };
    const mark = (ele) => { const c = diffClass(ele.id(), ele.isEdge()); if (c) ele.addClass(c); };
    cy.batch(() => cy.elements().forEach(mark));
    cy.on('add', (e) => mark(e.target));
    const fit = document.getElementById('btn-fit');
    if (fit) fit.addEventListener('click', () => canvas.fit(cy));
    root.dataset.ready = '1';
    window.__versions = { cy, nodesAtReady: cy.nodes().length };
    canvas.startLoading(cy);
  }
  init();
})();
