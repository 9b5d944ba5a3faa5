// The designer's triggers panel: the chain's schedules and
// webhooks with their last firings (GET /v1/chains/{id}/triggers); add, edit
// and remove a schedule; create a webhook and show its secret once; remove
// one. Triggers live beside the chain: nothing here saves a version.
import * as api from './api.js';
import * as common from './common.js';
(function () {
  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs, ...kids) => common.el(tag, attrs, ...kids);
  const root = $('editor');
  const panel = $('triggers-panel');
  if (!root || !panel) return;
  const chainId = root.dataset.chainId;
  const base = '/v1/chains/' + encodeURIComponent(chainId);
  const when = (s) => (s ? new Date(s).toLocaleString() : '');

  // One line per firing: when, what came of it, and the run it started.
  function firingsList(fs) {
    if (!fs || !fs.length) return el('p', { class: 'trig-none', text: 'Not fired yet.' });
    return el('ol', { class: 'firings', 'aria-label': 'Last firings' }, ...fs.map((f) => el('li', { class: 'firing ' + f.outcome },
      el('time', { datetime: f.tick || f.at, text: when(f.tick || f.at) }), ' ',
      el('span', { class: 'outcome', text: f.outcome }), ' ',
      f.run_id ? el('a', { href: '/runs/' + encodeURIComponent(f.run_id), text: 'run ' + f.run_id.slice(0, 8) }) : null,
      f.message ? el('span', { class: 'msg', text: ' — ' + f.message }) : null)));
  }

  let current = { schedules: [], hooks: [] };

  function render() {
    const { schedules, hooks } = current;
    $('triggers-badge').textContent = (schedules.length + hooks.length) ? `${schedules.length} schedule${schedules.length === 1 ? '' : 's'}, ${hooks.length} webhook${hooks.length === 1 ? '' : 's'}` : 'none';
    // the Triggers tab shows the count (editor-tabs.js)
    root.dispatchEvent(new CustomEvent('studio:triggers', { detail: { count: schedules.length + hooks.length } }));
    $('schedules-list').replaceChildren(...(schedules.length ? schedules.map((s) => el('li', { class: 'trig schedule' + (s.enabled ? '' : ' off'), 'data-schedule-id': s.id },
      el('div', { class: 'trig-head' },
        el('code', { class: 'cron', text: s.cron }),
        el('span', { class: 'zone', text: s.time_zone || 'UTC' }),
        s.enabled ? null : el('span', { class: 'badge', text: 'disabled' })),
      el('div', { class: 'trig-meta', text: `overlap: ${s.overlap} · catch-up: ${s.catch_up}` + (s.next_tick ? ' · next ' + when(s.next_tick) : '') + budgetText(s.budget) }),
      firingsList(s.firings),
      el('div', { class: 'row' },
        button('Edit', 'Edit the schedule ' + s.cron, () => openSchedule(s)),
        button('Remove', 'Remove the schedule ' + s.cron, () => remove(base + '/schedules/' + encodeURIComponent(s.id), 'the schedule ' + s.cron)))))
      : [el('li', { class: 'trig-none', text: 'No schedule.' })]));
    $('hooks-list').replaceChildren(...(hooks.length ? hooks.map((h) => el('li', { class: 'trig hook', 'data-hook-id': h.id },
      el('div', { class: 'trig-head' }, el('code', { class: 'hook-path', text: h.path })),
      el('div', { class: 'trig-meta', text: (h.sync ? `answers with the output (waits up to ${Math.round(h.sync_timeout_ms / 1000)} s)` : 'answers 202 with the run id') + budgetText(h.budget) }),
      firingsList(h.firings),
      el('div', { class: 'row' },
        button('Send test event', 'Send test event to the webhook ' + h.path + ' and open its run', (e) => sendTest(h, e.currentTarget)),
        button('Remove', 'Remove the webhook ' + h.path, () => remove(base + '/hooks/' + encodeURIComponent(h.id), 'the webhook ' + h.path)))))
      : [el('li', { class: 'trig-none', text: 'No webhook.' })]));
  }

  // budgetText says a trigger's day budget, if any.
  function budgetText(b) {
    if (!b) return '';
    const parts = [];
    if (b.tokens) parts.push(b.tokens + ' tokens');
    if (b.cost) parts.push(String(b.cost));
    return ' · budget ' + parts.join(' and ') + ' a day';
  }

  // budgetOf reads a dialog's budget fields (undefined: no limit); a PUT
  // without it would clear the schedule's budget, so the dialog always
  // sends what it shows.
  function budgetOf(prefix) {
    const tokens = parseInt($(prefix + '-budget-tokens').value, 10), cost = parseFloat($(prefix + '-budget-cost').value);
    const b = {};
    if (Number.isFinite(tokens) && tokens !== 0) b.tokens = tokens;
    if (Number.isFinite(cost) && cost !== 0) b.cost = cost;
    return Object.keys(b).length ? b : undefined;
  }
  function showBudget(prefix, b) {
    $(prefix + '-budget-tokens').value = b && b.tokens ? String(b.tokens) : '';
    $(prefix + '-budget-cost').value = b && b.cost ? String(b.cost) : '';
  }

  function button(text, label, fn) {
    const b = el('button', { type: 'button', 'aria-label': label, text });
    b.addEventListener('click', fn);
    return b;
  }

  // sendTest fires the hook as a signed call would (the server signs
  // nothing: the editor is signed in) with the chain's sample input, and
  // opens the run it started.
  async function sendTest(h, btn) {
    btn.disabled = true;
    try {
      const r = await api.post(base + '/hooks/' + encodeURIComponent(h.id) + '/test', {});
      window.location.assign('/runs/' + encodeURIComponent(r.run_id));
    } catch (err) {
      btn.disabled = false;
      window.alert('Not sent: ' + err.message);
    }
  }

  async function load() {
    try {
      current = await api.json('GET', base + '/triggers');
      render();
    } catch (err) {
      $('triggers-badge').textContent = 'not loaded: ' + err.message;
    }
  }

  async function remove(path, what) {
    if (!window.confirm('Remove ' + what + '? Its firings are forgotten.')) return;
    try {
      await api.json('DELETE', path);
    } catch (err) {
      window.alert('Not removed: ' + err.message);
    }
    load();
  }

  // ---- schedule dialog ------------------------------------------------------

  const sdlg = $('schedule-dialog');
  let editing = null; // the schedule being edited; null: a new one
  function openSchedule(s) {
    editing = s || null;
    $('schedule-title').textContent = s ? 'Edit the schedule' : 'Add a schedule';
    $('sched-cron').value = s ? s.cron : '';
    $('sched-zone').value = s ? s.time_zone : (Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC');
    $('sched-overlap').value = s ? s.overlap : 'skip';
    $('sched-catchup').value = s ? s.catch_up : 'skip';
    $('sched-input').value = JSON.stringify(s ? s.input : {}, null, 2);
    $('sched-enabled').checked = s ? s.enabled : true;
    showBudget('sched', s && s.budget);
    $('schedule-error').replaceChildren();
    sdlg.showModal();
    $('sched-cron').focus();
  }
  $('btn-add-schedule').addEventListener('click', () => openSchedule(null));
  $('schedule-cancel').addEventListener('click', () => sdlg.close());
  sdlg.addEventListener('close', () => $('btn-add-schedule').focus());
  $('schedule-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const out = $('schedule-error');
    const fail = (msg, field) => { out.replaceChildren(el('div', { class: 'form-error', text: msg })); if (field) field.focus(); };
    let input;
    try {
      input = JSON.parse($('sched-input').value || '{}');
    } catch (err) { return fail('The input is not JSON: ' + err.message, $('sched-input')); }
    if (!input || typeof input !== 'object' || Array.isArray(input)) return fail('The input must be a JSON object.', $('sched-input'));
    const body = { cron: $('sched-cron').value.trim(), time_zone: $('sched-zone').value.trim(), overlap: $('sched-overlap').value,
      catch_up: $('sched-catchup').value, input, enabled: $('sched-enabled').checked, budget: budgetOf('sched') };
    $('schedule-submit').disabled = true;
    try {
      if (editing) await api.json('PUT', base + '/schedules/' + encodeURIComponent(editing.id), body);
      else await api.json('POST', base + '/schedules', body);
      sdlg.close();
      load();
    } catch (err) {
      fail('Not saved: ' + err.message, /time zone/.test(err.message) ? $('sched-zone') : $('sched-cron'));
    } finally {
      $('schedule-submit').disabled = false;
    }
  });

  // ---- webhook dialog -------------------------------------------------------

  const hdlg = $('hook-dialog');
  $('btn-add-hook').addEventListener('click', () => {
    $('hook-error').replaceChildren();
    $('hook-created').hidden = true;
    $('hook-submit').hidden = false;
    $('hook-sync').disabled = $('hook-timeout').disabled = false;
    showBudget('hook', null);
    hdlg.showModal();
    $('hook-sync').focus();
  });
  $('hook-cancel').addEventListener('click', () => hdlg.close());

  // curlLine is a shell line that signs a body with the secret (openssl) at
  // the time it runs and sends it: a ready try that works more than once.
  function curlLine(url, secret) {
    const q = (v) => "'" + v.replace(/'/g, "'\\''") + "'";
    return 'body=\'{"hello":"from curl"}\'; t=$(date +%s); ' +
      'sig=$(printf \'%s.%s\' "$t" "$body" | openssl dgst -sha256 -hmac ' + q(secret) + ' -r | cut -d" " -f1); ' +
      'curl -sS -X POST ' + q(url) + ' -H \'Content-Type: application/json\' -H "X-Studio-Signature: t=$t,v1=$sig" -d "$body"';
  }

  // Copy buttons copy their field; where the clipboard is not open to the
  // page (plain http off loopback), the text is selected to copy by hand.
  hdlg.addEventListener('click', async (e) => {
    const b = e.target.closest('button.copy');
    if (!b) return;
    const field = $(b.dataset.copy);
    const status = $('copy-status');
    try {
      await navigator.clipboard.writeText(field.value);
      status.textContent = 'Copied.';
    } catch {
      field.focus();
      field.select();
      status.textContent = 'Selected: press Ctrl+C to copy.';
    }
  });
  hdlg.addEventListener('close', () => { $('hook-secret').value = ''; $('hook-curl').value = ''; $('copy-status').textContent = ''; $('btn-add-hook').focus(); });
  $('hook-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const sync = $('hook-sync').checked;
    const body = { sync, budget: budgetOf('hook') };
    if (sync) body.sync_timeout_ms = Math.round(Number($('hook-timeout').value || 30) * 1000);
    $('hook-submit').disabled = true;
    try {
      const h = await api.json('POST', base + '/hooks', body);
      $('hook-secret').value = h.secret;
      $('hook-url').value = window.location.origin + h.path;
      $('hook-curl').value = curlLine(window.location.origin + h.path, h.secret);
      $('hook-created').hidden = false;
      $('hook-submit').hidden = true;
      $('hook-sync').disabled = $('hook-timeout').disabled = true;
      $('hook-secret').focus();
      $('hook-secret').select();
      load();
    } catch (err) {
      $('hook-error').replaceChildren(el('div', { class: 'form-error', text: 'Not created: ' + err.message }));
    } finally {
      $('hook-submit').disabled = false;
    }
  });

  load();
  // Firings happen without this page: look again now and then while it is shown.
  setInterval(() => { if (!document.hidden && !sdlg.open && !hdlg.open) load(); }, 15000);
})();
