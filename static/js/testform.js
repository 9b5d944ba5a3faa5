// A chain test as a form: its name, input, mocks, errors and assertions as
// fields, so a test is written without knowing its JSON. build(test, nodes,
// prefix) returns the form's element and read(), which returns the test
// the form says, or throws an Error naming the field that is wrong (an
// input or a value that is not JSON). Fields the form does not show (a
// description, anything newer) are kept as they were.
import * as common from './common.js';

const el = (tag, attrs, ...kids) => common.el(tag, attrs, ...kids);
const STATUSES = ['', 'completed', 'partial', 'failed', 'paused', 'timed_out', 'cancelled'];

// jsonText shows a value for editing; '' for nothing.
const jsonText = (v) => (v === undefined ? '' : JSON.stringify(v, null, 2));

// parseJSON reads a field's JSON, naming the field when it is not JSON.
function parseJSON(text, what) {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(what + ' is not JSON: ' + err.message);
  }
}

export function build(test, nodes, prefix) {
  let uid = 0;
  const id = (what) => prefix + '-' + what + '-' + (uid++);
  const field = (label, input, hint) => {
    input.id = input.id || id('f');
    return el('div', { class: 'tf-field' }, el('label', { for: input.id, text: label }), input, hint ? el('span', { class: 'hint', text: hint }) : null);
  };
  const nodeSelect = (value, label) => {
    const s = el('select', { 'aria-label': label });
    s.append(el('option', { value: '', text: '— node —' }));
    for (const n of nodes) s.append(el('option', { value: n, text: n }));
    if (value && !nodes.includes(value)) s.append(el('option', { value, text: value + ' (not in the chain)' }));
    s.value = value || '';
    return s;
  };
  const jsonArea = (v, label, rows) => {
    const a = el('textarea', { rows: String(rows || 3), spellcheck: 'false', 'aria-label': label });
    a.value = jsonText(v);
    return a;
  };
  const removeButton = (label, row) => {
    const b = el('button', { type: 'button', class: 'tf-remove', 'aria-label': label, text: 'Remove' });
    // the focus stays in the rows: the next row's remove button, else the
    // previous row's, else the add button of the rows' fieldset
    b.addEventListener('click', () => {
      const next = row.nextElementSibling || row.previousElementSibling;
      const fs = row.closest('fieldset');
      row.remove();
      const to = next ? next.querySelector('.tf-remove') : fs && fs.querySelector('.tf-add');
      if (to) to.focus();
    });
    return b;
  };

  const name = el('input', { type: 'text', id: prefix + '-name', value: test.name || '', autocomplete: 'off', maxlength: '256' });
  const input = jsonArea(test.input === undefined ? {} : test.input, 'Input', 4);

  // mocks and errors: one row a node
  const mockRows = el('div', { class: 'tf-rows' });
  const addMock = (node, value) => {
    const row = el('div', { class: 'tf-row tf-mock' });
    const n = nodeSelect(node, 'Mocked node');
    row.append(n, jsonArea(value, 'Output of the mocked node (JSON)', 2), removeButton('Remove this mock', row));
    mockRows.append(row);
    return n;
  };
  for (const [k, v] of Object.entries(test.mocks || {})) addMock(k, v);
  const errorRows = el('div', { class: 'tf-rows' });
  const addError = (node, msg) => {
    const row = el('div', { class: 'tf-row tf-error' });
    const n = nodeSelect(node, 'Failing node');
    row.append(n, el('input', { type: 'text', value: msg || '', 'aria-label': 'The error the node fails with', placeholder: 'the error message' }), removeButton('Remove this error', row));
    errorRows.append(row);
    return n;
  };
  for (const [k, v] of Object.entries(test.errors || {})) addError(k, v);

  const a = test.assert || {};
  const status = el('select', {});
  for (const s of STATUSES) status.append(el('option', { value: s, text: s || '— any —' }));
  status.value = a.status || '';

  // ran / not ran: one choice per node
  const ran = new Set(a.ran || []);
  const notRan = new Set(a.not_ran || []);
  const routeRows = el('div', { class: 'tf-route', role: 'group', 'aria-label': 'Which nodes must run' });
  for (const n of new Set([...nodes, ...ran, ...notRan])) {
    const s = el('select', { 'aria-label': 'Node ' + n + ' must' });
    for (const [v, t] of [['', 'either'], ['ran', 'run'], ['not_ran', 'not run']]) s.append(el('option', { value: v, text: t }));
    s.value = ran.has(n) ? 'ran' : notRan.has(n) ? 'not_ran' : '';
    s.dataset.node = n;
    routeRows.append(el('label', { class: 'tf-route-row' }, el('code', { text: n }), s));
  }

  // expectations: a path equal to a value, or an expression that holds
  const expectRows = el('div', { class: 'tf-rows' });
  const addExpect = (e) => {
    e = e || { path: '', equals: null };
    const row = el('div', { class: 'tf-row tf-expect' });
    const kind = el('select', { 'aria-label': 'Kind of expectation' });
    kind.append(el('option', { value: 'path', text: 'value at path equals' }), el('option', { value: 'that', text: 'expression holds' }));
    kind.value = e.that !== undefined ? 'that' : 'path';
    const path = el('input', { type: 'text', value: e.path || '', 'aria-label': 'Path (JMESPath)', placeholder: 'e.g. score.output.value', spellcheck: 'false' });
    const equals = jsonArea(e.that !== undefined ? undefined : e.equals, 'The value it equals (JSON)', 1);
    const that = el('input', { type: 'text', value: e.that || '', 'aria-label': 'Expression that must hold', placeholder: "e.g. review.output.level == 'high'", spellcheck: 'false' });
    const node = nodeSelect(e.node || '', 'Node the expectation concerns (optional)');
    const show = () => { const p = kind.value === 'path'; path.hidden = !p; equals.hidden = !p; that.hidden = p; };
    kind.addEventListener('change', show);
    show();
    row.append(kind, path, equals, that, node, removeButton('Remove this expectation', row));
    expectRows.append(row);
    return kind;
  };
  for (const e of a.expect || []) addExpect(e);

  const adder = (text, fn) => {
    const b = el('button', { type: 'button', class: 'tf-add', text });
    b.addEventListener('click', () => { const f = fn(); if (f) f.focus(); });
    return b;
  };

  const form = el('div', { class: 'test-form' },
    field('Name', name),
    field('Input (JSON object)', input, 'what the run starts with'),
    el('fieldset', {}, el('legend', { text: 'Mocks: nodes that give this output instead of running' }), mockRows, adder('Add a mock', () => addMock('', {}))),
    el('fieldset', {}, el('legend', { text: 'Errors: nodes that fail with this message instead of running' }), errorRows, adder('Add an error', () => addError('', ''))),
    el('fieldset', {}, el('legend', { text: 'Expect' }),
      field('Run status', status),
      routeRows,
      expectRows, adder('Add an expectation', () => addExpect(null))));

  function read() {
    const t = Object.assign({}, test);
    const n = name.value.trim();
    if (!n) throw new Error('the test needs a name');
    t.name = n;
    const inp = input.value.trim() ? parseJSON(input.value, 'Input') : {};
    if (!inp || typeof inp !== 'object' || Array.isArray(inp)) throw new Error('Input must be a JSON object');
    t.input = inp;
    const mocks = {};
    for (const row of mockRows.children) {
      const [sel, area] = row.querySelectorAll('select, textarea');
      if (!sel.value) throw new Error('a mock names no node');
      mocks[sel.value] = area.value.trim() ? parseJSON(area.value, 'The mock of ' + sel.value) : null;
    }
    if (Object.keys(mocks).length) t.mocks = mocks; else delete t.mocks;
    const errors = {};
    for (const row of errorRows.children) {
      const sel = row.querySelector('select');
      const msg = row.querySelector('input').value.trim();
      if (!sel.value) throw new Error('an error names no node');
      if (!msg) throw new Error('the error of ' + sel.value + ' has no message');
      errors[sel.value] = msg;
    }
    if (Object.keys(errors).length) t.errors = errors; else delete t.errors;
    const as = Object.assign({}, test.assert || {});
    if (status.value) as.status = status.value; else delete as.status;
    const r = [], nr = [];
    for (const s of routeRows.querySelectorAll('select')) {
      if (s.value === 'ran') r.push(s.dataset.node);
      if (s.value === 'not_ran') nr.push(s.dataset.node);
    }
    if (r.length) as.ran = r; else delete as.ran;
    if (nr.length) as.not_ran = nr; else delete as.not_ran;
    const ex = [];
    for (const row of expectRows.children) {
      const [kind, node] = row.querySelectorAll('select');
      const e = {};
      if (kind.value === 'that') {
        const that = row.querySelector('input[aria-label^="Expression"]').value.trim();
        if (!that) throw new Error('an expectation has no expression');
        e.that = that;
      } else {
        const path = row.querySelector('input[aria-label^="Path"]').value.trim();
        if (!path) throw new Error('an expectation has no path');
        const v = row.querySelector('textarea').value.trim();
        e.path = path;
        e.equals = v ? parseJSON(v, 'The value of ' + path) : null;
      }
      if (node.value) e.node = node.value;
      ex.push(e);
    }
    if (ex.length) as.expect = ex; else delete as.expect;
    if (Object.keys(as).length) t.assert = as; else delete t.assert;
    return t;
  }

  return { form, read, focus: () => name.focus() };
}
