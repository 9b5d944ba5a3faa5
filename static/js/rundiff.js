// The page comparing two runs: run B's chain (with the nodes and edges only
// run A's chain had) coloured by what differs, the first divergence
// highlighted and centred. It reads /v1: the comparison
// (GET /v1/runs/{a}/diff/{b}, with the edges each run fired) and the two
// runs' chains. The tables are rendered by the server; selecting
// a node in a table centres it on the canvas, and a node tapped on the
// canvas selects its row.
import * as api from './api.js';
import * as canvas from './canvas.js';
(function () {
  const root = document.getElementById('rundiff');
  if (!root) return;
  const cyEl = document.getElementById('cy');
  const $ = (id) => document.getElementById(id);

  // styles on top of the diff mode's: the divergence, and the edges that
  // fired in one run only
  function extraStyle() {
    const accent = canvas.cssVar('--accent', '#2560d8');
    const ok = canvas.cssVar('--ok', '#0f7a3a');
    const err = canvas.cssVar('--error', '#c8281c');
    const edge = canvas.cssVar('--edge', '#7c8699');
    return [
      { selector: 'edge.rd-fired', style: { 'line-color': edge, 'target-arrow-color': edge, width: 2.5 } },
      { selector: 'edge.rd-route-b', style: { 'line-color': ok, 'target-arrow-color': ok, width: 4 } },
      { selector: 'edge.rd-route-a', style: { 'line-color': err, 'target-arrow-color': err, width: 3, 'line-style': 'dashed' } },
      { selector: 'node.rd-divergence', style: { 'border-color': accent, 'border-width': 5, 'underlay-color': accent, 'underlay-opacity': 0.25, 'underlay-padding': 10 } },
    ];
  }

  const STATUS = { done: 'done', error: 'error', skip: 'skipped', paused: 'paused', start: 'running', not_reached: 'not reached' };
  const statusWord = (s) => (s ? STATUS[s.status] || s.status : 'not in chain');

  // runDoc reads the chain a run ran from /v1: its saved version, or an
  // ad-hoc run's own document (null when neither can be read).
  async function runDoc(run) {
    try {
      if (run.chain_id && run.chain_version > 0) return (await api.get('/v1/chains/' + encodeURIComponent(run.chain_id) + '/versions/' + run.chain_version)).doc || null;
      return (await api.get('/v1/runs/' + encodeURIComponent(run.run_id))).doc || null;
    } catch {
      return null;
    }
  }

  async function init() {
    const diff = await api.get('/v1/runs/' + encodeURIComponent(root.dataset.a) + '/diff/' + encodeURIComponent(root.dataset.b));
    const docA = runDoc(diff.a);
    const docB = diff.same_version && diff.a.chain_id ? docA : runDoc(diff.b); // one version: read once
    const a = (await docA) || { nodes: [], edges: [] };
    const doc = (await docB) || { nodes: [], edges: [] };
    const byNode = new Map(diff.nodes.map((n) => [n.node_id, n]));
    // B's chain with the nodes and edges only A's chain had
    const inB = new Set((doc.nodes || []).map((n) => n.node_id));
    const edgesB = new Set((doc.edges || []).map((e) => e.id));
    const union = {
      entry_node: doc.entry_node,
      nodes: (doc.nodes || []).concat((a.nodes || []).filter((n) => !inB.has(n.node_id))),
      edges: (doc.edges || []).concat((a.edges || []).filter((e) => !edgesB.has(e.id))),
    };
    const firedA = new Set(diff.fired_a || []);
    const firedB = new Set(diff.fired_b || []);
    const divergence = root.dataset.divergence || '';
    const docNode = new Map(union.nodes.map((n) => [n.node_id, n]));

    const cy = canvas.createCy(cyEl, union, { editable: false, mode: 'diff', progressive: true, anchor: divergence || undefined, onProgress: canvas.showLoading(root) });
    const restyle = () => { if (!cy.destroyed()) cy.style(canvas.style('diff').concat(extraStyle())); };
    restyle();
    // after the canvas's own handler, which sets the diff style alone
    document.addEventListener('studio:theme', restyle);

    const mark = (ele) => {
      const id = ele.id();
      if (ele.isEdge()) {
        if (ele.hasClass('attach')) return;
        const a = firedA.has(id), b = firedB.has(id);
        if (a && b) ele.addClass('rd-fired');
        else if (b) ele.addClass('rd-route-b');
        else if (a) ele.addClass('rd-route-a');
        else ele.addClass('faded');
        return;
      }
      const n = byNode.get(id);
      if (!n) return;
      const cls = { changed: 'diff-changed', added: 'diff-added', removed: 'diff-removed', same: 'faded' }[n.change];
      if (cls) ele.addClass(cls);
      if (id === divergence) ele.addClass('rd-divergence');
      const dn = docNode.get(id);
      let note;
      if (!n.a) note = 'only in B · ' + statusWord(n.b);
      else if (!n.b) note = 'only in A · ' + statusWord(n.a);
      else note = statusWord(n.a) === statusWord(n.b) ? statusWord(n.b) : statusWord(n.a) + ' → ' + statusWord(n.b);
      if (n.what && n.what.includes('output')) note += ' · output';
      if (n.what && n.what.includes('route')) note += ' · route';
      if (dn) ele.data('display', canvas.nodeDisplay(dn, note));
    };
    cy.batch(() => cy.elements().forEach(mark));
    cy.on('add', (e) => mark(e.target));

    // The divergence is centred, and stays centred while the page settles
    // (the canvas refits itself on a change of size until it is touched).
    let touched = false;
    const touch = () => { touched = true; };
    cyEl.addEventListener('pointerdown', touch, { once: true });
    cyEl.addEventListener('wheel', touch, { once: true, passive: true });
    const centreDivergence = () => {
      const n = divergence ? cy.getElementById(divergence) : null;
      if (n && n.nonempty()) cy.center(n);
    };
    centreDivergence();
    const keep = new ResizeObserver(() => { if (!touched && !cy.destroyed()) centreDivergence(); });
    keep.observe(cyEl);

    // rows ↔ canvas
    function selectNode(id, centre) {
      if (cy.getElementById(id).empty()) canvas.loadAll(cy);
      cy.$(':selected').unselect();
      const n = cy.getElementById(id);
      if (n.nonempty()) {
        n.select();
        if (centre) { touched = true; canvas.focus(cy, n); }
      }
      for (const tr of document.querySelectorAll('.rundiff-table tr[data-node-id]')) {
        tr.setAttribute('aria-selected', tr.dataset.nodeId === id ? 'true' : 'false');
      }
    }
    document.addEventListener('click', (e) => {
      const b = e.target.closest('.select-node');
      if (!b) return;
      selectNode(b.dataset.nodeId, true);
      cyEl.scrollIntoView({ block: 'nearest' });
    });
    cy.on('tap', 'node', (e) => {
      const id = e.target.id();
      selectNode(id, false);
      const tr = document.querySelector('.rundiff-table tr[data-node-id="' + CSS.escape(id) + '"]');
      if (tr) {
        const det = tr.closest('details');
        if (det) det.open = true;
        tr.scrollIntoView({ block: 'nearest' });
      }
    });
    cy.on('mouseover', 'node', (e) => {
      const n = byNode.get(e.target.id());
      cyEl.title = n ? n.node_id + ': ' + statusWord(n.a) + ' → ' + statusWord(n.b) + (n.what ? ' (' + n.what.join(', ') + ')' : '') : '';
    });
    cy.on('mouseover', 'edge', (e) => {
      const id = e.target.id();
      const a = firedA.has(id), b = firedB.has(id);
      cyEl.title = id + ': ' + (a && b ? 'fired in both runs' : b ? 'fired in B only' : a ? 'fired in A only' : 'fired in neither run');
    });
    cy.on('mouseout', () => { cyEl.title = ''; });
    $('btn-fit').addEventListener('click', () => { touched = true; canvas.fit(cy); });
    $('btn-divergence').addEventListener('click', () => { if (divergence) selectNode(divergence, true); });

    window.__rundiff = { cy, divergence, diff };
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    root.dataset.ready = '1';
    canvas.startLoading(cy);
  }
  init();
})();
