// Renaming a node in a chain document: whether an id may be a node's new
// one, and the rename itself, followed everywhere the engine looks a node up
// by id. Labels and descriptions stay as written.

const RESERVED = ['input', 'state', 'node_results', 'output', 'steps', 'item', 'index', 'resume', 'error', 'trigger', 'when', 'chain', 'run'];
const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

const reEscape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// idProblem says why id cannot be the new id of doc's node old, or ''.
export function idProblem(doc, id, old) {
  if (!id) return 'A node needs an id.';
  if (id !== old && doc.nodes.some((n) => n.node_id === id)) return 'Another node already has the id “' + id + '”.';
  if (RESERVED.includes(id)) return '“' + id + '” is reserved for expressions (' + RESERVED.join(', ') + ').';
  if (/[\u0000-\u001f\u007f]/.test(id)) return 'An id may not contain control characters.';
  if (new TextEncoder().encode(id).length > 256) return 'An id is at most 256 bytes.';
  return '';
}

// renameRefs rewrites the references to node old in an expression: the
// ones the engine resolves by id, `old.output…` and `node_results.old…`
// (plain or quoted). Text inside string literals is not looked at apart.
function renameRefs(src, old, id) {
  if (typeof src !== 'string' || !src.includes(old)) return src;
  const esc = reEscape(old);
  const name = IDENT.test(id) ? id : JSON.stringify(id);
  return src
    .replace(new RegExp('(^|[^A-Za-z0-9_."\'])(' + esc + '|"' + esc + '")(?=\\.output\\b)', 'g'), (m, pre) => pre + name)
    .replace(new RegExp('(\\bnode_results\\.)(' + esc + '(?![A-Za-z0-9_])|"' + esc + '")', 'g'), (m, pre) => pre + name);
}

// rename renames doc's node old to id everywhere the engine looks a node up
// by id: edges' ends (and their automatic ids, "source->target"), the entry
// node, map bodies, parallel branches, error handlers, successor fields,
// and expressions reading the node's output.
export function rename(doc, old, id) {
  const n = doc.nodes.find((x) => x.node_id === old);
  n.node_id = id;
  const autoId = (e) => e.id === e.source + '->' + e.target || new RegExp('^' + reEscape(e.source + '->' + e.target) + '#[1-9][0-9]*$').test(e.id);
  const touched = [];
  for (const e of doc.edges) {
    if (e.source !== old && e.target !== old) continue;
    const wasAuto = autoId(e);
    if (e.source === old) e.source = id;
    if (e.target === old) e.target = id;
    if (wasAuto) touched.push(e);
  }
  // new automatic ids, unique among all the others
  const taken = new Set(doc.edges.filter((e) => !touched.includes(e)).map((e) => e.id));
  for (const e of touched) {
    let eid = e.source + '->' + e.target;
    for (let i = 2; taken.has(eid); i++) eid = e.source + '->' + e.target + '#' + i;
    e.id = eid;
    taken.add(eid);
  }
  for (const e of doc.edges) if (e.condition) e.condition = renameRefs(e.condition, old, id);
  for (const m of doc.nodes) {
    for (const f of ['map_node', 'on_error', 'true_node', 'false_node', 'next_node']) if (m[f] === old) m[f] = id;
    if (m.branches) m.branches = m.branches.map((b) => (b === old ? id : b));
    for (const f of ['condition', 'items_path']) if (m[f]) m[f] = renameRefs(m[f], old, id);
    for (const f of ['input_map', 'set_state']) {
      if (m[f]) for (const k of Object.keys(m[f])) m[f][k] = renameRefs(m[f][k], old, id);
    }
    if (m.cases) for (const c of m.cases) c.when = renameRefs(c.when, old, id);
  }
  if (doc.entry_node === old) doc.entry_node = id;
  // a pinned output follows its node
  if (doc.pinned_outputs && Object.prototype.hasOwnProperty.call(doc.pinned_outputs, old)) {
    doc.pinned_outputs[id] = doc.pinned_outputs[old];
    delete doc.pinned_outputs[old];
  }
}
