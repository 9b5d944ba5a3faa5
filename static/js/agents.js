// Agent page: draws the agent's compiled chain read-only.
import * as canvas from './canvas.js';
(function () {
  const root = document.getElementById('agent');
  const cyEl = document.getElementById('cy');
  if (!root || !cyEl || !root.dataset.doc) return;
  const doc = JSON.parse(root.dataset.doc);
  const cy = canvas.createCy(cyEl, doc, { editable: false, mode: 'run' });
  root.dataset.ready = '1';
  window.__agent = { cy };
})();
