// The inbox: each pending interrupt is answered in place. Approve sends the
// proposed value, or the modified one when "Modify, then approve" is open
// (the form is built from the interrupt's schema by forms.js); Reject sends
// no value; a tool's pause gets a JSON answer. The server validates the
// value against the schema and names the field when it does not fit. Once
// answered, the card says what the run then did (failed, completed, waits
// for another answer), read from the run, not assumed.
import * as api from './api.js';
import * as forms from './forms.js';
(function () {
  const list = document.getElementById('inbox-list');
  if (!list) return;
  const live = document.getElementById('inbox-live');
  const count = document.getElementById('inbox-count');

  function say(item, text, ok) {
    const box = item.querySelector('.ib-result');
    box.textContent = text;
    box.classList.toggle('form-error', !ok);
    box.classList.toggle('ib-done', !!ok);
  }

  // valueOf reads the value a button sends; undefined: none, null on error.
  function valueOf(item, action) {
    if (action === 'reject') return undefined;
    const modify = item.querySelector('.ib-modify');
    if (action === 'approve' && !(modify && modify.open)) return undefined;
    const fs = item.querySelector('fieldset.schema-form');
    if (fs) {
      const v = forms.read(fs);
      if (v === forms.INVALID) { say(item, 'The value is not valid JSON: fix it in Raw JSON.'); return null; }
      return v === undefined ? {} : v;
    }
    const ta = item.querySelector('.ib-value');
    const text = ta ? ta.value.trim() : '';
    if (!text) { say(item, 'Type the answer as JSON, for example {"ok": true} or "yes".'); if (ta) ta.focus(); return null; }
    try { return JSON.parse(text); } catch (e) { say(item, 'The answer is not JSON: ' + e.message); ta.focus(); return null; }
  }

  // focusField moves to the form field a 422 named (details.field, a JSON
  // pointer such as /amount), opening the form first.
  function focusField(item, field) {
    const fs = item.querySelector('fieldset.schema-form');
    const modify = item.querySelector('.ib-modify');
    if (modify) modify.open = true;
    if (!fs || !field || field === '/') return;
    const name = 'value' + field.split('/').slice(1).map((p) => (/^\d+$/.test(p) ? '[' + p + ']' : '.' + p)).join('');
    const wrap = fs.querySelector('.sf-field[data-path="' + CSS.escape(name) + '"]');
    const input = wrap && wrap.querySelector('input, select, textarea');
    if (input) input.focus();
  }

  async function answer(item, action, button) {
    const value = valueOf(item, action);
    if (value === null) return;
    // the pause this item is (a node id, or e.g. review[3] for a map item)
    const body = { action, pause_id: item.dataset.nodeId };
    if (value !== undefined) body.value = value;
    const comment = item.querySelector('.ib-comment').value.trim();
    if (comment) body.comment = comment;
    const buttons = item.querySelectorAll('button[data-action]');
    buttons.forEach((b) => { b.disabled = true; });
    say(item, 'Sending…', true);
    let fail = null;
    try {
      await api.post(item.dataset.answerUrl, body);
    } catch (e) {
      fail = e;
    }
    if (!fail) {
      const done = { approve: 'Approved', reject: 'Rejected', respond: 'Answered' }[action];
      item.classList.add('answered');
      const note = answeredNote(item, done + '. Waiting for the run…');
      item.querySelector('.answer-form').replaceChildren(note);
      recount();
      const next = list.querySelector('.inbox-item:not(.answered) button[data-action]');
      if (next) next.focus(); else note.querySelector('a').focus();
      const text = done + '. ' + await outcomeOf(item.dataset.runId);
      note.firstChild.textContent = text + ' ';
      if (live) live.textContent = text + ' ' + item.querySelector('h2').textContent.replace(/\s+/g, ' ').trim();
      return;
    }
    buttons.forEach((b) => { b.disabled = false; });
    if (fail.status === 409) {
      item.classList.add('answered');
      item.querySelector('.answer-form').replaceChildren(answeredNote(item, 'Someone else answered first (or the deadline did).'));
      recount();
      return;
    }
    const field = fail.details && fail.details.field;
    say(item, fail.message);
    if (fail.status === 422 && field && field.startsWith('/')) focusField(item, field);
    else button.focus();
  }

  // outcomeOf says what the answer did to the run, from the run's state:
  // it reads the run until it stops (failed, completed, paused again) or a
  // few seconds pass while it still runs (then it says so).
  async function outcomeOf(runId) {
    let run = null;
    for (let k = 0; k < 20; k++) {
      try {
        run = await api.get('/v1/runs/' + encodeURIComponent(runId));
      } catch (e) { /* the note keeps the last state read */ }
      if (run && run.status !== 'running' && run.status !== 'queued') break;
      await new Promise((ok) => setTimeout(ok, 250));
    }
    if (!run) return 'Open the run to see what it did.';
    const err = run.error && run.error.message ? ': ' + run.error.message : '';
    switch (run.status) {
      case 'failed': return 'The run failed' + err + '.';
      case 'completed': return 'The run completed.';
      case 'partial': return 'The run ended partial' + err + '.';
      case 'cancelled': return 'The run was cancelled.';
      case 'timed_out': return 'The run timed out.';
      case 'paused': return 'The run waits for another answer.';
    }
    return 'The run continues.';
  }

  function recount() {
    if (count) count.textContent = list.querySelectorAll('.inbox-item:not(.answered)').length + ' waiting';
  }

  function answeredNote(item, text) {
    const p = document.createElement('p');
    p.className = 'ib-done-note';
    p.setAttribute('role', 'status');
    p.append(text + ' ');
    const a = document.createElement('a');
    a.href = '/runs/' + encodeURIComponent(item.dataset.runId);
    a.textContent = 'Open the run';
    p.append(a);
    return p;
  }

  list.addEventListener('click', (e) => {
    const b = e.target.closest('button[data-action]');
    if (!b || !list.contains(b)) return;
    answer(b.closest('.inbox-item'), b.dataset.action, b);
  });
})();
