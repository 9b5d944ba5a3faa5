// The editor's MCP panel: an admin offers the chain as a tool of the
// studio's MCP server, or stops (PUT /v1/chains/{id}/mcp). A setting of the
// chain record: nothing here saves a version.
import * as api from './api.js';
(function () {
  const box = document.getElementById('mcp-exposed');
  const root = document.getElementById('editor');
  if (!box || !root) return;
  const state = document.getElementById('mcp-state');
  const path = '/v1/chains/' + encodeURIComponent(root.dataset.chainId) + '/mcp';
  box.addEventListener('change', async () => {
    const want = box.checked;
    box.disabled = true;
    state.textContent = 'Saving…';
    try {
      const ch = await api.json('PUT', path, { exposed: want });
      box.checked = !!ch.mcp_exposed;
      state.textContent = ch.mcp_exposed ? 'Offered to MCP clients.' : 'No longer offered.';
    } catch (e) {
      box.checked = !want;
      state.textContent = 'Not changed: ' + e.message;
    } finally {
      box.disabled = false;
    }
  });
})();
