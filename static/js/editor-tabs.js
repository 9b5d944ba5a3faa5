// The side panel's tabs (Properties, Validation, Tests, Triggers, MCP), a
// WAI-ARIA tabs widget: one tab stop, the arrow keys, Home and End move
// between the tabs and show each one's panel at once (a panel is already
// in the page: showing it costs nothing). One panel at a time takes the
// column's whole height.
//
// The tabs carry counts, kept as they change: the Validation tab the
// errors and warnings of the last save (the #issues-body the server sends
// back), the Tests tab the failing tests (tests.js's studio:tests event),
// the Triggers tab the schedules and webhooks (triggers.js's
// studio:triggers event). Selecting a node or an edge shows Properties; a
// validation issue about a test shows Tests. The tab chosen is remembered
// per chain for this browser tab (sessionStorage).
import * as common from './common.js';

export function install(ed) {
  const { root, $ } = ed;
  const list = root.querySelector('.side-tabs[role="tablist"]');
  if (!list) return;
  const tabs = [...list.querySelectorAll('[role="tab"]')];
  const byName = new Map(tabs.map((t) => [t.dataset.tab, t]));
  const panelOf = (t) => $(t.getAttribute('aria-controls'));
  const KEY = 'studio.sidetab.' + ed.chainId;

  // show makes the named tab the chosen one. opts.focus moves the focus to
  // the tab; opts.remember (default) keeps the choice for this chain.
  function show(name, opts = {}) {
    const tab = byName.get(name);
    if (!tab) return;
    const was = current();
    const active = document.activeElement;
    for (const t of tabs) {
      const on = t === tab;
      t.setAttribute('aria-selected', on ? 'true' : 'false');
      t.tabIndex = on ? 0 : -1;
      const p = panelOf(t);
      if (p) p.hidden = !on;
    }
    root.dataset.sideTab = name;
    if (opts.remember !== false) {
      try { sessionStorage.setItem(KEY, name); } catch { /* storage off: not remembered */ }
    }
    if (opts.focus) tab.focus();
    else if (was !== name && active && was && panelOf(byName.get(was)) && panelOf(byName.get(was)).contains(active)) {
      // the focus was in the panel just hidden: it goes to the panel shown,
      // not to the page
      const p = panelOf(tab);
      if (name === 'props') ed.propsEl.focus({ preventScroll: true });
      else if (p) p.focus({ preventScroll: true });
    }
  }
  function current() { return root.dataset.sideTab || 'props'; }
  ed.showTab = show;
  ed.currentTab = current;

  list.addEventListener('click', (e) => {
    const t = e.target.closest('[role="tab"]');
    if (t) show(t.dataset.tab, { focus: true });
  });
  list.addEventListener('keydown', (e) => {
    const i = tabs.indexOf(document.activeElement);
    if (i < 0 || e.altKey || e.ctrlKey || e.metaKey) return;
    let j = -1;
    if (e.key === 'ArrowRight') j = (i + 1) % tabs.length;
    else if (e.key === 'ArrowLeft') j = (i - 1 + tabs.length) % tabs.length;
    else if (e.key === 'Home') j = 0;
    else if (e.key === 'End') j = tabs.length - 1;
    if (j < 0) return;
    e.preventDefault();
    e.stopPropagation(); // not the canvas's arrow keys
    show(tabs[j].dataset.tab, { focus: true });
  });

  // ---- the counts ---------------------------------------------------------

  const count = (n, cls, text) => common.el('span', { class: 'badge tab-count ' + cls, 'aria-hidden': 'true', text: text || String(n) });
  const words = (text) => common.el('span', { class: 'visually-hidden', text: ': ' + text });
  const plural = (n, one, many) => n + ' ' + (n === 1 ? one : many);

  // the same as the page draws (issueCounts in editor.templ)
  function issueCounts() {
    const body = ed.issuesEl.querySelector('#issues-body');
    const errors = body ? Number(body.dataset.errors) || 0 : 0;
    const warnings = body ? Number(body.dataset.warnings) || 0 : 0;
    const out = [];
    if (errors) out.push(count(errors, 'sev-error'));
    if (warnings) out.push(count(warnings, 'sev-warning'));
    const said = [errors ? plural(errors, 'error', 'errors') : '', warnings ? plural(warnings, 'warning', 'warnings') : ''].filter(Boolean).join(', ');
    if (said) out.push(words(said));
    $('tab-issues-count').replaceChildren(...out);
    byName.get('issues').dataset.errors = String(errors);
    byName.get('issues').dataset.warnings = String(warnings);
  }
  // the server sends the panel anew after every save
  new MutationObserver(issueCounts).observe(ed.issuesEl, { childList: true });

  // detail: {total, failed, passed, error}
  root.addEventListener('studio:tests', (e) => {
    const { total = 0, failed = 0, passed = 0, error = '' } = e.detail || {};
    const out = [];
    const tab = byName.get('tests');
    if (error) {
      out.push(count(0, 'sev-error', '!'), words('the tests could not run'));
    } else if (failed) {
      out.push(count(0, 'sev-error', '✗' + failed + '/' + total), words(failed + ' of ' + plural(total, 'test', 'tests') + ' failing'));
    } else if (total) {
      out.push(count(0, 'ok', '✓' + passed), words(plural(passed, 'test', 'tests') + ' passing'));
    }
    $('tab-tests-count').replaceChildren(...out);
    tab.dataset.failed = String(failed);
    tab.dataset.total = String(total);
  });

  // detail: {count}
  root.addEventListener('studio:triggers', (e) => {
    const n = (e.detail && e.detail.count) || 0;
    $('tab-triggers-count').replaceChildren(...(n ? [count(n, 'neutral'), words(plural(n, 'trigger', 'triggers'))] : []));
    byName.get('triggers').dataset.count = String(n);
  });

  // ---- what shows which tab ----------------------------------------------------

  // A validation issue about a test shows the Tests tab (after
  // editor-table.js selected the node it names, if any); one about the chain
  // itself (no node, no edge) shows the chain's properties. An issue about a
  // node or an edge selects it (editor-table.js), which shows Properties.
  ed.issuesEl.addEventListener('click', (e) => {
    const b = e.target.closest('.issue-link');
    if (!b) return;
    if (/^tests\[/.test(b.dataset.field || '')) { show('tests'); return; }
    if (b.dataset.nodeId || b.dataset.edgeId) return;
    ed.cy.$(':selected').unselect();
    show('props');
  });

  root.addEventListener('studio:ready', () => {
    // Selecting shows the selection's properties. A redraw that keeps the
    // selection (undo, redo) leaves the tab as it is.
    ed.cy.on('select', () => { if (!ed.redrawing) show('props'); });
  }, { once: true });

  // ---- the tab to start with -------------------------------------------------

  // A link to a test (?test=N, after "Save as test") opens the Tests tab;
  // else the tab last chosen for this chain in this browser tab.
  let first = null;
  if (new URLSearchParams(window.location.search).has('test')) first = 'tests';
  else {
    try { first = sessionStorage.getItem(KEY); } catch { first = null; }
  }
  if (first && byName.has(first) && first !== 'props') show(first, { remember: false });
  else root.dataset.sideTab = 'props';
  issueCounts();
}
