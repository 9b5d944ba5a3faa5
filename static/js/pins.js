// Pinned outputs (docs/chain-format.md, "Pinned outputs"): a node's output
// kept in the draft (pinned_outputs), which the designer's runs use instead
// of running the node. This module is the one place that changes them:
//   pinOutput(nodeId, value)  pins an output
//   unpin(nodeId)             removes a pin
//   makeTestMock(nodeId)      mocks the node with its pin in the chain's test
//                             "pinned outputs" (added when missing)
//   pinControls(nodeId, value) the Pin / Unpin / Make a test mock buttons for
//                             an output shown (the "Run this node" result,
//                             the node view)
// In the designer they edit its document, which editor-save.js saves like
// any edit (one undo step each); elsewhere (the run page) they save the
// chain's current version through the API (GET, then PUT with the version
// read, read again on a conflict). The designer also gets a "Pinned output"
// section in a node's properties and the pin marks on the canvas.
import * as api from './api.js';
import * as canvas from './canvas.js';
import * as common from './common.js';
import { studio } from './editor-api.js';

// PIN_TEST names the test "Make a test mock" adds mocks to.
export const PIN_TEST = 'pinned outputs';

const el = (tag, attrs, ...kids) => common.el(tag, attrs, ...kids);
const has = (o, k) => !!o && Object.prototype.hasOwnProperty.call(o, k);
const editorRoot = () => document.getElementById('editor');
const inEditor = (chainId) => {
  const root = editorRoot();
  return !!(root && studio.doc && (!chainId || root.dataset.chainId === chainId));
};

// isPinned reports whether doc (default: the designer's) pins node id.
export function isPinned(id, doc) { return has((doc || studio.doc || {}).pinned_outputs, id); }

// ---- the changes, on any document ---------------------------------------------

function setPin(doc, id, value) {
  if (!doc.pinned_outputs) doc.pinned_outputs = {};
  doc.pinned_outputs[id] = value === undefined ? null : value;
}

function dropPin(doc, id) {
  if (!doc.pinned_outputs) return;
  delete doc.pinned_outputs[id];
  if (!Object.keys(doc.pinned_outputs).length) delete doc.pinned_outputs;
}

// addMock mocks node id with its pin in the test PIN_TEST, which it adds
// (the sample input, expecting the run to complete) when the chain has
// none; an error the test gave the node goes (a node has a mock or an
// error). It returns the test's index, or -1 when the node is not pinned.
function addMock(doc, id) {
  if (!has(doc.pinned_outputs, id)) return -1;
  if (!doc.tests) doc.tests = [];
  let i = doc.tests.findIndex((t) => t && t.name === PIN_TEST);
  if (i < 0) {
    doc.tests.push({ name: PIN_TEST, description: 'Mocks made from pinned outputs (Make a test mock).', input: doc.sample_input || {}, mocks: {}, assert: { status: 'completed' } });
    i = doc.tests.length - 1;
  }
  const t = doc.tests[i];
  t.mocks = Object.assign({}, t.mocks, { [id]: JSON.parse(JSON.stringify(doc.pinned_outputs[id])) });
  if (t.errors) {
    delete t.errors[id];
    if (!Object.keys(t.errors).length) delete t.errors;
  }
  return i;
}

// ---- saving ---------------------------------------------------------------------

// change applies fn to the chain's draft and saves it: in the designer as
// an edit (then waits for its save), elsewhere through the API. It returns
// what fn returned.
async function change(chainId, fn, message) {
  if (inEditor(chainId)) {
    let out;
    studio.edit(() => { out = fn(studio.doc); });
    await studio.flush();
    const state = document.getElementById('save-state');
    if (state && (state.dataset.state === 'error' || state.dataset.state === 'conflict')) {
      throw new Error('the draft was not saved (' + state.textContent + '): the Validation panel says why');
    }
    return out;
  }
  if (!chainId) throw new Error('no chain to save the pin in');
  const path = '/v1/chains/' + encodeURIComponent(chainId);
  // A save in between (another tab) moves the version: read it again and
  // apply the one change to what is there now.
  for (let attempt = 0; ; attempt++) {
    const cur = await api.get(path);
    const out = fn(cur.doc);
    try {
      await api.request('PUT', path, { body: { version: cur.version, doc: cur.doc, message } });
      return out;
    } catch (e) {
      if (e.code !== 'version_conflict' || attempt >= 2) throw e;
    }
  }
}

// pinOutput pins value as node nodeId's output in the draft.
export async function pinOutput(nodeId, value, opts = {}) {
  await change(opts.chainId, (d) => setPin(d, nodeId, value), 'pin the output of ' + nodeId);
  announce(nodeId);
}

// unpin removes node nodeId's pin from the draft.
export async function unpin(nodeId, opts = {}) {
  await change(opts.chainId, (d) => dropPin(d, nodeId), 'unpin ' + nodeId);
  announce(nodeId);
}

// makeTestMock mocks node nodeId with its pin in the test PIN_TEST; it
// returns that test's index.
export async function makeTestMock(nodeId, opts = {}) {
  const i = await change(opts.chainId, (d) => addMock(d, nodeId), 'mock ' + nodeId + ' in the test "' + PIN_TEST + '"');
  if (i < 0) throw new Error('node ' + nodeId + ' has no pinned output to mock it with');
  return i;
}

// announce tells the page a pin changed (the designer redraws the node).
function announce(nodeId) {
  document.dispatchEvent(new CustomEvent('studio:pins', { detail: { nodeId } }));
}

// ---- controls ---------------------------------------------------------------------

function errorText(e) {
  return 'Not saved: ' + (e && e.message ? e.message : String(e));
}

// pinControls is the row of buttons for an output shown in the designer
// (value: the output, or an async function that reads it when Pin is
// pressed, for an output shown cut): Pin this output, and while the node
// is pinned Unpin and Make a test mock, with a status line.
export function pinControls(nodeId, value, opts = {}) {
  const status = el('p', { class: 'hint pin-status', role: 'status' });
  const box = el('div', { class: 'pin-controls', 'data-needs': 'edit', 'data-node-id': nodeId });
  const pin = el('button', { type: 'button', class: 'pin-btn', 'data-pin-action': 'pin', title: 'Later runs of the draft in the designer use this output instead of running the node', text: '⚲ Pin this output' });
  const un = el('button', { type: 'button', class: 'pin-btn', 'data-pin-action': 'unpin', title: 'Runs of the draft run the node again', text: 'Unpin' });
  const mock = el('button', { type: 'button', class: 'pin-btn', 'data-pin-action': 'mock', title: 'Mock this node with its pinned output in the chain\'s test “' + PIN_TEST + '”', text: 'Make a test mock' });
  let shown = false;
  const root = editorRoot();
  const sync = () => {
    // controls taken off the page stop listening (the node view redraws its output)
    if (box.isConnected) shown = true;
    else if (shown) {
      document.removeEventListener('studio:pins', sync);
      if (root) root.removeEventListener('studio:rebuilt', sync);
      return;
    }
    const on = isPinned(nodeId, opts.doc);
    un.hidden = !on;
    mock.hidden = !on;
    box.dataset.pinned = on ? 'true' : 'false';
  };
  const act = async (fn, done) => {
    for (const b of [pin, un, mock]) b.disabled = true;
    try {
      await fn();
      status.textContent = done;
    } catch (e) {
      status.textContent = errorText(e);
    } finally {
      for (const b of [pin, un, mock]) b.disabled = false;
      sync();
    }
  };
  pin.addEventListener('click', () => act(async () => pinOutput(nodeId, typeof value === 'function' ? await value() : value), 'Pinned: runs of the draft use this output instead of running ' + nodeId + '.'));
  un.addEventListener('click', () => act(() => unpin(nodeId), 'Unpinned: runs of the draft run ' + nodeId + ' again.'));
  mock.addEventListener('click', () => act(() => makeTestMock(nodeId), 'The test “' + PIN_TEST + '” mocks ' + nodeId + ' with its pinned output (see Tests).'));
  document.addEventListener('studio:pins', sync);
  if (root) root.addEventListener('studio:rebuilt', sync); // undo and redo
  sync();
  box.append(el('div', { class: 'row' }, pin, un, mock), status);
  return box;
}

// ---- the designer: the node's pin section and the canvas ------------------------

function pretty(v) {
  const s = JSON.stringify(v, null, 2);
  return s === undefined ? 'null' : s;
}

const SHOWN_CHARS = 4000; // a large pin is shown cut (the whole is in the document)

function pinSection(n) {
  const id = n.node_id;
  // tabindex -1: the focus goes to the section when its buttons go (Unpin)
  const section = el('section', { id: 'pin-section', class: 'pin-section', 'aria-labelledby': 'pin-title', tabindex: '-1' });
  if (!canvas.isPinned(studio.doc, id)) {
    section.append(el('h3', { id: 'pin-title', text: 'Pinned output' }),
      el('p', { class: 'hint', id: 'pin-none', text: 'None. Pin an output from the node view’s Output column (double-click the node), from “Run this node…” or from the node on a run’s page: runs from the designer then use it instead of running this node.' }));
    return section;
  }
  const text = pretty(studio.doc.pinned_outputs[id]);
  const pre = el('pre', { class: 'json', id: 'pin-value', tabindex: '0', 'aria-label': 'Pinned output of ' + id, text: text.length > SHOWN_CHARS ? text.slice(0, SHOWN_CHARS) + '\n… (' + text.length + ' characters in all)' : text });
  const status = el('p', { class: 'hint pin-status', id: 'pin-section-status', role: 'status' });
  const un = el('button', { type: 'button', id: 'btn-pin-unpin', 'data-needs': 'edit', text: 'Unpin' });
  const mock = el('button', { type: 'button', id: 'btn-pin-mock-props', 'data-needs': 'edit', text: 'Make a test mock', title: 'Mock this node with its pinned output in the chain\'s test “' + PIN_TEST + '”' });
  un.addEventListener('click', async () => {
    un.disabled = true;
    try {
      await unpin(id);
      const now = document.getElementById('pin-section'); // drawn anew without the pin
      if (now) now.focus();
    } catch (e) { status.textContent = errorText(e); un.disabled = false; }
  });
  mock.addEventListener('click', async () => {
    mock.disabled = true;
    try {
      await makeTestMock(id);
      status.textContent = 'The test “' + PIN_TEST + '” mocks ' + id + ' with this output (see Tests).';
    } catch (e) { status.textContent = errorText(e); } finally { mock.disabled = false; }
  });
  section.append(el('h3', { id: 'pin-title', text: '⚲ Pinned output' }),
    el('p', { class: 'hint', text: 'Runs from the designer use this output instead of running the node; published runs and triggers run it.' }),
    pre, el('div', { class: 'row' }, un, mock), status);
  return section;
}

(function designer() {
  const root = editorRoot();
  const props = document.getElementById('props');
  if (!root || !props) return;

  function decorate() {
    const panel = props.querySelector('.props[data-target="node"]');
    if (!panel || !studio.doc) return;
    const n = studio.doc.nodes.find((x) => x.node_id === panel.dataset.id);
    const old = panel.querySelector('#pin-section');
    // a router's output is its input: it has no pin to show (chain.Pinnable)
    if (!n || n.kind === 'branch' || n.kind === 'condition') { if (old) old.remove(); return; }
    const fresh = pinSection(n);
    if (old) { old.replaceWith(fresh); return; }
    const after = panel.querySelector('#runnode-section') || panel.querySelector('h2');
    if (after) after.after(fresh); else panel.prepend(fresh);
  }
  new MutationObserver(() => { if (!props.querySelector('#pin-section')) decorate(); }).observe(props, { childList: true, subtree: true });

  // A pin changed (here, or by undo and redo): redraw its node and the section.
  function redraw(id) {
    const cy = studio.cy;
    const n = studio.doc && studio.doc.nodes.find((x) => x.node_id === id);
    if (cy && n) canvas.showPin(cy.getElementById(id), n, canvas.isPinned(studio.doc, id));
    decorate();
  }
  // The Run… dialog says which nodes their pins stand in for.
  function runHint() {
    const src = document.getElementById('run-input-source');
    if (!src || !studio.doc) return;
    let hint = document.getElementById('run-pins');
    if (!hint) {
      hint = el('p', { class: 'hint', id: 'run-pins' });
      src.after(hint);
    }
    const ids = Object.keys(studio.doc.pinned_outputs || {});
    hint.hidden = !ids.length;
    hint.textContent = ids.length ? '⚲ Pinned outputs stand in for ' + ids.join(', ') + ': ' + (ids.length === 1 ? 'it does' : 'they do') + ' not run (Unpin in a node\'s properties to run it).' : '';
  }
  const runBtn = document.getElementById('btn-run');
  if (runBtn) runBtn.addEventListener('click', runHint);

  // A pin the Validation panel reports (its node gone, or a router's) gets
  // an Unpin beside it: the node's own panel cannot show a pin of no node.
  const issues = document.getElementById('issues');
  function unpinIssues() {
    for (const link of issues.querySelectorAll('.issue-link[data-field^="pinned_outputs."]')) {
      const li = link.closest('li');
      if (!li || li.querySelector('.pin-unpin-issue')) continue;
      const id = link.dataset.field.slice('pinned_outputs.'.length);
      const b = el('button', { type: 'button', class: 'linklike pin-unpin-issue', 'data-needs': 'edit', 'data-node-id': id, text: 'Unpin ' + id });
      b.addEventListener('click', async () => {
        b.disabled = true;
        try { await unpin(id); } catch (e) { b.disabled = false; b.title = errorText(e); }
      });
      li.append(b);
    }
  }
  if (issues) {
    new MutationObserver(unpinIssues).observe(issues, { childList: true, subtree: true });
    unpinIssues();
  }

  document.addEventListener('studio:pins', (e) => redraw(e.detail.nodeId));
  root.addEventListener('studio:rebuilt', () => decorate());
  root.addEventListener('studio:ready', () => decorate());
})();

// ---- the run page: the drawer's controls (views/pins.templ) ----------------------

(function runPage() {
  const drawer = document.getElementById('drawer');
  if (!drawer || !document.getElementById('runpage')) return;
  drawer.addEventListener('click', async (e) => {
    const b = e.target.closest('#pin-controls [data-pin-action]');
    if (!b) return;
    const box = b.closest('#pin-controls');
    const { chainId, nodeId, runId } = box.dataset;
    const status = box.querySelector('#pin-status');
    const buttons = [...box.querySelectorAll('[data-pin-action]')];
    const show = (pinned) => {
      box.dataset.pinned = pinned ? 'true' : 'false';
      for (const x of buttons) if (x.dataset.pinAction !== 'pin') x.hidden = !pinned;
    };
    for (const x of buttons) x.disabled = true;
    try {
      switch (b.dataset.pinAction) {
        case 'pin': {
          // the whole output, not the drawer's shortened view of it
          const value = await api.get('/v1/runs/' + encodeURIComponent(runId) + '/nodes/' + encodeURIComponent(nodeId) + '/output');
          await pinOutput(nodeId, value, { chainId });
          show(true);
          status.textContent = 'Pinned: runs from the designer use this output instead of running ' + nodeId + '.';
          break;
        }
        case 'unpin':
          await unpin(nodeId, { chainId });
          show(false);
          status.textContent = 'Unpinned: runs from the designer run ' + nodeId + ' again.';
          break;
        case 'mock': {
          const i = await makeTestMock(nodeId, { chainId });
          status.replaceChildren('The test “' + PIN_TEST + '” mocks ' + nodeId + ' with its pinned output. ',
            el('a', { href: '/chains/' + encodeURIComponent(chainId) + '?test=' + i, id: 'pin-test-link', text: 'Open the test' }));
          break;
        }
      }
    } catch (err) {
      status.textContent = errorText(err);
    } finally {
      for (const x of buttons) x.disabled = false;
    }
  });
})();
