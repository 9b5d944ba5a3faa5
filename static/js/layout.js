// Layered auto-layout for chains of any length. Dagre gives a
// good layout for a small chain but a 1,000-node spine comes out as one row
// (unreadable at any zoom that shows it) and costs seconds. This one is
// linear in nodes + edges: ranks by longest path from the roots, order in a
// rank by the mean order of the nodes before it, then the ranks fold into
// bands, left to right and top to bottom, so a long chain reads like text
// and fills a screen-shaped area.

const RANK_W = 230; // a node (156–170) plus the gap an edge label needs
const ROW_H = 90; // a node (54–62) plus a gap
const BAND_GAP = 120; // between folded bands
const ASPECT = 1.6; // the shape of a typical canvas

// layeredPositions returns a Map node_id → {x, y} for the document's nodes.
// Loop edges (max_iterations) do not rank; attached nodes (map bodies,
// parallel branches, error handlers) rank after their owner.
export function layeredPositions(doc) {
  const nodes = doc.nodes || [];
  const index = new Map();
  nodes.forEach((n, i) => index.set(n.node_id, i));
  const succ = nodes.map(() => []);
  const pred = nodes.map(() => []);
  const link = (a, b) => {
    const i = index.get(a), j = index.get(b);
    if (i === undefined || j === undefined || i === j) return;
    succ[i].push(j);
    pred[j].push(i);
  };
  for (const e of doc.edges || []) if (!e.max_iterations) link(e.source, e.target);
  for (const n of nodes) {
    if (n.map_node) link(n.node_id, n.map_node);
    for (const b of n.branches || []) link(n.node_id, b);
    if (n.on_error && index.has(n.on_error)) link(n.node_id, n.on_error);
  }
  // longest-path ranks (Kahn); nodes left on a cycle of ordinary edges
  // (an error validation reports) rank after what is known of them
  const rank = new Int32Array(nodes.length);
  const indeg = pred.map((p) => p.length);
  const queue = [];
  for (let i = 0; i < nodes.length; i++) if (indeg[i] === 0) queue.push(i);
  const done = new Uint8Array(nodes.length);
  for (let qi = 0; ; ) {
    while (qi < queue.length) {
      const i = queue[qi++];
      done[i] = 1;
      for (const j of succ[i]) {
        if (!done[j] && rank[j] < rank[i] + 1) rank[j] = rank[i] + 1; // a placed node stays (cycles)
        if (--indeg[j] === 0) queue.push(j);
      }
    }
    const stuck = done.indexOf(0);
    if (stuck < 0) break;
    indeg[stuck] = 0;
    queue.push(stuck);
  }
  let ranks = 0;
  for (let i = 0; i < nodes.length; i++) if (rank[i] + 1 > ranks) ranks = rank[i] + 1;
  const layers = Array.from({ length: ranks }, () => []);
  for (const i of queue) layers[rank[i]].push(i);
  // order in a rank: the mean order of the nodes before it (one sweep
  // keeps a branch's two ways apart and a spine straight)
  const order = new Float64Array(nodes.length);
  for (const layer of layers) {
    for (const i of layer) {
      const ps = pred[i].filter((p) => rank[p] < rank[i]);
      order[i] = ps.length ? ps.reduce((s, p) => s + order[p], 0) / ps.length : order[i];
    }
    layer.sort((a, b) => order[a] - order[b] || a - b);
    layer.forEach((i, k) => { order[i] = k - (layer.length - 1) / 2; });
  }
  // fold the ranks into bands whose whole is about ASPECT wide
  let tall = 1;
  for (const layer of layers) if (layer.length > tall) tall = layer.length;
  const bandH = tall * ROW_H + BAND_GAP;
  let per = ranks;
  let best = Infinity;
  for (let k = Math.min(ranks, 6); k <= ranks; k++) {
    const bands = Math.ceil(ranks / k);
    const score = Math.abs(Math.log((k * RANK_W) / (bands * bandH) / ASPECT));
    if (score < best) { best = score; per = k; }
  }
  const out = new Map();
  for (let r = 0; r < ranks; r++) {
    const band = Math.floor(r / per);
    const x = (r % per) * RANK_W;
    const y0 = band * bandH + (tall - 1) * ROW_H / 2;
    for (const i of layers[r]) out.set(nodes[i].node_id, { x, y: Math.round(y0 + order[i] * ROW_H) });
  }
  return out;
}

// docOf reads what the layout needs from a canvas (its nodes, its edges
// and their loop caps, its attach links as owner → node).
export function layoutDocOf(cy) {
  const nodes = cy.nodes().not('.eh-handle, .eh-ghost').map((n) => ({ node_id: n.id() }));
  const edges = cy.edges().not('.eh-preview, .eh-ghost-edge').map((e) => ({ source: e.data('source'), target: e.data('target'), max_iterations: e.hasClass('is-loop') ? 1 : 0 }));
  return { nodes, edges };
}
