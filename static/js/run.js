// The run page: the chain in run mode, following the run on one stream
// (GET /runs/{id}/events, the API's event stream whose frames carry what
// the page shows) from its start: the canvas and the node list are folded
// from every event, applied once each, by seq, so a reload mid-run never
// duplicates. The timeline is the server's: the page comes with its
// entries so far, and each later event's frame carries its entry as
// rendered HTML; the frame that ends the stream carries the run's controls
// and usage panel. An agent node's steps (model turns, streamed text, tool
// calls) are folded into the agent panel (agentstream.js).
import * as agentstream from './agentstream.js';
import * as api from './api.js';
import * as canvas from './canvas.js';
import * as common from './common.js';
(function () {
  const root = document.getElementById('runpage');
  if (!root) return;
  const runId = root.dataset.runId;
  const $ = (id) => document.getElementById(id);
  const timeline = $('timeline');
  const drawer = $('drawer');
  const cyEl = $('cy');

  let cy = null;
  let doc = null;
  let es = null;
  let applied = 0; // highest seq applied to the canvas
  let shown = Number(root.dataset.lastSeq || 0); // highest seq in the timeline
  const firstSeq = shown; // the last event the page came with
  let selected = null;
  const state = new Map(); // node id → {phase, reason, progress, iteration, error}
  // edge id → {fired: bool, why}: kept apart from the canvas, because a large
  // chain's edges may be added to it after their events arrived
  const edgeState = new Map();
  const phases = []; // [seq, node, phase] in arrival order, for tests
  const rerun = root.dataset.kind === 'rerun'; // marks reused nodes and those that ran again
  const kept = root.dataset.kind === 'node' ? 'pinned' : 'reused'; // a node run alone pins its upstream
  window.__run = { phases, get status() { return root.dataset.status; }, get cy() { return cy; } };
  Object.defineProperty(window.__run, 'doc', { get: () => doc }); // why.js lists the edges

  const agents = agentstream.create($('agent-panel'), $('agent-streams'), { nameEl });
  window.__run.agents = agents;

  // the reason texts are the server's one table (views/reasons.go)
  const REASONS = JSON.parse(root.dataset.reasons || '{}');
  const reasonText = (r) => REASONS[r] || r || '';

  // durations for people, as the server writes them (common.js)
  const fmtDuration = common.duration;
  window.__run.fmtDuration = fmtDuration;

  // a node's label with its id beside it, as the server renders it
  function label(id) { const d = nodeDoc(id); return d && d.label && d.label !== id ? d.label : ''; }
  function nameEl(id) {
    const l = label(id);
    if (!l) return [common.el('code', { class: 'node-name', text: id })];
    return [common.el('span', { class: 'node-label', text: l }), ' ', common.el('code', { class: 'node-id', text: id })];
  }

  // ---- timeline ------------------------------------------------------------------

  // appendTimeline appends the entries (the stream's, of a batch of events)
  // after the last one shown; false when it had none.
  function appendTimeline(html) {
    const t = document.createElement('template');
    t.innerHTML = html;
    const lis = [...t.content.querySelectorAll('li[data-seq]')].filter((li) => Number(li.dataset.seq) > shown);
    if (!lis.length) return false;
    const box = timeline.parentElement;
    const atBottom = box.scrollTop + box.clientHeight >= box.scrollHeight - 30;
    timeline.append(...lis);
    shown = Number(lis[lis.length - 1].dataset.seq);
    for (const li of lis) if (li.dataset.progress !== undefined) noteProgress(Number(li.dataset.seq), li.dataset.nodeId, li.dataset.progress);
    if (atBottom) box.scrollTop = box.scrollHeight;
    return true;
  }

  // A progress event's text is the server's (its timeline entry's
  // data-progress): a node's note shows its latest progress once that
  // entry is there. progressTexts holds the texts of entries whose events
  // are not applied yet.
  const progressTexts = new Map(); // seq → text
  for (const li of timeline.querySelectorAll('li[data-progress]')) progressTexts.set(Number(li.dataset.seq), li.dataset.progress);
  function noteProgress(seq, id, text) {
    if (seq > applied) { progressTexts.set(seq, text); return; }
    const st = state.get(id);
    if (st && st.progressSeq === seq) {
      st.progress = text;
      redrawNode(id);
    }
  }

  // ---- canvas state ---------------------------------------------------------

  const PHASE_CLASSES = 'ph-start ph-done ph-skip ph-error ph-paused';

  let needLayout = false; // nodes were added: lay out after the batch
  function ensureNode(id) {
    if (!cy) return null;
    let n = cy.getElementById(id);
    if (n.empty() && !doc) {
      // a run whose document cannot be read: draw nodes as they appear
      n = cy.add({ group: 'nodes', data: { id, kind: 'tool', display: id } });
      needLayout = true;
    }
    return n.nonempty() ? n : null;
  }

  let byId = new Map(); // node id → node of doc: labels are looked up per event and row
  function nodeDoc(id) { return byId.get(id) || null; }

  // fitNote is a node's note on the canvas: one line that stays inside
  // the node's shape (three lines of text fit it: the name, the tool, the
  // note), so a streamed note (an agent's text, a script's log lines) is
  // cut, on one line, keeping what follows it (the iteration, the
  // duration). The node list and the timeline have it whole.
  const NOTE_CHARS = 26;
  function fitNote(lead, progress, rest) {
    const tail = rest.join(' · ');
    let mid = String(progress || '').replace(/\s+/g, ' ').trim();
    const room = NOTE_CHARS - (lead ? lead.length + 3 : 0) - (tail ? tail.length + 3 : 0);
    if (mid.length > room) mid = room > 1 ? mid.slice(0, room - 1) + '…' : '';
    return [lead, mid, tail].filter(Boolean).join(' · ');
  }

  function redrawNode(id) {
    const st = state.get(id) || {};
    const ele = ensureNode(id);
    if (!ele) return;
    const d = nodeDoc(id);
    // The chain's pin stood in (it did not run), or the run kept an earlier result.
    const lead = st.pinned && st.phase === 'done' ? canvas.PIN_NOTE : st.reused && st.phase === 'done' ? '↺ ' + kept : '';
    const rest = st.iteration > 1 ? ['×' + st.iteration] : [];
    if (!lead && st.phase && st.phase !== 'start' && st.ms != null) rest.push((rerun && st.phase !== 'skip' ? 'ran again · ' : '') + fmtDuration(st.ms));
    const note = fitNote(lead, st.progress, rest);
    ele.data('display', d ? canvas.nodeDisplay(d, note) : id + (note ? '\n' + note : ''));
    ele.removeClass(PHASE_CLASSES + ' reused pinned warned');
    if (st.phase) ele.addClass('ph-' + st.phase);
    if (st.reused) ele.addClass('reused');
    if (st.pinned) ele.addClass('pinned');
    if (st.warned) ele.addClass('warned');
    updateRow(id);
  }

  function apply(ev) {
    if (ev.seq <= applied) return;
    applied = ev.seq;
    phases.push([ev.seq, ev.node_id, ev.phase]);
    const id = ev.node_id;
    if (!id) return;
    const st = state.get(id) || {};
    switch (ev.phase) {
      case 'start':
        if (ev.item != null) (st.items = st.items || new Set()).add(ev.item);
        if (ev.item == null || !st.items || st.items.size === 1) st.startedAt = Date.parse(ev.time);
        st.reused = !!ev.reused;
        st.pinned = !!ev.pinned;
        st.ms = null;
        st.phase = 'start';
        st.reason = '';
        st.error = '';
        st.warned = false;
        if (ev.iteration) st.iteration = ev.iteration;
        break;
      case 'progress':
        if (ev.edges && ev.edges.length) { progressTexts.delete(ev.seq); fireEdges(ev.edges); break; } // a sequential link dispatched
        if (agentstream.isAgentStep(ev)) {
          agents.apply(ev);
          // an agent that answered although tool calls failed: done, but marked
          if (ev.progress.step === 'warning') st.warned = true;
        }
        st.progressSeq = ev.seq;
        if (progressTexts.has(ev.seq)) {
          st.progress = progressTexts.get(ev.seq);
          progressTexts.delete(ev.seq);
        }
        break;
      case 'done':
      case 'skip':
      case 'error':
        // a map body runs once per item: it is running while any item is
        if (ev.item != null && st.items) st.items.delete(ev.item);
        st.phase = st.items && st.items.size > 0 ? 'start' : ev.phase;
        st.reason = ev.reason || '';
        st.error = ev.error || '';
        st.reused = !!ev.reused;
        st.pinned = !!ev.pinned;
        // a skip decided before the node started has no duration
        st.ms = st.startedAt && ev.phase !== 'skip' ? Math.max(Date.parse(ev.time) - st.startedAt, 0) : null;
        if (ev.iteration) st.iteration = ev.iteration;
        markEdges(id, ev.edges || []);
        break;
      case 'paused':
        st.phase = 'paused';
        break;
    }
    state.set(id, st);
    if (ev.phase !== 'progress') agents.phase(id, st.phase);
    redrawNode(id);
    if (selected === id) drawerStale = true;
  }
  let drawerStale = false; // an event of the selected node was applied

  function setEdge(id, fired, why) {
    const prev = edgeState.get(id);
    if (!fired && prev && prev.fired) return; // a fired edge stays fired
    edgeState.set(id, { fired, why });
    drawEdge(id);
  }

  function drawEdge(id) {
    const st = edgeState.get(id);
    const e = cy && st ? cy.getElementById(id) : null;
    if (!e || e.empty()) return;
    if (st.fired) e.addClass('fired').removeClass('pruned');
    else e.addClass('pruned');
    e.scratch('why', st.why);
  }

  function fireEdges(ids) {
    if (!cy) return;
    cy.batch(() => { for (const id of ids) setEdge(id, true, 'fired'); });
  }

  // outgoing flow edges of a node: from the document (the canvas may not
  // have them all yet), else from the canvas
  function flowEdgesFrom(src) {
    if (doc) return (doc.edges || []).filter((e) => e.source === src && e.id).map((e) => e.id);
    return cy.edges('.flow').filter((e) => e.data('source') === src).map((e) => e.id());
  }

  function markEdges(src, fired) {
    if (!cy) return;
    const set = new Set(fired);
    const st = state.get(src);
    const why = st && st.phase === 'skip' ? 'not fired: ' + src + ' was skipped (' + reasonText(st.reason) + ')' : 'not fired: its condition or label was not chosen';
    cy.batch(() => {
      for (const id of flowEdgesFrom(src)) setEdge(id, set.has(id), set.has(id) ? 'fired' : why);
    });
  }

  // running nodes pulse
  setInterval(() => { if (cy) cy.nodes('.ph-start').toggleClass('pulse'); }, 500);

  // ---- node list ---------------------------------------------------------------

  const rows = new Map();
  function buildNodeTable(ids) {
    const tbody = document.querySelector('#node-table tbody');
    const trs = ids.map((id) => {
      const d = nodeDoc(id);
      const tr = common.el('tr', { 'data-node-id': id, 'aria-selected': 'false' },
        // named by what it shows, label and id (WCAG 2.5.3, label in name)
        common.el('td', {}, common.el('button', { type: 'button', class: 'linklike select-node', 'data-node-id': id }, ...nameEl(id))),
        common.el('td', { text: d ? d.kind : '' }),
        common.el('td', { class: 'phase-cell', text: '—' }),
        common.el('td', { class: 'note-cell', text: '' }));
      rows.set(id, tr);
      return tr;
    });
    tbody.replaceChildren(...trs);
  }

  function updateRow(id) {
    let tr = rows.get(id);
    if (!tr) {
      buildNodeTable([...rows.keys(), id]);
      tr = rows.get(id);
    }
    const st = state.get(id) || {};
    const ph = tr.querySelector('.phase-cell');
    ph.textContent = st.phase === 'start' ? 'running' : (st.phase || '—');
    ph.className = 'phase-cell phase ph-' + (st.phase || 'none') + (st.warned ? ' warned' : '');
    tr.querySelector('.note-cell').textContent = [st.pinned ? 'pinned: the chain\'s pinned output, not run' : st.reused ? (kept === 'pinned' ? 'pinned' : 'reused from the earlier run') : (rerun && st.phase && st.phase !== 'skip' ? 'ran again' : ''), st.error, st.reused && st.reason === 'pinned' ? '' : reasonText(st.reason), st.progress, st.iteration > 1 ? 'iteration ' + st.iteration : '', st.phase && st.phase !== 'start' && st.ms != null && !st.reused && !st.pinned ? fmtDuration(st.ms) : ''].filter(Boolean).join(' · ');
  }

  // ---- drawer ------------------------------------------------------------------

  async function refreshDrawer() {
    if (!selected) return;
    const id = selected;
    let html;
    try {
      ({ html } = await api.html('GET', '/runs/' + encodeURIComponent(runId) + '/nodes/' + encodeURIComponent(id)));
    } catch (e) {
      html = e.body || ''; // the route's error fragment
    }
    if (selected !== id) return;
    drawer.innerHTML = html;
    if (window.htmx) window.htmx.process(drawer);
  }
  const refreshDrawerSoon = common.debounce(refreshDrawer, 150);

  function select(id) {
    selected = id;
    if (cy && cy.getElementById(id).empty()) canvas.loadAll(cy);
    for (const [nid, tr] of rows) tr.setAttribute('aria-selected', nid === id ? 'true' : 'false');
    if (cy) {
      cy.$(':selected').unselect();
      const n = cy.getElementById(id);
      if (n.nonempty()) { n.select(); }
    }
    refreshDrawer();
  }

  document.addEventListener('click', (e) => {
    const b = e.target.closest('.select-node, .ev-node');
    if (b) {
      select(b.dataset.nodeId);
      if (cy) canvas.focus(cy, cy.getElementById(b.dataset.nodeId));
    }
  });

  // ---- re-run dialog ---------------------------------------------------------------

  // "Re-run from here…" asks first: the input and the state patch are
  // checked as JSON objects as they are typed, before anything is sent.
  function checkJSONField(ta) {
    const raw = ta.value.trim();
    let err = '';
    if (raw) {
      try {
        const v = JSON.parse(raw);
        if (v === null || typeof v !== 'object' || Array.isArray(v)) err = 'Must be a JSON object, e.g. {"key": "value"}.';
      } catch (x) { err = 'Not JSON: ' + x.message; }
    }
    const msg = document.getElementById(ta.getAttribute('aria-describedby'));
    if (msg) msg.textContent = err;
    ta.setAttribute('aria-invalid', err ? 'true' : 'false');
    return !err;
  }
  function checkRerunForm(form) {
    let ok = true;
    for (const ta of form.querySelectorAll('[data-json-object]')) ok = checkJSONField(ta) && ok;
    const b = form.querySelector('#rerun-submit');
    if (b) b.disabled = !ok;
    return ok;
  }
  document.addEventListener('click', (e) => {
    if (!e.target.closest('#btn-rerun')) return;
    const dlg = $('rerun-dialog');
    if (!dlg) return;
    $('rerun-result').replaceChildren();
    checkRerunForm(dlg.querySelector('form'));
    dlg.showModal();
    $('rerun-input').focus();
  });
  document.addEventListener('input', (e) => {
    if (e.target.matches && e.target.matches('#rerun-dialog [data-json-object]')) checkRerunForm(e.target.form);
  });
  // an invalid form is not sent (the messages are shown); capture runs
  // before htmx's own submit handler
  document.addEventListener('submit', (e) => {
    if (e.target.id === 'rerun-form' && !checkRerunForm(e.target)) { e.preventDefault(); e.stopImmediatePropagation(); }
  }, true);
  // keep Tab inside the open dialog (the page behind it is inert)
  document.addEventListener('keydown', (e) => {
    if (e.key !== 'Tab') return;
    const dlg = e.target.closest && e.target.closest('dialog[open]');
    if (!dlg) return;
    const f = [...dlg.querySelectorAll('button, textarea, input:not([type=hidden]), select, a[href]')].filter((x) => !x.disabled);
    if (!f.length) return;
    const first = f[0], last = f[f.length - 1];
    if (e.shiftKey && document.activeElement === first) { e.preventDefault(); last.focus(); }
    else if (!e.shiftKey && document.activeElement === last) { e.preventDefault(); first.focus(); }
  });

  // ---- stream ------------------------------------------------------------------

  // sawEvents: the stream delivered a node event, so the run has left the
  // queue even if its row (written a moment after the event went out) still
  // says queued; the controls are fetched again until the row catches up.
  let sawEvents = false;
  async function refreshControls(tries = 0) {
    const { html, headers } = await api.html('GET', '/runs/' + encodeURIComponent(runId) + '/controls');
    const status = headers.get('X-Run-Status') || '';
    if (status === 'queued' && sawEvents && tries < 40) {
      setTimeout(() => refreshControls(tries + 1), 250);
      return;
    }
    showControls(html, status, Number(headers.get('X-Run-Duration') || 0));
  }

  function showControls(html, status, ms) {
    const ctl = $('run-controls');
    ctl.innerHTML = html;
    if (window.htmx) window.htmx.process(ctl);
    setStatus(status, ms || 0);
  }

  function setStatus(status, ms) {
    root.dataset.status = status;
    const s = $('run-status');
    s.textContent = status.replace(/_/g, ' ');
    s.className = 'status status-' + status;
    // a run that ended within the millisecond took "< 1 ms", not no time
    if (ms || !['running', 'queued', 'paused'].includes(status)) $('run-duration').textContent = fmtDuration(ms);
  }

  // Events are applied in batches (those that arrived together), inside one
  // canvas batch, then their timeline entries are appended.
  const pending = [];
  const entries = []; // the timeline entries of the pending events
  let flushTimer = null;
  function onEvent(e) {
    if (e.data === undefined) return; // a connection error, not an "error" phase
    let frame;
    try { frame = JSON.parse(e.data); } catch { return; }
    const ev = frame && frame.event;
    if (!ev || typeof ev.seq !== 'number') return; // the stream's own "error" frame
    if (frame.entry) entries.push(frame.entry);
    sawEvents = true;
    if (ev.seq > applied) followDelay = FOLLOW_FIRST;
    if (root.dataset.status === 'paused' && ev.seq > applied && ev.phase === 'start') { // answered elsewhere: it runs again
      setStatus('running');
      refreshControls();
    }
    if (root.dataset.status === 'queued') { // it got its slot
      setStatus('running');
      const note = document.getElementById('queue-wait');
      if (note) note.remove();
      const since = document.getElementById('run-started');
      if (since) since.textContent = 'started just now';
      refreshControls();
    }
    pending.push(ev);
    if (!flushTimer) flushTimer = setTimeout(applyPending, 0);
    // the page came with the usage so far
    if (ev.seq > firstSeq && ev.phase === 'progress' && ev.progress && ev.progress.step === 'model_usage') refreshUsageSoon();
  }

  function applyPending() {
    clearTimeout(flushTimer);
    flushTimer = null;
    if (!cy) return; // the canvas is being built: init applies them
    const evs = pending.splice(0);
    if (!evs.length) return;
    cy.batch(() => { for (const ev of evs) apply(ev); });
    if (needLayout) { needLayout = false; canvas.layout(cy); }
    if (drawerStale) { drawerStale = false; refreshDrawer(); }
    if (entries.length) appendTimeline(entries.splice(0).join(''));
    markReady();
  }

  // The model usage panel is rendered by the server (tokens and cost per
  // node); reload it, at most every half second, as model calls report.
  // The stream's last frame carries it too.
  let usageTimer = null;
  function refreshUsageSoon() {
    if (usageTimer) return;
    usageTimer = setTimeout(async () => {
      usageTimer = null;
      let html;
      try { ({ html } = await api.html('GET', '/runs/' + encodeURIComponent(runId) + '/usage')); } catch { return; } // the panel keeps what it showed
      showUsage(html);
    }, 500);
  }
  function showUsage(html) {
    const section = $('usage-section');
    const open = !document.getElementById('usage-panel') || document.getElementById('usage-panel').open;
    section.innerHTML = html;
    const panel = document.getElementById('usage-panel');
    if (panel) panel.open = open;
  }

  // The page is ready once the canvas shows what the page came with: the
  // stream has replayed the events up to the timeline's last entry (or
  // ended, or failed for good).
  let streamEnded = false;
  let readying = false;
  async function markReady() {
    if (readying || !cy || !(applied >= firstSeq || streamEnded)) return;
    readying = true;
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    root.dataset.ready = '1';
    window.__run.readyAt = performance.now();
    canvas.startLoading(cy);
  }

  // connect follows the run from its first event (Last-Event-ID on a
  // reconnect), with the entries of the events after the last one the
  // timeline shows; a run that is not executing sends its events and its
  // result, then the stream ends.
  function connect() {
    es = new EventSource('/runs/' + encodeURIComponent(runId) + '/events?after=' + applied + '&shown=' + shown);
    for (const ph of ['start', 'done', 'skip', 'error', 'paused', 'progress', 'state_patch']) es.addEventListener(ph, onEvent);
    es.addEventListener('queued', (e) => {
      let q;
      try { q = JSON.parse(e.data); } catch { return; }
      const p = $('queue-position');
      if (p && q.position) p.textContent = String(q.position);
    });
    es.addEventListener('run', (e) => {
      es.close();
      es = null;
      streamEnded = true;
      applyPending();
      let run = null;
      try { run = JSON.parse(e.data); } catch { /* refresh below */ }
      if (!run || typeof run.controls !== 'string') {
        refreshControls().then(() => { if (selected) refreshDrawerSoon(); });
      } else if (run.status !== root.dataset.status) { // the controls the page came with stand while the status does
        showControls(run.controls, run.status, run.duration_ms);
        if (selected) refreshDrawerSoon();
      }
      if (run && typeof run.usage === 'string') showUsage(run.usage);
      markReady();
      if (run && ['paused', 'running', 'queued'].includes(run.status)) followLater();
    });
    es.addEventListener('error', () => {
      if (es && es.readyState === EventSource.CLOSED) { // refused (a watcher limit): the page shows what it came with
        streamEnded = true;
        markReady();
      }
    });
  }

  // A run that is not executing in this process ends its stream, but a
  // paused one may be answered elsewhere (the inbox, another tab, the API)
  // and one running in another process goes on: the page connects again,
  // less often the longer nothing new comes (FOLLOW_FIRST, growing to
  // FOLLOW_MAX), and at once when the tab is shown again.
  const FOLLOW_FIRST = 1000, FOLLOW_MAX = 15000;
  let followDelay = FOLLOW_FIRST;
  let followTimer = null;
  function followLater() {
    clearTimeout(followTimer);
    followTimer = setTimeout(followNow, followDelay);
    followDelay = Math.min(followDelay * 1.5, FOLLOW_MAX);
  }
  function followNow() {
    clearTimeout(followTimer);
    followTimer = null;
    if (!es) connect();
  }
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible' && followTimer) followNow();
  });

  // ---- start -------------------------------------------------------------------

  // loadDoc reads the chain the run ran from /v1: its saved version, or an
  // ad-hoc run's own document (GET /v1/runs/{id}'s doc). Without one the
  // nodes are drawn as their events arrive.
  async function loadDoc() {
    const chainId = root.dataset.chainId;
    const version = Number(root.dataset.chainVersion || 0);
    try {
      if (chainId && version > 0) return (await api.get('/v1/chains/' + encodeURIComponent(chainId) + '/versions/' + version)).doc || null;
      return (await api.get('/v1/runs/' + encodeURIComponent(runId))).doc || null;
    } catch {
      return null;
    }
  }

  async function init() {
    connect(); // while the document loads: its events wait in pending
    doc = await loadDoc();
    byId = new Map(((doc && doc.nodes) || []).map((n) => [n.node_id, n]));
    const ids = ((doc && doc.nodes) || []).map((n) => n.node_id);
    cy = canvas.createCy(cyEl, doc || { nodes: [], edges: [] }, { editable: false, mode: 'run', progressive: true, onProgress: canvas.showLoading(root) });
    // a large chain's elements arrive after the page is ready: draw each
    // with what the events said about it so far
    cy.on('add', 'node', (e) => { if (state.has(e.target.id())) redrawNode(e.target.id()); });
    cy.on('add', 'edge', (e) => drawEdge(e.target.id()));
    buildNodeTable(ids);
    cy.on('tap', 'node', (e) => select(e.target.id()));
    cy.on('mouseover', 'node', (e) => {
      const st = state.get(e.target.id()) || {};
      cyEl.title = e.target.id() + ': ' + (st.phase === 'start' ? 'running' : st.phase || 'not reached') + (st.reason ? ' — ' + reasonText(st.reason) : '') + (st.error ? ' — ' + st.error : '');
    });
    cy.on('mouseout', () => { cyEl.title = ''; });
    $('btn-fit').addEventListener('click', () => canvas.fit(cy));
    applyPending();
    markReady(); // a run with no events yet, or a stream that ended first
  }
  init();
})();
