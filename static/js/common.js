// Shared page behaviour: dialogs, and small helpers the other scripts use.
'use strict';
(function () {
  const Studio = (window.Studio = window.Studio || {});

  // Close buttons inside dialogs.
  document.addEventListener('click', (e) => {
    const b = e.target.closest('.close-dialog');
    if (b) {
      const d = b.closest('dialog');
      if (d) d.close();
    }
  });

  // debounce returns fn delayed until calls stop for ms.
  Studio.debounce = function (fn, ms) {
    let t = null;
    const d = function (...args) {
      clearTimeout(t);
      t = setTimeout(() => { t = null; fn.apply(this, args); }, ms);
    };
    d.cancel = () => { clearTimeout(t); t = null; };
    d.pending = () => t !== null;
    return d;
  };

  Studio.el = function (tag, attrs, ...children) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') n.className = v;
      else if (k === 'text') n.textContent = v;
      else n.setAttribute(k, v);
    }
    for (const c of children) if (c != null) n.append(c);
    return n;
  };
})();
