// Copy and paste of nodes as chain JSON text, across tabs too: a copy holds
// the selected nodes and the edges between them; a paste renames the ids
// that are taken, follows the renames in its own references and drops the
// ones to nodes it does not bring. One paste is one undo step.
import * as canvas from './canvas.js';
import { uniqueNodeIdAvoid } from './editor-doc.js';

export function install(ed) {
  // copySelection is the selected nodes as text, or null with none.
  ed.copySelection = () => {
    const nodes = new Set(ed.cy.$('node:selected').not('.eh-handle').map((n) => n.id()));
    if (!nodes.size) return null;
    return JSON.stringify({
      name: 'clipboard',
      nodes: ed.doc.nodes.filter((n) => nodes.has(n.node_id)),
      edges: ed.doc.edges.filter((e) => nodes.has(e.source) && nodes.has(e.target)),
    });
  };

  // paste adds the nodes text holds and selects them; false: text is not nodes.
  ed.paste = (text) => {
    let data;
    try { data = JSON.parse(text); } catch { return false; }
    if (!data || !Array.isArray(data.nodes) || !data.nodes.length) return false;
    const rename = new Map();
    const newNodes = [];
    const taken = new Set(ed.nodeIds());
    for (const src of data.nodes) {
      if (!src || typeof src.node_id !== 'string') continue;
      const n = JSON.parse(JSON.stringify(src));
      let id = n.node_id;
      if (taken.has(id)) id = uniqueNodeIdAvoid(id, taken);
      taken.add(id);
      rename.set(n.node_id, id);
      n.node_id = id;
      if (n.position) n.position = { x: n.position.x + 40, y: n.position.y + 40 };
      newNodes.push(n);
    }
    const ref = (id) => (rename.has(id) ? rename.get(id) : undefined);
    for (const n of newNodes) {
      if (n.map_node) { const r = ref(n.map_node); if (r) n.map_node = r; else delete n.map_node; }
      if (n.branches) n.branches = n.branches.map(ref).filter(Boolean);
      if (n.on_error && rename.has(n.on_error)) n.on_error = rename.get(n.on_error);
    }
    ed.mutate(() => {
      const cy = ed.cy;
      ed.doc.nodes.push(...newNodes);
      const edges = [];
      for (const e of data.edges || []) {
        const s = ref(e.source), t = ref(e.target);
        if (!s || !t) continue;
        const ne = Object.assign({}, e, { source: s, target: t });
        ne.id = ed.uniqueEdgeId(s, t);
        ed.doc.edges.push(ne);
        edges.push(ne);
      }
      const ids = new Set(ed.nodeIds());
      cy.batch(() => {
        cy.$(':selected').unselect();
        for (const n of newNodes) cy.add(canvas.nodeElement(n)).select();
        for (const e of edges) cy.add(canvas.edgeElement(e));
        for (const n of newNodes) cy.add(canvas.attachLinks(n, ids));
      });
    });
    return true;
  };
}
