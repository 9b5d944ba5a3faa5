// Settings → MCP servers: each row's status follows the server's live state
// (GET /v1/mcp-servers) without a reload. A server is "connecting" for a
// moment after it is saved; the page asks again every second while a row
// is connecting, then every 10 seconds (what each process re-reads).
import * as api from './api.js';
(function () {
  const table = document.getElementById('mcp-table');
  if (!table) return;
  const FAST = 1000;
  const SLOW = 10000;

  function render(row, srv) {
    const st = srv.status || {};
    const sig = JSON.stringify([srv.enabled, st.state, st.reason, st.server_info, st.tools, st.dropped, st.dropped_more]);
    if (row.dataset.sig === sig) return; // unchanged: the live cell stays quiet
    row.dataset.sig = sig;
    const state = st.state || (srv.enabled ? 'connecting' : 'disabled');
    row.dataset.state = state;
    const cell = row.querySelector('.mcp-state');
    if (cell) {
      const parts = [];
      const strong = document.createElement('strong');
      strong.textContent = state;
      parts.push(strong);
      if (st.reason) {
        const s = document.createElement('span');
        s.className = 'hint';
        s.textContent = st.reason;
        parts.push(' ', s);
      }
      const info = st.server_info;
      if (info) {
        const s = document.createElement('span');
        s.className = 'muted';
        s.textContent = info;
        parts.push(' ', s);
      }
      cell.replaceChildren(...parts);
    }
    const tools = row.querySelector('.mcp-tools');
    if (tools && typeof st.tools === 'number') {
      const dropped = (st.dropped || []).length + (st.dropped_more || 0);
      tools.replaceChildren(String(st.tools));
      if (dropped) {
        const s = document.createElement('span');
        s.className = 'hint';
        s.title = (st.dropped || []).map((d) => d.name + ': ' + d.reason).join('\n');
        s.textContent = '(' + dropped + ' left out)';
        tools.append(' ', s);
      }
    }
  }

  let timer = 0;
  async function refresh() {
    timer = 0;
    let connecting = false;
    try {
      const list = await api.json('GET', '/v1/mcp-servers');
      for (const srv of list.servers || []) {
        const row = table.querySelector('tr[data-mcp-server="' + CSS.escape(srv.name) + '"]');
        if (!row) continue;
        render(row, srv);
        if (row.dataset.state === 'connecting') connecting = true;
      }
    } catch (e) {
      connecting = true; // ask again soon: the studio may be restarting
    }
    table.dataset.live = '1';
    if (!document.hidden) timer = setTimeout(refresh, connecting ? FAST : SLOW);
  }
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden && !timer) refresh();
  });
  const anyConnecting = !!table.querySelector('tr[data-state="connecting"]');
  timer = setTimeout(refresh, anyConnecting ? 0 : SLOW);
})();
