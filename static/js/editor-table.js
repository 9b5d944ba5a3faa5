// The node list below the canvas, the canvas's text alternative: one row
// per node (a large chain lists its first rows until asked for all), the
// selection mirrored, and a row's button (or a validation issue's link)
// selecting the node and bringing it into view.
import * as canvas from './canvas.js';
import * as common from './common.js';

const TABLE_ROWS = 200;

export function install(ed) {
  const { $, issuesEl } = ed;
  let tableShowAll = false;

  function renderNodeTable() {
    const doc = ed.doc;
    const tbody = document.querySelector('#node-table tbody');
    const next = new Map();
    for (const e of doc.edges) {
      if (!next.has(e.source)) next.set(e.source, []);
      next.get(e.source).push(e.label ? e.target + ' (' + e.label + ')' : e.target);
    }
    const selected = new Set(ed.cy ? ed.cy.$('node:selected').map((n) => n.id()) : []);
    // A large chain lists its first rows until asked for all (layout of
    // thousands of rows would delay the canvas).
    const all = tableShowAll || doc.nodes.length <= TABLE_ROWS;
    const shown = all ? doc.nodes : doc.nodes.filter((n, i) => i < TABLE_ROWS || selected.has(n.node_id));
    const rows = shown.map((n) => {
      const tr = common.el('tr', { 'data-node-id': n.node_id, 'aria-selected': selected.has(n.node_id) ? 'true' : 'false' });
      tr.append(
        common.el('td', {}, common.el('button', { type: 'button', class: 'linklike select-node', 'data-node-id': n.node_id, text: n.node_id, 'aria-label': 'Select node ' + n.node_id }),
          canvas.isPinned(doc, n.node_id) ? common.el('span', { class: 'reused-badge pin-badge', text: '⚲ pinned', title: 'Runs from the designer use its pinned output instead of running it' }) : null),
        common.el('td', { text: n.kind }),
        common.el('td', { text: n.label || '' }),
        common.el('td', { text: (next.get(n.node_id) || []).join(', ') }),
      );
      return tr;
    });
    if (!all) {
      const more = common.el('button', { type: 'button', class: 'linklike', id: 'table-show-all', text: 'Show all ' + doc.nodes.length + ' nodes' });
      more.addEventListener('click', () => { tableShowAll = true; renderNodeTable(); });
      rows.push(common.el('tr', {}, common.el('td', { colspan: 4 }, more)));
    }
    tbody.replaceChildren(...rows);
    $('node-count').textContent = String(doc.nodes.length);
  }
  ed.renderNodeTable = renderNodeTable;
  ed.scheduleNodeTable = common.debounce(renderNodeTable, 120);

  function syncTableSelection() {
    const selected = new Set(ed.cy.$('node:selected').map((n) => n.id()));
    for (const tr of document.querySelectorAll('#node-table tbody tr')) tr.setAttribute('aria-selected', selected.has(tr.dataset.nodeId) ? 'true' : 'false');
  }
  ed.syncTableSelection = syncTableSelection;
  // a selected node beyond the listed rows gets its row
  ed.syncTableSelectionSoon = common.debounce(() => {
    if (!tableShowAll && ed.doc.nodes.length > TABLE_ROWS) renderNodeTable();
    else syncTableSelection();
  }, 50);

  function selectAndFocus(id) {
    const cy = ed.cy;
    if (cy.getElementById(id).empty()) canvas.loadAll(cy);
    const ele = cy.getElementById(id);
    if (ele.empty()) return;
    cy.$(':selected').unselect();
    ele.select();
    canvas.focus(cy, ele);
  }

  document.querySelector('#node-table').addEventListener('click', (e) => {
    const b = e.target.closest('.select-node');
    if (!b) return;
    selectAndFocus(b.dataset.nodeId);
  });

  issuesEl.addEventListener('click', (e) => {
    const b = e.target.closest('.issue-link');
    if (!b) return;
    const id = b.dataset.nodeId || b.dataset.edgeId;
    if (id) selectAndFocus(id);
  });

  // The list is open or closed as this browser left it.
  const pane = $('node-list-pane');
  const summaryEl = pane.querySelector('summary');
  try { if (localStorage.getItem('studio.nodeList') === 'closed') pane.open = false; } catch { /* storage off */ }
  // A details element that is open in the page's HTML fires 'toggle' once
  // on its own after loading; only a person opening the list brings it into
  // view (scrolling on that first event moved the canvas off screen under
  // the pointer, at a moment that depended on the machine's speed).
  let listToggledByUser = false;
  summaryEl.addEventListener('click', () => { listToggledByUser = true; });
  pane.addEventListener('toggle', () => {
    try { localStorage.setItem('studio.nodeList', pane.open ? 'open' : 'closed'); } catch { /* storage off */ }
    if (pane.open && listToggledByUser) pane.scrollIntoView({ block: 'nearest' });
    listToggledByUser = false;
  });
}
