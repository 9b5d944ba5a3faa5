// The editor's document: the chain being edited (ed.doc), lookups and fresh
// ids in it, and mutate, the one way an edit changes it: a snapshot for
// undo, the change, then the save and the node list follow.
import * as canvas from './canvas.js';
import { UndoHistory } from './undo.js';

// names an expression reads as its own: a node id may not be one of them
const RESERVED_ID = /^(input|state|node_results|output|steps|item|index|resume|error|trigger|when|chain|run)$/;

// uniqueNodeIdAvoid is base with the first free _N suffix (a pasted node
// whose id is taken: copy_2, copy_3…).
export function uniqueNodeIdAvoid(base, taken) {
  for (let i = 2; ; i++) {
    const id = base.replace(/_\d+$/, '') + '_' + i;
    if (!taken.has(id)) return id;
  }
}

export function install(ed) {
  ed.nodeById = (id) => ed.doc.nodes.find((n) => n.node_id === id);
  ed.edgeById = (id) => ed.doc.edges.find((e) => e.id === id);
  ed.nodeIds = () => ed.doc.nodes.map((n) => n.node_id);

  ed.uniqueNodeId = (base) => {
    const taken = new Set(ed.nodeIds());
    base = base.replace(/[^A-Za-z0-9_-]+/g, '_') || 'node';
    if (!taken.has(base) && !RESERVED_ID.test(base)) return base;
    for (let i = 2; ; i++) if (!taken.has(base + '_' + i)) return base + '_' + i;
  };

  ed.uniqueEdgeId = (src, dst) => {
    const taken = new Set(ed.doc.edges.map((e) => e.id));
    const base = src + '->' + dst;
    if (!taken.has(base)) return base;
    for (let i = 2; ; i++) if (!taken.has(base + '#' + i)) return base + '#' + i;
  };

  // ---- undo / redo --------------------------------------------------------

  const undoHistory = new UndoHistory();

  function updateUndoButtons() {
    ed.$('btn-undo').disabled = !undoHistory.canUndo;
    ed.$('btn-redo').disabled = !undoHistory.canRedo;
  }

  // back puts d (a document from the history; null: none) in place.
  function back(d) {
    if (!d) return;
    ed.doc = d;
    ed.rebuild();
    changed();
    updateUndoButtons();
  }

  // an undo ends the field being typed in: the next keystroke is a new step
  ed.undo = () => { ed.newPropStep(); back(undoHistory.undo(ed.doc)); };
  ed.redo = () => { ed.newPropStep(); back(undoHistory.redo(ed.doc)); };

  // mutate applies one user edit: snapshot for undo, change, save.
  // opts.noCheckpoint: the edit continues the last undo step (typing).
  ed.mutate = (fn, opts) => {
    // an edit changes the document the canvas is loading from: finish first
    canvas.loadAll(ed.cy);
    if (!opts || !opts.noCheckpoint) {
      undoHistory.record(ed.doc);
      updateUndoButtons();
    }
    fn();
    changed();
  };

  function changed() {
    ed.scheduleNodeTable();
    ed.scheduleSave();
  }
}
