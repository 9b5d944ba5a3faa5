// Shared page behaviour: dialogs, and small helpers the other scripts use.

// duration is the one formatter of a duration (milliseconds) for people,
// as the server writes it (views/helpers.go duration): "—" unknown,
// "< 1 ms" under a millisecond, 12 ms, 1.4 s, 2 min 3 s, 1 h 5 min.
export function duration(ms) {
  if (typeof ms !== 'number' || !(ms >= 0)) return '—';
  if (ms < 1) return '< 1 ms';
  if (ms < 999.5) return Math.round(ms) + ' ms';
  if (ms < 60000) return (ms / 1000).toFixed(1) + ' s';
  if (ms < 3600000) return Math.floor(ms / 60000) + ' min ' + Math.floor(ms / 1000) % 60 + ' s';
  return Math.floor(ms / 3600000) + ' h ' + Math.floor(ms / 60000) % 60 + ' min';
}

// Close buttons inside dialogs.
document.addEventListener('click', (e) => {
  const b = e.target.closest('.close-dialog');
  if (b) {
    const d = b.closest('dialog');
    if (d) d.close();
  }
});

// Theme: "system" (the default) follows prefers-color-scheme; "light" and
// "dark" are remembered in localStorage (theme.js applies them before the
// first paint). A change fires "studio:theme" on document, so the canvas
// can restyle itself from the new CSS variables.
export function theme() {
  const t = document.documentElement.dataset.theme;
  return t === 'light' || t === 'dark' ? t : 'system';
}
export function setTheme(t) {
  if (t === 'light' || t === 'dark') document.documentElement.dataset.theme = t;
  else { delete document.documentElement.dataset.theme; t = 'system'; }
  try {
    if (t === 'system') localStorage.removeItem('studio-theme');
    else localStorage.setItem('studio-theme', t);
  } catch (e) { /* storage refused: the choice lasts for this page */ }
  const sel = document.getElementById('theme-select');
  if (sel) sel.value = t;
  document.dispatchEvent(new CustomEvent('studio:theme', { detail: { theme: t } }));
}
const themeSelect = document.getElementById('theme-select');
if (themeSelect) {
  themeSelect.value = theme();
  themeSelect.addEventListener('change', () => setTheme(themeSelect.value));
}
// Another tab switched: follow it.
window.addEventListener('storage', (e) => {
  if (e.key === 'studio-theme') setTheme(e.newValue || 'system');
});
const systemDark = window.matchMedia('(prefers-color-scheme: dark)');
systemDark.addEventListener('change', () => {
  if (theme() === 'system') document.dispatchEvent(new CustomEvent('studio:theme', { detail: { theme: 'system' } }));
});

// debounce returns fn delayed until calls stop for ms.
export function debounce(fn, ms) {
  let t = null;
  const d = function (...args) {
    clearTimeout(t);
    t = setTimeout(() => { t = null; fn.apply(this, args); }, ms);
  };
  d.cancel = () => { clearTimeout(t); t = null; };
  d.pending = () => t !== null;
  return d;
}

export function el(tag, attrs, ...children) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') n.className = v;
    else if (k === 'text') n.textContent = v;
    else n.setAttribute(k, v);
  }
  for (const c of children) if (c != null) n.append(c);
  return n;
}
