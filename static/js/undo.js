// The editor's undo and redo: the document as JSON text before each edit,
// at most LIMIT edits back.
const LIMIT = 200;

export class UndoHistory {
  constructor() {
    this.undos = [];
    this.redos = [];
  }

  get canUndo() { return this.undos.length > 0; }
  get canRedo() { return this.redos.length > 0; }

  // record keeps doc as it is before an edit; the edit ends what redo had.
  record(doc) {
    this.undos.push(JSON.stringify(doc));
    if (this.undos.length > LIMIT) this.undos.shift();
    this.redos.length = 0;
  }

  // undo returns the document before the last edit (null: none) and keeps
  // cur, the document now, for redo.
  undo(cur) {
    if (!this.undos.length) return null;
    this.redos.push(JSON.stringify(cur));
    return JSON.parse(this.undos.pop());
  }

  // redo returns the document undo went back from (null: none).
  redo(cur) {
    if (!this.redos.length) return null;
    this.undos.push(JSON.stringify(cur));
    return JSON.parse(this.redos.pop());
  }
}
