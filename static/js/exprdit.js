// The expression editor: completion and a live preview for every
// expression field of the properties panel (input.expr). It only reads the
// panel and the page; the edits it makes go through an `input` event, so
// editor.js saves them as if typed.
//
// Server side: GET /v1/chains/{id}/expr/context (names, upstream nodes, the
// shape of the last run's data, functions) and POST …/expr/preview.
import * as api from './api.js';
import * as common from './common.js';
import { studio } from './editor-api.js';
(function () {
  const root = document.getElementById('editor');
  const propsEl = document.getElementById('props');
  if (!root || !propsEl) return;
  const chainId = root.dataset.chainId;
  const base = '/v1/chains/' + encodeURIComponent(chainId) + '/expr/';
  const MAX_OPTIONS = 50;
  const CONTEXT_TTL = 5000; // ms a field's context is reused (a run may have ended since)

  // Nodes and edges the server has: asking about one only in the page's
  // document yet would be a 404. The set is refreshed after every save.
  let saved = new Set();
  function refreshSaved() {
    const d = studio.doc;
    if (!d) return;
    saved = new Set([...d.nodes.map((n) => 'node|' + n.node_id), ...d.edges.map((e) => 'edge|' + e.id)]);
  }
  refreshSaved();
  root.addEventListener('studio:saved', () => {
    const st = document.getElementById('save-state');
    if (st && st.dataset.state === 'saved') refreshSaved(); // nothing unsaved in flight
    if (current && current.waiting) schedulePreview(); // its node or edge is saved now
  });

  // preview times (ms) for the browser suite: request to rendered, and the
  // request alone (resource timing)
  const state = window.__exprdit = { latencies: [], network: [] };

  // ---- which field ----------------------------------------------------------

  // fieldOf names the field an input edits, as the engine does:
  // condition, items_path, cases[N].when, input_map.KEY, set_state.KEY.
  function fieldOf(inp) {
    const panel = inp.closest('.props');
    if (!panel) return null;
    const target = panel.dataset.target;
    if (target !== 'node' && target !== 'edge') return null;
    let field = inp.dataset.f || '';
    if (!field) {
      const fs = inp.closest('fieldset[data-f]');
      const row = inp.closest('.kv-row');
      if (!fs || !row) return null;
      if (fs.dataset.f === 'cases') {
        field = 'cases[' + [...fs.querySelectorAll(':scope > .kv-rows > .kv-row')].indexOf(row) + '].when';
      } else {
        const k = row.querySelector('input.k');
        field = fs.dataset.f + '.' + ((k && k.value.trim()) || '_');
      }
    }
    return { target, id: panel.dataset.id, field };
  }

  const keyOf = (f) => f.target + '|' + f.id + '|' + f.field;
  const query = (f) => (f.target === 'edge' ? 'edge=' : 'node=') + encodeURIComponent(f.id) + '&field=' + encodeURIComponent(f.field);

  const contexts = new Map(); // keyOf → {at, promise}
  function contextFor(f) {
    const k = keyOf(f);
    const c = contexts.get(k);
    if (c && performance.now() - c.at < CONTEXT_TTL) return c.promise;
    const promise = api.get(base + 'context?' + query(f)).catch(() => null);
    contexts.set(k, { at: performance.now(), promise });
    if (contexts.size > 50) contexts.delete(contexts.keys().next().value);
    return promise;
  }

  // ---- the field's check names its field ---------------------------------------

  // The check under a field (POST /fragments/expr, htmx) is sent which chain,
  // node or edge and field it is, so the server answers with what the
  // validator says about the field holding the typed text (a bare-word
  // comparison is the Validation panel's warning there, not a green check).
  propsEl.addEventListener('htmx:config:request', (e) => {
    const ctx = e.detail && e.detail.ctx;
    const inp = ctx && ctx.sourceElement;
    if (!inp || !inp.matches || !inp.matches('input.expr') || !(ctx.request.body instanceof FormData)) return;
    const f = fieldOf(inp);
    if (!f) return;
    ctx.request.body.set('chain', chainId);
    ctx.request.body.set(f.target, f.id);
    ctx.request.body.set('field', f.field);
  });

  // ---- completion -----------------------------------------------------------

  let current = null; // { inp, f, list, items, active }
  let seq = 0;

  // pathBefore splits the path being typed before the caret into the part
  // already complete (segments) and the word being typed (partial).
  function pathBefore(inp) {
    const text = inp.value.slice(0, inp.selectionStart);
    const m = /([A-Za-z_]\w*(?:(?:\.[A-Za-z_]\w*)|(?:\[[0-9]*\]))*)(\.)?([A-Za-z_]\w*)?$/.exec(text);
    if (!m) return { segments: [], partial: '', start: text.length, afterDot: /\.$/.test(text) };
    let segs = m[1] ? m[1].split(/\.|(?=\[)/).filter(Boolean) : [];
    let partial = m[3] || '';
    if (!m[2] && !m[3]) { partial = segs.pop() || ''; } // no dot: the last word is being typed
    const before = text.slice(0, m.index);
    // `$.` is the root of the context (`$.input.n` is `input.n`); any other
    // dot before the path is something we cannot follow (e.g. `foo().x`).
    if (/\.$/.test(before) && !/(^|[^\w$])\$\.$/.test(before)) return null;
    return { segments: segs, partial, start: text.length - partial.length, afterDot: !!m[2] || segs.length > 0 };
  }

  function shapeAt(ctx, segs) {
    let s = ctx.shapes && ctx.shapes[segs[0]];
    for (const seg of segs.slice(1)) {
      if (!s) return null;
      if (seg.startsWith('[')) s = s.elem;
      else s = s.keys && s.keys[seg];
    }
    return s;
  }

  function candidates(ctx, p) {
    const out = [];
    if (p.segments.length === 0) {
      for (const n of ctx.names) out.push({ text: n.name, label: n.name, detail: n.detail, kind: 'name' });
      for (const id of ctx.upstream) out.push({ text: id, label: id, detail: 'node upstream', kind: 'node' });
      for (const fn of ctx.functions) out.push({ text: fn.name + '(', label: fn.name + '()', detail: fn.signature, kind: 'function' });
    } else {
      const s = shapeAt(ctx, p.segments);
      if (s && s.keys) {
        for (const k of Object.keys(s.keys).sort()) {
          const t = /^[A-Za-z_][A-Za-z0-9_]*$/.test(k) ? k : '"' + k.replace(/["\\]/g, '\\$&') + '"';
          const from = ctx.run_id ? ' · last run' : ctx.test ? ' · test' : (ctx.schema_shapes || []).includes(p.segments[0]) ? ' · tool schema' : '';
          out.push({ text: t, label: k, detail: s.keys[k].type + from, kind: 'field' });
        }
      }
    }
    const w = p.partial.toLowerCase();
    const starts = out.filter((c) => c.label.toLowerCase().startsWith(w));
    const inner = w ? out.filter((c) => !c.label.toLowerCase().startsWith(w) && c.label.toLowerCase().includes(w)) : [];
    return starts.concat(inner).filter((c) => c.label !== p.partial).slice(0, MAX_OPTIONS);
  }

  function listFor(inp) {
    if (!inp.id) inp.id = 'exprdit-in-' + Math.random().toString(36).slice(2, 9);
    let list = document.getElementById(inp.id + '-list');
    if (!list) {
      list = common.el('div', { id: inp.id + '-list', role: 'listbox', class: 'exprdit-list', 'aria-label': 'Completions' });
      list.hidden = true;
      inp.after(list);
      list.addEventListener('mousedown', (e) => {
        const opt = e.target.closest('[role=option]');
        if (!opt) return;
        e.preventDefault(); // keep the focus in the field
        accept(Number(opt.dataset.i));
      });
    }
    inp.setAttribute('role', 'combobox');
    inp.setAttribute('aria-autocomplete', 'list');
    inp.setAttribute('aria-controls', list.id);
    if (!inp.hasAttribute('aria-expanded')) inp.setAttribute('aria-expanded', 'false');
    return list;
  }

  function close() {
    if (!current || !current.list) return;
    current.list.hidden = true;
    current.list.replaceChildren();
    current.items = [];
    current.inp.setAttribute('aria-expanded', 'false');
    current.inp.removeAttribute('aria-activedescendant');
  }

  function render() {
    const { list, items, inp } = current;
    list.replaceChildren(...items.map((c, i) => common.el('div', {
      role: 'option', id: list.id + '-' + i, 'data-i': String(i), class: 'exprdit-opt kind-' + c.kind,
      'aria-selected': i === current.active ? 'true' : 'false',
    }, common.el('span', { class: 'exprdit-label', text: c.label }), common.el('span', { class: 'exprdit-detail', text: c.detail || '' }))));
    list.hidden = items.length === 0;
    inp.setAttribute('aria-expanded', items.length ? 'true' : 'false');
    if (items.length) {
      inp.setAttribute('aria-activedescendant', list.id + '-' + current.active);
      const opt = list.children[current.active];
      if (opt && opt.scrollIntoView) opt.scrollIntoView({ block: 'nearest' });
    } else inp.removeAttribute('aria-activedescendant');
  }

  // complete offers what fits the word before the caret; with nothing
  // typed yet (after an operator or a bracket) only when asked (forced:
  // Ctrl+Space, ArrowDown), so Tab still leaves the field.
  async function complete(inp, forced) {
    const f = fieldOf(inp);
    if (!f || !saved.has(f.target + '|' + f.id)) return;
    const my = ++seq;
    const ctx = await contextFor(f);
    if (my !== seq || !ctx || document.activeElement !== inp) return;
    const p = pathBefore(inp);
    current.ctx = ctx;
    current.items = p && (forced || p.partial || p.segments.length) ? candidates(ctx, p) : [];
    current.p = p;
    current.active = 0;
    render();
  }

  function accept(i) {
    const c = current && current.items[i];
    if (!c) return;
    const { inp, p } = current;
    const caret = inp.selectionStart;
    inp.value = inp.value.slice(0, p.start) + c.text + inp.value.slice(caret);
    const at = p.start + c.text.length;
    inp.setSelectionRange(at, at);
    close();
    inp.dispatchEvent(new Event('input', { bubbles: true })); // editor.js saves, htmx checks
  }

  // ---- preview ----------------------------------------------------------------

  function previewFor(inp) {
    let box = inp.parentElement.querySelector(':scope > .exprdit-preview');
    if (!box) {
      box = common.el('div', { class: 'exprdit-preview', 'aria-live': 'polite' });
      const msg = inp.parentElement.querySelector(':scope > .expr-msg');
      (msg || inp).after(box);
    }
    return box;
  }

  let previewSeq = 0;
  async function preview(inp) {
    const f = fieldOf(inp);
    const src = inp.value;
    const box = previewFor(inp);
    if (!f || !src.trim()) { box.replaceChildren(); return; }
    const waiting = !saved.has(f.target + '|' + f.id);
    if (current && current.inp === inp) current.waiting = waiting;
    if (waiting) { box.replaceChildren(common.el('span', { class: 'hint', text: 'Preview once the chain is saved…' })); return; }
    const my = ++previewSeq;
    const t0 = performance.now();
    const body = { field: f.field, expr: src };
    body[f.target] = f.id;
    // the run completion read: the server then skips looking for the latest
    const c = contexts.get(keyOf(f));
    const ctx = c && performance.now() - c.at < CONTEXT_TTL ? await c.promise : null;
    if (ctx && ctx.run_id) body.run_id = ctx.run_id;
    let res;
    try {
      res = await api.post(base + 'preview', body);
    } catch (err) {
      res = { error: { message: err.code ? err.message : 'preview failed: ' + err.message } };
    }
    if (my !== previewSeq || inp.value !== src) return; // typed on since
    showPreview(inp, box, res);
    state.latencies.push(performance.now() - t0);
    if (state.latencies.length > 1000) state.latencies.shift();
    const rt = performance.getEntriesByType('resource').filter((e) => e.name.endsWith('/expr/preview')).pop();
    if (rt) state.network.push(rt.responseEnd - rt.startTime);
    if (state.network.length > 1000) state.network.shift();
    performance.clearResourceTimings();
  }

  function showPreview(inp, box, res) {
    const parts = [];
    if (res.error) {
      parts.push(common.el('div', { class: 'exprdit-err', role: 'status' }, common.el('span', { class: 'exprdit-tag', text: 'error' }), ' ' + res.error.message));
    } else {
      const where = res.run_id ? 'last run' : res.test ? 'test “' + res.test + '” (no run yet)' : 'no run yet';
      parts.push(common.el('div', { class: 'exprdit-val' },
        common.el('span', { class: 'exprdit-tag', text: '= ' + res.type, title: 'evaluated on the ' + where }),
        ' ', common.el('code', { text: res.value + (res.truncated ? ' …' : '') }),
        common.el('span', { class: 'exprdit-where', text: ' · ' + where })));
    }
    for (const w of res.warnings || []) {
      const row = common.el('div', { class: 'exprdit-warn' }, w.did_you_mean ? w.name + ' names nothing here (always null). ' : w.message);
      if (w.did_you_mean) {
        row.append(common.el('button', { type: 'button', class: 'small exprdit-fix', 'data-name': w.name, 'data-alt': w.did_you_mean, text: 'Did you mean ' + w.did_you_mean + '?' }));
      }
      parts.push(row);
    }
    for (const fx of res.fixes || []) {
      parts.push(common.el('div', { class: 'exprdit-warn' }, fx.message + ' ',
        common.el('button', { type: 'button', class: 'small exprdit-fix', 'data-expr': fx.expr, text: 'Fix: ' + fx.expr })));
    }
    box.replaceChildren(...parts);
  }

  const schedulePreview = common.debounce(() => { if (current) preview(current.inp); }, 40);

  // replaceName swaps a whole name (not a field after a dot, not in quotes).
  function replaceName(src, name, alt) {
    let out = '', q = '';
    for (let i = 0; i < src.length; i++) {
      const ch = src[i];
      if (q) { out += ch; if (ch === '\\') { out += src[++i] || ''; } else if (ch === q) q = ''; continue; }
      if (ch === '\'' || ch === '"' || ch === '`') { q = ch; out += ch; continue; }
      if (src.startsWith(name, i) && !/[\w.]/.test(src[i - 1] || '') && !/\w/.test(src[i + name.length] || '')) {
        out += alt; i += name.length - 1; continue;
      }
      out += ch;
    }
    return out;
  }

  propsEl.addEventListener('click', (e) => {
    const b = e.target.closest('.exprdit-fix');
    if (!b) return;
    const inp = b.closest('.field, .v-wrap') && b.closest('.field, .v-wrap').querySelector('input.expr');
    if (!inp) return;
    inp.value = b.dataset.expr !== undefined ? b.dataset.expr : replaceName(inp.value, b.dataset.name, b.dataset.alt);
    inp.focus();
    inp.setSelectionRange(inp.value.length, inp.value.length);
    inp.dispatchEvent(new Event('input', { bubbles: true }));
  });

  // ---- the Validation panel's bare-word warnings: their fix, one click -----------

  const issuesEl = document.getElementById('issues');

  // exprAt reads a condition field from the page's document.
  function exprAt(d, nodeId, edgeId, field) {
    if (edgeId) { const e = d.edges.find((x) => x.id === edgeId); return e && field === 'condition' ? e.condition || '' : null; }
    const n = d.nodes.find((x) => x.node_id === nodeId);
    if (!n) return null;
    if (field === 'condition') return n.condition || '';
    const m = /^cases\[(\d+)\]\.when$/.exec(field);
    return m && n.cases && n.cases[+m[1]] ? n.cases[+m[1]].when || '' : null;
  }

  async function decorateIssues() {
    const d = studio.doc;
    if (!issuesEl || !d) return;
    for (const b of issuesEl.querySelectorAll('.issue-link')) {
      const rule = b.querySelector('.rule');
      if (!rule || rule.textContent !== 'bare_word_comparison' || b.parentElement.querySelector('.exprdit-issue-fix')) continue;
      const { nodeId, edgeId, field } = b.dataset;
      const src = exprAt(d, nodeId, edgeId, field);
      if (!src || !saved.has(edgeId ? 'edge|' + edgeId : 'node|' + nodeId)) continue;
      const body = { field, expr: src };
      if (edgeId) body.edge = edgeId; else body.node = nodeId;
      const res = await api.post(base + 'preview', body).catch(() => null);
      const fx = res && res.fixes && res.fixes[0];
      if (!fx || !b.isConnected) continue;
      const btn = common.el('button', { type: 'button', class: 'small exprdit-issue-fix', 'data-expr': fx.expr, 'data-from': src, text: 'Fix: ' + fx.expr,
        'aria-label': 'Fix ' + field + ' of ' + (edgeId || nodeId) + ': write ' + fx.expr });
      btn.dataset.nodeId = nodeId || '';
      btn.dataset.edgeId = edgeId || '';
      btn.dataset.field = field;
      b.after(btn);
    }
  }

  // applyIssueFix writes the fix into the document as one undoable edit, or
  // through the field when the panel shows it (so the panel stays in step).
  function applyIssueFix(btn) {
    const { nodeId, edgeId, field, expr, from } = btn.dataset;
    const panel = propsEl.querySelector('.props');
    const shown = panel && panel.dataset.target === (edgeId ? 'edge' : 'node') && panel.dataset.id === (edgeId || nodeId);
    if (shown) {
      const inp = [...panel.querySelectorAll('input.expr')].find((x) => { const f = fieldOf(x); return f && f.field === field; });
      if (inp && inp.value === from) {
        inp.value = expr;
        inp.dispatchEvent(new Event('input', { bubbles: true }));
        btn.remove();
        return;
      }
    }
    studio.edit(() => {
      const d = studio.doc;
      if (exprAt(d, nodeId, edgeId, field) !== from) return; // changed since: leave it
      if (edgeId) { d.edges.find((x) => x.id === edgeId).condition = expr; return; }
      const n = d.nodes.find((x) => x.node_id === nodeId);
      const m = /^cases\[(\d+)\]\.when$/.exec(field);
      if (m) n.cases[+m[1]].when = expr; else n.condition = expr;
    });
    btn.remove();
  }

  if (issuesEl) {
    issuesEl.addEventListener('click', (e) => {
      const b = e.target.closest('.exprdit-issue-fix');
      if (b) applyIssueFix(b);
    });
    root.addEventListener('studio:saved', () => decorateIssues());
    const wait = setInterval(() => { if (studio.doc) { clearInterval(wait); refreshSaved(); decorateIssues(); } }, 100);
  }

  // ---- wiring -------------------------------------------------------------------

  function enter(inp) {
    if (current && current.inp === inp) return current;
    if (current) close();
    current = { inp, list: listFor(inp), items: [], active: 0 };
    return current;
  }

  propsEl.addEventListener('focusin', (e) => {
    if (!e.target.matches('input.expr')) return;
    enter(e.target);
    if (e.target.value.trim()) schedulePreview();
  });
  propsEl.addEventListener('focusout', (e) => {
    if (current && e.target === current.inp) close();
  });
  propsEl.addEventListener('input', (e) => {
    if (!e.target.matches('input.expr')) return;
    enter(e.target);
    complete(e.target);
    schedulePreview();
  });
  // Capture: the list's keys must not reach the editor's own shortcuts.
  propsEl.addEventListener('keydown', (e) => {
    if (!current || e.target !== current.inp) return;
    const open = current.items && current.items.length > 0;
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      if (!open) { if (e.key === 'ArrowDown' || e.ctrlKey) { e.preventDefault(); complete(current.inp, true); } return; }
      e.preventDefault();
      const n = current.items.length;
      current.active = (current.active + (e.key === 'ArrowDown' ? 1 : n - 1)) % n;
      render();
    } else if ((e.key === 'Enter' || e.key === 'Tab') && open) {
      e.preventDefault();
      e.stopPropagation();
      accept(current.active);
    } else if (e.key === 'Escape' && open) {
      e.preventDefault();
      e.stopPropagation();
      close();
    } else if (e.key === ' ' && e.ctrlKey) {
      e.preventDefault();
      complete(current.inp, true);
    }
  }, true);
})();
