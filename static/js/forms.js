// Forms from schemas: the property panel's form for a node's static input
// (and an agent node's config), built from the JSON Schema of the selected
// tool or agent (views/forms.templ renders the container).
//
// The form edits one object (its state); editor.js reads it back through
// data-t="form" (read, exported). A raw-JSON view edits the same state, so
// the two stay in sync both ways. A field can instead take an expression:
// that moves the key to the node's input_map (whose entry wins over a static
// value at run time, as before), and the field says so.
import * as api from './api.js';

const INVALID = Symbol('invalid form');
const MAX_ROWS = 200; // rows one list or map field renders
let uid = 0;
const nextId = (p) => 'sf-' + p + '-' + (++uid);

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') e.textContent = v; else e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids) if (k) e.append(k);
  return e;
}

const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const types = (s) => (Array.isArray(s.type) ? s.type : s.type ? [s.type] : []);
const mainType = (s) => types(s).find((t) => t !== 'null') || '';

function order(schema) {
  const props = Object.keys(schema.properties || {});
  const want = Array.isArray(schema['x-order']) ? schema['x-order'].filter((k) => props.includes(k)) : [];
  return want.concat(props.filter((k) => !want.includes(k)).sort());
}

function parseSchema(text) {
  if (!text) return null;
  try { const s = JSON.parse(text); return isObj(s) ? s : null; } catch { return null; }
}

// ---- reading what a person typed ------------------------------------------

// typed converts a text field's content to the value for schema s; what does
// not fit stays text, so validation names it (`input.ms: want a number, got "fast"`).
function typed(s, text) {
  const t = mainType(s);
  if (text.trim() === '') return undefined;
  if (t === 'number' || t === 'integer') {
    const n = Number(text.trim());
    return /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text.trim()) && Number.isFinite(n) ? n : text;
  }
  if (t === 'string') return text;
  if (t === 'object' || t === 'array' || t === '') {
    try { return JSON.parse(text); } catch { return text; }
  }
  return text;
}

function shown(s, v) {
  if (v === undefined) return '';
  if (typeof v === 'string') return v;
  return JSON.stringify(v);
}

// problem says at once why a value does not fit (the save's validation says
// the same with the field path).
function problem(s, v) {
  if (v === undefined) return '';
  const t = mainType(s);
  const got = typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v);
  if ((t === 'number' || t === 'integer') && typeof v !== 'number') return 'want a number, got ' + got;
  if (t === 'integer' && !Number.isInteger(v)) return 'want an integer, got ' + got;
  if (typeof v === 'number') {
    if (typeof s.minimum === 'number' && v < s.minimum) return 'want at least ' + s.minimum + ', got ' + v;
    if (typeof s.maximum === 'number' && v > s.maximum) return 'want at most ' + s.maximum + ', got ' + v;
    if (typeof s.exclusiveMinimum === 'number' && v <= s.exclusiveMinimum) return 'want more than ' + s.exclusiveMinimum + ', got ' + v;
  }
  return '';
}

// ---- the form ----------------------------------------------------------------

// f is the per-form controller kept on the fieldset.
function controller(fs) {
  if (fs._sf) return fs._sf;
  const f = {
    fs,
    schema: parseSchema(fs.dataset.schema),
    state: {},
    invalid: false,
    fields: fs.querySelector('.sf-fields'),
    raw: fs.querySelector('.sf-raw'),
    rawText: fs.querySelector('.sf-raw-text'),
    rawErr: fs.querySelector('.sf-raw-err'),
    toggle: fs.querySelector('.sf-raw-toggle'),
    note: fs.querySelector('.sf-note'),
  };
  try { const v = JSON.parse(fs.dataset.value || '{}'); f.state = isObj(v) ? v : {}; } catch { f.state = {}; }
  fs._sf = f;
  f.toggle.addEventListener('click', () => setRaw(f, f.raw.hidden));
  f.rawText.addEventListener('input', (e) => {
    if (!e.isTrusted) return; // commit()'s own nudge to editor.js
    const txt = f.rawText.value.trim();
    let v;
    try { v = txt === '' ? {} : JSON.parse(txt); } catch (err) {
      return rawProblem(f, 'Not JSON: ' + err.message);
    }
    if (!isObj(v)) return rawProblem(f, 'The ' + fs.dataset.f + ' must be a JSON object.');
    rawProblem(f, '');
    f.state = v;
    render(f); // the hidden fields follow
  });
  return f;
}

function rawProblem(f, msg) {
  f.invalid = !!msg;
  f.rawErr.textContent = msg;
  if (msg) f.rawText.setAttribute('aria-invalid', 'true'); else f.rawText.removeAttribute('aria-invalid');
}

function setRaw(f, on) {
  if (on) {
    f.rawText.value = JSON.stringify(f.state, null, 2);
    rawProblem(f, '');
  } else if (f.invalid) {
    f.rawText.focus();
    return; // stay until the JSON parses: the fields cannot show it
  }
  f.raw.hidden = !on;
  f.fields.hidden = on && !!f.schema;
  f.toggle.setAttribute('aria-pressed', on ? 'true' : 'false');
  f.toggle.textContent = on && f.schema ? 'Form' : 'Raw JSON';
  if (on) f.rawText.focus();
  else {
    render(f);
    const first = f.fields.querySelector('input, select, textarea, button');
    if (first) first.focus();
  }
}

// commit tells editor.js the value changed (its input listener saves).
function commit(f) {
  if (!f.raw.hidden) return;
  f.rawText.value = JSON.stringify(f.state, null, 2);
  f.rawText.dispatchEvent(new Event('input', { bubbles: true }));
}

// inputMap returns key → expression of the node's input_map rows.
function inputMap(f) {
  const out = new Map();
  if (f.fs.dataset.f !== 'input') return out;
  const kv = f.fs.closest('.props') && f.fs.closest('.props').querySelector('fieldset[data-f="input_map"]');
  if (!kv) return out;
  for (const row of kv.querySelectorAll(':scope > .kv-rows > .kv-row')) {
    const k = row.querySelector('.k').value.trim();
    const v = row.querySelector('.v-wrap input');
    if (k) out.set(k, { expr: v ? v.value : '', row });
  }
  return out;
}

// useExpression moves a field to the input_map: a new row keyed by it,
// focused, and the static value dropped.
function useExpression(f, key) {
  const kv = f.fs.closest('.props').querySelector('fieldset[data-f="input_map"]');
  if (!kv) return;
  kv.querySelector('.add-row').click(); // editor.js adds and focuses the row
  const rows = kv.querySelectorAll(':scope > .kv-rows > .kv-row');
  const row = rows[rows.length - 1];
  row.querySelector('.k').value = key;
  delete f.state[key];
  render(f);
  commit(f);
  row.querySelector('.k').dispatchEvent(new Event('input', { bubbles: true }));
  const v = row.querySelector('.v-wrap input');
  if (v) v.focus();
}

function render(f) {
  const s = f.schema;
  f.fields.replaceChildren();
  f.toggle.hidden = !s;
  if (!s) {
    f.raw.hidden = false;
    if (document.activeElement !== f.rawText) f.rawText.value = JSON.stringify(f.state, null, 2);
    f.note.textContent = f.fs.dataset.source && !selectedName(f) ? '' : 'No schema declared: edit the value as JSON.';
    return;
  }
  const props = s.properties || {};
  const req = new Set(Array.isArray(s.required) ? s.required : []);
  const im = inputMap(f);
  const keys = order(s);
  for (const k of keys) {
    f.fields.append(field(f, [k], props[k] || {}, req.has(k), im.get(k)));
  }
  const extra = Object.keys(f.state).filter((k) => !(k in props));
  f.note.textContent = extra.length && s.additionalProperties === false ? 'Also set, not fields of this ' + what(f) + ': ' + extra.join(', ') + ' (remove them in Raw JSON).' : '';
  if (s.additionalProperties !== false) f.fields.append(others(f, props, extra, im));
}

// others edits the keys the schema does not declare (a tool like echo
// takes any; a value kept from another tool shows here, removable).
function others(f, props, extra, im) {
  const keys = Object.keys(props);
  const box = el('fieldset', { class: 'sf-others' }, el('legend', { text: keys.length ? 'Other values' : 'Values' }));
  box.append(el('p', { class: 'hint', text: keys.length ? 'not fields of this ' + what(f) + '; JSON when it parses, text otherwise' : 'any keys; JSON when it parses, text otherwise' }));
  for (const k of extra) {
    let key = k;
    const ki = el('input', { type: 'text', class: 'sf-key', value: k, placeholder: 'key', 'aria-label': 'Key', autocomplete: 'off', spellcheck: 'false' });
    const vi = el('input', { type: 'text', class: 'sf-item', value: shown({}, f.state[k]), placeholder: 'value', 'aria-label': k + ' value', autocomplete: 'off', spellcheck: 'false' });
    ki.addEventListener('input', () => {
      const nk = ki.value.trim();
      if (!nk || (nk !== key && (nk in f.state || nk in props))) { ki.setAttribute('aria-invalid', 'true'); return; }
      ki.removeAttribute('aria-invalid');
      const v = f.state[key];
      delete f.state[key];
      f.state[nk] = v;
      key = nk;
      vi.setAttribute('aria-label', nk + ' value');
    });
    vi.addEventListener('input', () => { f.state[key] = typed({}, vi.value) ?? ''; });
    const rm = el('button', { type: 'button', class: 'small sf-remove', 'aria-label': 'Remove ' + k, text: '✕' });
    rm.addEventListener('click', () => {
      const i = extra.indexOf(k);
      delete f.state[key];
      render(f);
      commit(f);
      // the focus stays in the rows: the next one's remove button, else the
      // previous one's, else the add button
      const rms = f.fields.querySelectorAll('.sf-others > .sf-row > .sf-remove');
      const to = rms[i] || rms[i - 1] || f.fields.querySelector('.sf-add-other');
      if (to) to.focus();
    });
    const row = el('div', { class: 'sf-row sf-kv' }, ki, vi, rm);
    if (im.has(key)) row.append(el('span', { class: 'hint', text: 'input_map sets it' }));
    box.append(row);
  }
  const add = el('button', { type: 'button', class: 'small sf-add sf-add-other', text: keys.length ? '+ Add another value' : '+ Add', 'aria-label': keys.length ? 'Add another value' : 'Add a value' });
  add.addEventListener('click', () => {
    let k = 'key';
    for (let n = 2; k in f.state || k in props; n++) k = 'key' + n;
    f.state[k] = '';
    render(f);
    commit(f);
    const ins = f.fields.querySelectorAll('.sf-others .sf-key');
    if (ins.length) { ins[ins.length - 1].focus(); ins[ins.length - 1].select(); }
  });
  if (keys.length && !extra.length) return add; // the declared fields come first: no empty box
  box.append(add);
  return box;
}

function what(f) { return f.fs.dataset.source === 'agent-select' ? 'agent' : f.fs.dataset.f === 'config' ? 'node' : 'tool'; }

function selectedName(f) {
  const sel = f.fs.dataset.source && document.getElementById(f.fs.dataset.source);
  return sel ? sel.value : '';
}

function getAt(obj, path) {
  let o = obj;
  for (const p of path) { if (o == null) return undefined; o = o[p]; }
  return o;
}
// setAt writes v at path (undefined removes it) and drops emptied objects.
function setAt(obj, path, v) {
  let o = obj;
  const chain = [];
  for (let i = 0; i < path.length - 1; i++) {
    if (!isObj(o[path[i]]) && !Array.isArray(o[path[i]])) { if (v === undefined) return; o[path[i]] = typeof path[i + 1] === 'number' ? [] : {}; }
    chain.push([o, path[i]]);
    o = o[path[i]];
  }
  const last = path[path.length - 1];
  if (v === undefined) { if (Array.isArray(o)) o.splice(last, 1); else delete o[last]; } else o[last] = v;
  for (let i = chain.length - 1; i >= 0; i--) {
    const [parent, key] = chain[i];
    const c = parent[key];
    if (isObj(c) && Object.keys(c).length === 0) delete parent[key]; else break;
  }
}

function pathText(f, path) {
  return f.fs.dataset.f + path.map((p) => (typeof p === 'number' ? '[' + p + ']' : '.' + p)).join('');
}

// field renders one property: label (required mark), widget, description.
function field(f, path, s, required, mapped) {
  const key = path[path.length - 1];
  const t = mainType(s);
  const id = nextId('f');
  const helpId = id + '-help';
  const errId = id + '-err';
  const wrap = el('div', { class: 'sf-field', 'data-path': pathText(f, path) });
  const lbl = el('label', { class: 'lbl', for: id, text: String(key) });
  if (required) lbl.append(el('abbr', { class: 'sf-req', title: 'required', text: ' *' }));
  if (t) lbl.append(el('span', { class: 'sf-type', text: ' ' + t }));
  wrap.append(lbl);
  const help = s.description ? el('span', { class: 'hint sf-help', id: helpId, text: s.description }) : null;
  const err = el('span', { class: 'expr-err sf-err', id: errId, role: 'alert' });
  const described = [help ? helpId : '', errId].filter(Boolean).join(' ');

  if (mapped) {
    // the input_map entry wins over a static value: say so, and lead there
    const shownExpr = el('input', { type: 'text', id, class: 'expr', value: mapped.expr, readonly: true, 'aria-describedby': described });
    const go = el('button', { type: 'button', class: 'small linklike', text: 'Edit in Input map' });
    go.addEventListener('click', () => { const v = mapped.row.querySelector('.v-wrap input'); if (v) v.focus(); });
    wrap.append(el('div', { class: 'sf-row' }, shownExpr, go), el('span', { class: 'hint', text: 'Set by an expression (input_map), evaluated when the node runs.' }));
    if (help) wrap.append(help);
    return wrap;
  }

  const cur = getAt(f.state, path);
  let widget;
  const change = (v) => {
    setAt(f.state, path, v);
    const p = problem(s, v);
    err.textContent = p;
    if (p) widget.setAttribute('aria-invalid', 'true'); else widget.removeAttribute('aria-invalid');
  };
  const placeholder = s.default !== undefined ? 'default: ' + shown(s, s.default) : '';

  if (s['x-credential']) {
    // a stored credential, by name: the select offers those this chain
    // may use (never a value; the API has none to give); with
    // x-credential-types (a model's), only the types its provider, the
    // sibling field, takes, offered anew when the provider changes
    widget = el('select', { id, class: 'sf-credential', 'aria-describedby': described, 'aria-required': required ? 'true' : null });
    widget.append(el('option', { value: '', text: '— choose a credential —' }));
    if (cur) widget.append(el('option', { value: cur, text: cur, selected: true }));
    const byProvider = isObj(s['x-credential-types']) ? s['x-credential-types'] : null;
    const providerPath = path.slice(0, -1).concat(['provider']);
    const fill = () => credentialList().then((all) => {
      const provider = getAt(f.state, providerPath) || 'openai';
      const fits = byProvider && Array.isArray(byProvider[provider]) ? byProvider[provider] : null;
      const names = all.filter((c) => !fits || fits.includes(c.type)).map((c) => c.name);
      const keep = widget.value;
      const none = fits ? '— no ' + fits.join(' or ') + ' credential: an admin adds one in Settings → Credentials —' : '— no credentials: an admin adds them in Settings → Credentials —';
      widget.replaceChildren(el('option', { value: '', text: names.length ? '— choose a credential —' : none }));
      for (const n of names) widget.append(el('option', { value: n, text: n, selected: n === keep }));
      if (keep && !names.includes(keep)) {
        const other = all.find((c) => c.name === keep);
        widget.append(el('option', { value: keep, text: keep + (other ? ' (a ' + other.type + ' credential: not for ' + provider + ')' : ' (not available to this chain)'), selected: true }));
      }
    });
    fill();
    if (byProvider) {
      const onChange = (e) => {
        if (!widget.isConnected) { f.fs.removeEventListener('change', onChange); return; } // drawn anew
        if (e.target !== widget && e.target.closest('.sf-object') === wrap.closest('.sf-object')) fill();
      };
      f.fs.addEventListener('change', onChange);
    }
    widget.addEventListener('change', () => change(widget.value || undefined));
  } else if (s['x-format'] === 'json') {
    // a JSON value edited as text (a schema): kept while it parses, the
    // parser's message under it while it does not
    const ta = el('textarea', { id, rows: '6', class: 'sf-json', autocomplete: 'off', spellcheck: 'false', 'aria-describedby': described, 'aria-required': required ? 'true' : null });
    ta.value = cur === undefined ? '' : JSON.stringify(cur, null, 2);
    ta.addEventListener('input', () => {
      if (ta.value.trim() === '') { change(undefined); return; }
      let v;
      try { v = JSON.parse(ta.value); } catch (e) {
        err.textContent = 'not JSON yet: ' + e.message;
        ta.setAttribute('aria-invalid', 'true');
        return;
      }
      change(v);
    });
    widget = ta;
  } else if (s['x-format'] === 'javascript') {
    // a script: CodeMirror over a textarea (the textarea stays the value,
    // and the whole field while the editor loads or if it cannot)
    lbl.id = id + '-label';
    const ta = el('textarea', { id, rows: '8', class: 'sf-code-text', autocomplete: 'off', spellcheck: 'false', 'aria-describedby': described, 'aria-required': required ? 'true' : null });
    ta.value = typeof cur === 'string' ? cur : '';
    ta.addEventListener('input', () => { change(ta.value === '' ? undefined : ta.value); checkScript(f, ta, err); });
    widget = el('div', { class: 'sf-code' }, ta);
    wrap.append(el('div', { class: 'sf-row' }, widget));
    if (help) wrap.append(help);
    wrap.append(el('span', { class: 'hint sf-code-keys', text: 'Tab indents; press Escape, then Tab, to leave the editor. Ctrl+Space lists the names the script reads.' }));
    wrap.append(err);
    mountCode(f, ta, lbl.id, err);
    return wrap;
  } else if (Array.isArray(s.enum) || t === 'boolean') {
    const opts = Array.isArray(s.enum) ? s.enum : [true, false];
    widget = el('select', { id, 'aria-describedby': described, 'aria-required': required ? 'true' : null });
    widget.append(el('option', { value: '', text: s.default !== undefined ? '— default: ' + shown(s, s.default) + ' —' : '— not set —' }));
    let found = cur === undefined;
    opts.forEach((o, i) => {
      const sel = cur !== undefined && JSON.stringify(o) === JSON.stringify(cur);
      found = found || sel;
      widget.append(el('option', { value: String(i), text: shown(s, o), selected: sel }));
    });
    if (!found) widget.append(el('option', { value: 'cur', text: shown(s, cur) + ' (not allowed)', selected: true }));
    widget.addEventListener('change', () => {
      if (widget.value === 'cur') return;
      change(widget.value === '' ? undefined : opts[Number(widget.value)]);
    });
  } else if (t === 'object' && s.properties && Object.keys(s.properties).length) {
    const inner = el('fieldset', { class: 'sf-object', id });
    inner.append(el('legend', { text: String(key) }));
    const req = new Set(Array.isArray(s.required) ? s.required : []);
    for (const k of order(s)) inner.append(field(f, path.concat([k]), s.properties[k] || {}, req.has(k), null));
    wrap.replaceChildren(inner);
    if (help) inner.insertBefore(help, inner.children[1] || null);
    return wrap;
  } else if (t === 'object' || t === 'array') {
    widget = rows(f, path, s, t, id, described);
    wrap.append(widget);
    if (help) wrap.append(help);
    wrap.append(err);
    return wrap;
  } else {
    const long = t === 'string' && /template|expression|prompt|stdin|body/.test(String(key));
    widget = el(long ? 'textarea' : 'input', {
      id, type: long ? null : 'text', rows: long ? '3' : null, placeholder,
      inputmode: t === 'number' || t === 'integer' ? 'decimal' : null,
      autocomplete: 'off', spellcheck: 'false', 'aria-describedby': described, 'aria-required': required ? 'true' : null,
    });
    widget.value = shown(s, cur);
    widget.addEventListener('input', () => change(typed(s, widget.value)));
    if (s['x-models']) modelList(f, path, widget, wrap, err);
    if (s['x-tools'] || s['x-chains']) nameList(widget, wrap, s['x-tools'] ? toolNames : chainNames);
  }
  const row = el('div', { class: 'sf-row' }, widget);
  if (f.fs.dataset.f === 'input' && path.length === 1 && f.fs.closest('.props') && f.fs.closest('.props').querySelector('fieldset[data-f="input_map"]')) {
    const fx = el('button', { type: 'button', class: 'small sf-fx', title: 'Use an expression for ' + key + ' (input_map)', 'aria-label': 'ƒx: use an expression for ' + key, text: 'ƒx' });
    fx.addEventListener('click', () => useExpression(f, key));
    row.append(fx);
  }
  wrap.append(row);
  if (help) wrap.append(help);
  wrap.append(err);
  const p = problem(s, cur);
  if (p) { err.textContent = p; widget.setAttribute('aria-invalid', 'true'); }
  return wrap;
}

// ---- the code node's script editor ----

// loadCodeMirror loads the vendored bundle once, on the first script field.
let codeMirror = null;
function loadCodeMirror() {
  if (!codeMirror) {
    codeMirror = new Promise((resolve, reject) => {
      if (window.StudioCode) { resolve(window.StudioCode); return; }
      const sc = document.createElement('script');
      sc.src = new URL('../vendor/codemirror.js', import.meta.url).href;
      sc.onload = () => (window.StudioCode ? resolve(window.StudioCode) : reject(new Error('no editor')));
      sc.onerror = () => { codeMirror = null; reject(new Error('the code editor did not load')); };
      document.head.append(sc);
    });
  }
  return codeMirror;
}

// The names a script reads (engine/sandbox.Names), with what they hold.
const SCRIPT_NAMES = [
  ['input', "the run's input"], ['state', "the run's state"], ['node_results', 'node id → output of every finished node'],
  ['nodes', 'node_results, shorter'], ['output', 'the data this node received from upstream'],
  ['params', "this node's other input fields (input_map)"], ['item', 'the item, in a map body'], ['index', "the item's index, in a map body"],
  ['console', 'console.log(…): lines kept with the run'],
];

function mountCode(f, ta, labelId, err) {
  loadCodeMirror().then((cm) => {
    if (!ta.isConnected) return;
    const lbl = document.getElementById(labelId);
    const ed = cm.create(ta.parentElement, {
      doc: ta.value, label: (lbl ? lbl.firstChild.textContent : 'code') + ', JavaScript',
      onChange: (text) => { ta.value = text; ta.dispatchEvent(new Event('input', { bubbles: true })); },
      complete: (word) => scriptCompletions(f, ta, word),
    });
    // a long line scrolls the editor sideways: its scroller needs content
    // that says it takes the focus (axe: scrollable-region-focusable)
    ed.view.contentDOM.tabIndex = 0;
    ta.hidden = true;
    ta.codeEditor = ed;
    checkScript(f, ta, err);
  }).catch(() => { /* the textarea keeps working */ });
}

// checkScript asks the engine whether the script parses (POST /v1/validate
// with the node alone) and puts its errors, with line and column, in the
// editor and under it.
const checks = new WeakMap();
function checkScript(f, ta, err) {
  clearTimeout(checks.get(ta));
  checks.set(ta, setTimeout(() => {
    const code = ta.value;
    const doc = { name: 'script-check', nodes: [{ node_id: nodeIdOf(ta) || 'code', kind: 'tool', name: 'code', input: { code } }] };
    api.post('/v1/validate', doc).then((b) => {
      if (ta.value !== code) return; // typed on since
      const issues = ((b && b.issues) || []).filter((i) => i.rule === 'input_check' && i.field === 'input.code');
      if (ta.codeEditor) ta.codeEditor.setErrors(issues.map((i) => ({ line: i.line, column: i.column, message: i.message })));
      err.textContent = issues.map((i) => i.message).join('; ');
      if (issues.length) ta.setAttribute('aria-invalid', 'true'); else ta.removeAttribute('aria-invalid');
    }).catch(() => {});
  }, 300));
}

function nodeIdOf(elm) {
  const panel = elm.closest('.props');
  return panel && panel.dataset.target === 'node' ? panel.dataset.id : '';
}

// scriptCompletions offers the names a script reads, then the fields the
// expression editor's scope service knows under them (the last run's data,
// or the tools' schemas): input.…, nodes.<id>.…, state.….
const scopes = new Map();
function scriptCompletions(f, ta, word) {
  const segs = word.split('.');
  if (segs.length === 1) {
    return SCRIPT_NAMES.map(([n, d]) => ({ label: n, type: 'variable', detail: d }));
  }
  const root = document.getElementById('editor');
  const node = nodeIdOf(ta);
  if (!root || !node) return [];
  const key = node;
  let c = scopes.get(key);
  if (!c || performance.now() - c.at > 5000) {
    c = { at: performance.now(), p: api.get('/v1/chains/' + encodeURIComponent(root.dataset.chainId) + '/expr/context?node=' + encodeURIComponent(node) + '&field=' + encodeURIComponent('input_map.code')).catch(() => null) };
    scopes.set(key, c);
  }
  return c.p.then((ctx) => {
    if (!ctx) return [];
    const path = segs.slice(0, -1);
    if ((path[0] === 'nodes' || path[0] === 'node_results') && path.length === 1) {
      const ids = new Set([...(ctx.upstream || []), ...Object.keys((ctx.shapes && ctx.shapes.node_results && ctx.shapes.node_results.keys) || {})]);
      return [...ids].filter((id) => /^[A-Za-z_$][\w$]*$/.test(id)).map((id) => ({ label: id, type: 'property', detail: 'node output' }));
    }
    let shape;
    if (path[0] === 'nodes' || path[0] === 'node_results') shape = shapeOf(ctx, [path[1], 'output', ...path.slice(2)]);
    else shape = shapeOf(ctx, path);
    if (!shape || !shape.keys) return [];
    return Object.keys(shape.keys).sort().map((k) => ({ label: k, type: 'property', detail: shape.keys[k].type || '' }));
  });
}

function shapeOf(ctx, segs) {
  let s = ctx.shapes && ctx.shapes[segs[0]];
  for (const seg of segs.slice(1)) {
    if (!s) return null;
    s = s.keys && s.keys[seg];
  }
  return s;
}

// modelList offers, on a model block's name field, the models its server
// lists (GET /v1/models with the block's provider, credential and url, as
// filled in), asked when the field gets the focus after a change of them;
// a status line says how many, or why there is no list. Typing any name
// stays possible: a server may serve models it does not list.
function modelList(f, path, input, wrap, err) {
  const list = el('datalist', { id: input.id + '-models' });
  // a model the server does not list is said under the field as it is
  // left (the server is asked when the field gets the focus); a server
  // that lists none leaves any name
  let listed = null;
  const check = () => {
    if (!listed || !input.value.trim() || listed.includes(input.value.trim())) {
      if (err.dataset.model) { err.textContent = ''; delete err.dataset.model; input.removeAttribute('aria-invalid'); }
      return;
    }
    err.textContent = input.value.trim() + ' is not among the ' + listed.length + ' models the server lists: pick one from the list, or check the name.';
    err.dataset.model = '1';
    input.setAttribute('aria-invalid', 'true');
  };
  input.addEventListener('blur', check);
  input.addEventListener('input', () => { if (err.dataset.model) check(); });
  const status = el('span', { class: 'hint sf-models', role: 'status', id: input.id + '-models-status' });
  input.setAttribute('list', list.id);
  input.setAttribute('aria-describedby', ((input.getAttribute('aria-describedby') || '') + ' ' + status.id).trim());
  let asked = '';
  const ask = async () => {
    const block = getAt(f.state, path.slice(0, -1)) || {};
    const root = document.querySelector('[data-chain-id]');
    const q = new URLSearchParams();
    for (const k of ['provider', 'credential', 'url']) if (typeof block[k] === 'string' && block[k]) q.set(k, block[k]);
    if (root && root.dataset.chainId) q.set('chain', root.dataset.chainId);
    const key = q.toString();
    if (key === asked) return;
    asked = key;
    status.textContent = 'Asking the server for its models…';
    try {
      const r = await api.get('/v1/models?' + key);
      if (asked !== key) return;
      list.replaceChildren(...(r.models || []).map((m) => el('option', { value: m })));
      listed = r.listed ? (r.models || []) : null;
      status.textContent = r.listed ? r.models.length + ' models listed by the server: type to pick one.' : 'The server lists no models (' + (r.reason || 'no list') + '): type the model’s name.';
    } catch (e) {
      if (asked !== key) return;
      asked = ''; // asked again at the next focus
      list.replaceChildren();
      status.textContent = 'No model list: ' + e.message;
    }
  };
  input.addEventListener('focus', ask);
  wrap.append(list, status);
}

// nameList offers names to pick in a text field (what it may name: the
// studio's tools, its saved chains), asked for once per page when the
// field first gets the focus; any name can still be typed.
function nameList(input, wrap, names) {
  const list = el('datalist', { id: input.id + '-names' });
  input.setAttribute('list', list.id);
  input.addEventListener('focus', () => names().then((ns) => { if (!list.children.length) list.replaceChildren(...ns.map((n) => el('option', { value: n }))); }), { once: true });
  wrap.append(list);
}

// toolNames and chainNames are, once per page, the studio's tools (built-in
// and MCP) and its saved chains, by name.
let tools = null;
function toolNames() {
  if (!tools) tools = api.get('/v1/tools').then((b) => (b.tools || []).filter((t) => t.enabled !== false).map((t) => t.name)).catch(() => []);
  return tools;
}
let chains = null;
function chainNames() {
  if (!chains) chains = api.get('/v1/chains?limit=1000').then((b) => (b.chains || []).map((c) => c.name)).catch(() => []);
  return chains;
}

// credentialList lists, once per page, the credentials this chain may use
// ({name, type}).
let credentials = null;
function credentialList() {
  if (!credentials) {
    const root = document.querySelector('[data-chain-id]');
    const q = root ? '?chain=' + encodeURIComponent(root.dataset.chainId) : '';
    credentials = api.get('/v1/credentials' + q)
      .then((b) => (b.credentials || []).map((c) => ({ name: c.name, type: c.type })))
      .catch(() => []); // none offered: the field still takes a typed name
  }
  return credentials;
}

// rows edits a list (items) or a map (additionalProperties): add and remove rows.
function rows(f, path, s, t, id, described) {
  const box = el('div', { class: 'sf-rows', id, role: 'group', 'aria-describedby': described });
  const cur = getAt(f.state, path);
  const itemSchema = (t === 'array' ? s.items : s.additionalProperties);
  const is = isObj(itemSchema) ? itemSchema : {};
  const name = String(path[path.length - 1]);
  // redraw draws the rows anew; focus is 'last' (a row was added: its first
  // field) or the index of the row removed: the focus stays in the rows, on
  // the remove button of the row now there, else of the one before, else on
  // the add button
  const redraw = (focus) => {
    const fresh = rows(f, path, s, t, id, described);
    box.replaceWith(fresh);
    const ins = fresh.querySelectorAll('input');
    const rms = fresh.querySelectorAll(':scope > .sf-row > .sf-remove');
    const objects = fresh.querySelectorAll(':scope > .sf-item-object');
    if (focus === 'last' && objects.length) { const first = objects[objects.length - 1].querySelector('input, select, textarea'); if (first) first.focus(); }
    else if (focus === 'last' && ins.length) ins[t === 'array' ? ins.length - 1 : ins.length - 2].focus();
    else if (typeof focus === 'number' && objects.length) { const r = fresh.querySelectorAll('.sf-item-object .sf-remove'); (r[focus] || r[focus - 1] || fresh.querySelector('.sf-add')).focus(); }
    else if (typeof focus === 'number' && (rms[focus] || rms[focus - 1])) (rms[focus] || rms[focus - 1]).focus();
    else { const add = fresh.querySelector('.sf-add'); if (add) add.focus(); }
    commit(f);
  };
  if (t === 'array' && isObj(is.properties) && Object.keys(is.properties).length) {
    // items that are objects with known fields (an agent's tools): each a
    // form of its own, numbered, with its remove button
    const list = Array.isArray(cur) ? cur : [];
    list.slice(0, MAX_ROWS).forEach((v, i) => {
      if (!isObj(v)) list[i] = {};
      const item = field(f, path.concat([i]), { ...is, description: undefined }, false, null);
      const legend = item.querySelector('legend');
      if (legend) legend.textContent = name + ' ' + (i + 1);
      const rm = el('button', { type: 'button', class: 'small sf-remove', 'aria-label': 'Remove ' + name + ' ' + (i + 1), text: '✕ Remove' });
      rm.addEventListener('click', () => { const a = getAt(f.state, path); a.splice(i, 1); if (!a.length) setAt(f.state, path, undefined); redraw(i); });
      (item.querySelector('fieldset') || item).append(rm);
      box.append(el('div', { class: 'sf-row sf-item-object' }, item));
    });
    if (!Array.isArray(cur) && cur !== undefined) box.append(el('p', { class: 'expr-err', text: 'want a list, got ' + JSON.stringify(cur) + ' (fix it in Raw JSON)' }));
  } else if (t === 'array') {
    const list = Array.isArray(cur) ? cur : [];
    list.slice(0, MAX_ROWS).forEach((v, i) => {
      const inp = el('input', { type: 'text', class: 'sf-item', value: shown(is, v), 'aria-label': name + ' item ' + (i + 1), autocomplete: 'off', spellcheck: 'false' });
      inp.addEventListener('input', () => { const a = getAt(f.state, path); a[i] = typed(is, inp.value) ?? ''; });
      const rm = el('button', { type: 'button', class: 'small sf-remove', 'aria-label': 'Remove ' + name + ' item ' + (i + 1), text: '✕' });
      rm.addEventListener('click', () => { const a = getAt(f.state, path); a.splice(i, 1); if (!a.length) setAt(f.state, path, undefined); redraw(i); });
      box.append(el('div', { class: 'sf-row' }, inp, rm));
    });
    if (!Array.isArray(cur) && cur !== undefined) box.append(el('p', { class: 'expr-err', text: 'want a list, got ' + JSON.stringify(cur) + ' (fix it in Raw JSON)' }));
  } else {
    const m = isObj(cur) ? cur : {};
    Object.keys(m).slice(0, MAX_ROWS).forEach((k, i) => {
      let key = k;
      const ki = el('input', { type: 'text', class: 'sf-key', value: k, placeholder: 'name', 'aria-label': name + ' name', autocomplete: 'off', spellcheck: 'false' });
      const vi = el('input', { type: 'text', class: 'sf-item', value: shown(is, m[k]), placeholder: 'value', 'aria-label': name + ' ' + k + ' value', autocomplete: 'off', spellcheck: 'false' });
      ki.addEventListener('input', () => {
        const o = getAt(f.state, path);
        const nk = ki.value;
        if (!nk || (nk !== key && nk in o)) { ki.setAttribute('aria-invalid', 'true'); return; }
        ki.removeAttribute('aria-invalid');
        const entries = Object.entries(o).map(([a, b]) => [a === key ? nk : a, b]);
        for (const a of Object.keys(o)) delete o[a];
        for (const [a, b] of entries) o[a] = b;
        key = nk;
        vi.setAttribute('aria-label', name + ' ' + nk + ' value');
      });
      vi.addEventListener('input', () => { getAt(f.state, path)[key] = typed(is, vi.value) ?? ''; });
      const rm = el('button', { type: 'button', class: 'small sf-remove', 'aria-label': 'Remove ' + name + ' ' + k, text: '✕' });
      rm.addEventListener('click', () => { const o = getAt(f.state, path); delete o[key]; if (!Object.keys(o).length) setAt(f.state, path, undefined); redraw(i); });
      box.append(el('div', { class: 'sf-row sf-kv' }, ki, vi, rm));
    });
  }
  const noun = t === 'array' ? 'item' : 'entry';
  const add = el('button', { type: 'button', class: 'small sf-add', text: '+ Add ' + noun, 'aria-label': 'Add ' + noun + ' to ' + name });
  add.addEventListener('click', () => {
    if (t === 'array') {
      const a = Array.isArray(getAt(f.state, path)) ? getAt(f.state, path) : [];
      if (a.length >= MAX_ROWS) return;
      a.push(isObj(is.properties) ? {} : '');
      setAt(f.state, path, a);
    } else {
      const o = isObj(getAt(f.state, path)) ? getAt(f.state, path) : {};
      let k = 'name';
      for (let n = 2; k in o; n++) k = 'name' + n;
      o[k] = '';
      setAt(f.state, path, o);
    }
    redraw('last');
  });
  box.append(add);
  return box;
}

// ---- the picker: the description and the form follow it at once -----------

function followSelect(sel) {
  const opt = sel.selectedOptions[0];
  const help = document.getElementById(sel.id + '-help');
  if (help) help.textContent = opt ? opt.dataset.help || '' : '';
  const panel = sel.closest('.props');
  if (!panel) return;
  for (const fs of panel.querySelectorAll('fieldset.schema-form[data-source="' + sel.id + '"]')) {
    const f = controller(fs);
    f.schema = parseSchema(opt ? opt.dataset.schema : '');
    fs.dataset.schema = opt ? opt.dataset.schema || '' : '';
    if (f.schema && !f.invalid) { f.raw.hidden = true; f.fields.hidden = false; f.toggle.setAttribute('aria-pressed', 'false'); f.toggle.textContent = 'Raw JSON'; }
    render(f);
  }
}

// capture: runs before editor.js saves the change, so the save reads the
// form as the new tool shows it
document.addEventListener('change', (e) => {
  const sel = e.target;
  if (sel instanceof HTMLSelectElement && sel.closest('.props') && (sel.id === 'tool-select' || sel.id === 'agent-select')) followSelect(sel);
}, true);

// input_map rows added, renamed or removed: the fields say which keys they set
function refreshMapped(panel) {
  for (const fs of panel.querySelectorAll('fieldset.schema-form[data-f="input"]')) {
    const f = controller(fs);
    if (f.schema && f.raw.hidden) render(f);
  }
}
document.addEventListener('input', (e) => {
  const kv = e.target.closest && e.target.closest('fieldset[data-f="input_map"]');
  if (kv) refreshMapped(kv.closest('.props'));
});
document.addEventListener('click', (e) => {
  const rm = e.target.closest && e.target.closest('fieldset[data-f="input_map"] .remove-row');
  if (rm) { const panel = rm.closest('.props'); setTimeout(() => refreshMapped(panel), 0); }
});

// A validation issue on input.x or config.x leads to its field: clicking
// it selects the node (editor.js) and then focuses the field here.
let pendingFocus = null;
function focusIssue(root) {
  if (!pendingFocus) return false;
  const panel = root.querySelector('.props[data-target="node"]') || (root.matches && root.matches('.props') ? root : null);
  if (!panel || panel.dataset.id !== pendingFocus.node) return false;
  // the field itself, or the nearest field that holds it (input.headers.Accept → input.headers)
  let path = pendingFocus.path;
  let field = null;
  while (path && !(field = panel.querySelector('.sf-field[data-path="' + CSS.escape(path) + '"]'))) {
    path = path.replace(/(\.[^.[]*|\[\d+\])$/, '');
    if (!/[.[]/.test(path)) break;
  }
  pendingFocus = null;
  if (!field) return false;
  const target = field.querySelector('input, select, textarea');
  if (target) { target.focus(); field.scrollIntoView({ block: 'nearest' }); }
  return true;
}
document.addEventListener('click', (e) => {
  const b = e.target.closest && e.target.closest('.issue-link');
  if (!b || !/^(input|config)[.[]/.test(b.dataset.field || '')) return;
  pendingFocus = { node: b.dataset.nodeId, path: b.dataset.field };
  // the panel is rendered anew for the selection (mount focuses then);
  // should none come, the panel shown is the node's
  const want = pendingFocus;
  setTimeout(() => { const props = document.getElementById('props'); if (props && pendingFocus === want) focusIssue(props); }, 600);
});

// mount builds every form in root (the panel after each render).
function mount(root) {
  for (const fs of root.querySelectorAll('fieldset.schema-form')) {
    const f = controller(fs);
    render(f);
  }
  focusIssue(root);
}

// read returns the form's value for editor.js (INVALID while the raw JSON
// does not parse: nothing is saved then).
function read(fs) {
  const f = controller(fs);
  if (f.invalid) return INVALID;
  return Object.keys(f.state).length ? JSON.parse(JSON.stringify(f.state)) : undefined;
}

document.addEventListener('DOMContentLoaded', () => mount(document));
export { mount, read, INVALID, parseSchema, refreshMapped };
