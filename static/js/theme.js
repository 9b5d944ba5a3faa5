// Applies the remembered theme (light, dark or the system's) before the page
// is first painted: loaded without defer in <head>, so there is no flash of
// the other theme. common.js has the switch.
'use strict';
(function () {
  let t = null;
  try { t = localStorage.getItem('studio-theme'); } catch (e) { /* storage refused: follow the system */ }
  if (t === 'light' || t === 'dark') document.documentElement.dataset.theme = t;
})();
