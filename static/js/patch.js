// The editor's saved copy: what the server holds at the chain's version, as
// JSON text per node and edge, and the patch (engine.Patch) that takes it to
// the document being edited. Built lazily from the text the page loaded, so
// opening a large chain pays nothing for it. The whole document goes instead
// when the diff cannot say it (reordered nodes, an edge without an id).

function jsonOf(list, key) {
  const m = new Map();
  for (const x of list) m.set(x[key], JSON.stringify(x));
  return m;
}

function snapshotOf(d) {
  const top = {};
  for (const [k, v] of Object.entries(d)) if (k !== 'nodes' && k !== 'edges') top[k] = v;
  return { top: JSON.stringify(top), topObj: top, nodes: jsonOf(d.nodes || [], 'node_id'), edges: jsonOf(d.edges || [], 'id') };
}

// orderKept: the ids still there keep the saved order and new ids come
// after them, which is the order the server gives a patched chain.
function orderKept(cur, base) {
  let j = 0;
  let fresh = false;
  const keys = [...base.keys()];
  const live = new Set(cur);
  for (const id of cur) {
    if (!base.has(id)) { fresh = true; continue; }
    if (fresh) return false;
    while (j < keys.length && !live.has(keys[j])) j++;
    if (keys[j] !== id) return false;
    j++;
  }
  return true;
}

export class SavedCopy {
  constructor() {
    this.snap = null; // the parsed copy
    this.text = null; // or the JSON text it is parsed from on the first diff
    this.wrapped = false; // text is {id, name, version, doc}, not the document
  }

  // fromText takes the server's copy as the JSON text it sent.
  fromText(text, wrapped) {
    this.snap = null;
    this.text = text;
    this.wrapped = !!wrapped;
  }

  // forget drops the copy: the next save sends the whole document.
  forget() { this.fromText(null, false); }

  // took records that the server now holds what diff returned as next.
  took(next) { this.snap = next; this.text = null; this.wrapped = false; }

  // diff returns { patch, next } (next: the copy once the patch is saved),
  // or null when the whole document must be sent.
  diff(doc) {
    if (!this.snap && this.text) {
      const d = JSON.parse(this.text);
      this.took(snapshotOf(this.wrapped ? d.doc : d));
    }
    const saved = this.snap;
    if (!saved) return null;
    const next = snapshotOf(doc);
    const curN = doc.nodes.map((n) => n.node_id);
    const curE = doc.edges.map((e) => e.id);
    if (next.nodes.size !== curN.length || next.edges.size !== curE.length || curE.some((id) => !id)) return null;
    if (!orderKept(curN, saved.nodes) || !orderKept(curE, saved.edges)) return null;
    const patch = { expect: { nodes: curN.length, edges: curE.length } };
    const changedOf = (cur, base) => { const out = []; for (const [id, text] of cur) if (base.get(id) !== text) out.push(text); return out; };
    const goneOf = (cur, base) => { const out = []; for (const id of base.keys()) if (!cur.has(id)) out.push(id); return out; };
    const nodes = changedOf(next.nodes, saved.nodes), edges = changedOf(next.edges, saved.edges);
    const rmN = goneOf(next.nodes, saved.nodes), rmE = goneOf(next.edges, saved.edges);
    if (nodes.length) patch.nodes = nodes.map((t) => JSON.parse(t));
    if (edges.length) patch.edges = edges.map((t) => JSON.parse(t));
    if (rmN.length) patch.remove_nodes = rmN;
    if (rmE.length) patch.remove_edges = rmE;
    if (next.top !== saved.top) patch.chain = next.topObj;
    return { patch, next };
  }
}
