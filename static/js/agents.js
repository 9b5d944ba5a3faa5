// Agent page: draws the agent's compiled chain read-only and, for a model
// agent, lists the models its server offers on request.
import * as canvas from './canvas.js';
import * as api from './api.js';

(function drawChain() {
  const root = document.getElementById('agent');
  const cyEl = document.getElementById('cy');
  if (!root || !cyEl || !root.dataset.doc) return;
  const doc = JSON.parse(root.dataset.doc);
  const cy = canvas.createCy(cyEl, doc, { editable: false, mode: 'run' });
  root.dataset.ready = '1';
  window.__agent = { cy };
})();

(function modelList() {
  const box = document.getElementById('agent-model');
  if (!box) return;
  const button = document.getElementById('list-models');
  const status = document.getElementById('models-status');
  const alert = document.getElementById('models-error');
  const list = document.getElementById('models-list');
  const mine = box.dataset.model;

  const item = (id) => {
    const li = document.createElement('li');
    const code = document.createElement('code');
    code.textContent = id;
    li.append(code);
    if (id === mine || id === mine + ':latest' || id + ':latest' === mine) {
      li.className = 'is-mine';
      const badge = document.createElement('span');
      badge.className = 'badge ok';
      badge.textContent = "this agent's model";
      li.append(badge);
    }
    return li;
  };

  button.addEventListener('click', async () => {
    // Not disabled while it waits: a disabled button would lose the focus.
    if (box.getAttribute('aria-busy') === 'true') return;
    box.setAttribute('aria-busy', 'true');
    alert.textContent = '';
    status.textContent = 'Asking the model server…';
    try {
      const out = await api.get('/v1/agents/' + encodeURIComponent(box.dataset.agent) + '/models');
      list.replaceChildren(...out.models.map(item));
      list.hidden = out.models.length === 0;
      if (!out.listed) {
        status.textContent = 'The server does not list its models: ' + (out.reason || 'no reason given') + '.';
      } else if (out.has_model) {
        status.textContent = `${out.models.length} models; the server serves ${out.model}.`;
      } else {
        status.textContent = '';
        alert.textContent = `The server does not list ${out.model}: the agent's calls will fail until it serves it (${out.models.length} other models listed).`;
      }
      box.dataset.listed = out.listed ? 'yes' : 'no';
    } catch (e) {
      status.textContent = '';
      list.replaceChildren();
      list.hidden = true;
      alert.textContent = e.message;
      box.dataset.listed = 'error';
    } finally {
      box.removeAttribute('aria-busy');
    }
  });
})();
