// The run page's agent panel: what each agent node is doing, folded from its
// progress events (the steps of docs/agents.md's tool loop): per model turn
// the text the model streams, its tokens, and the tool calls it makes with
// their input, status, output or error and duration. run.js hands over every
// event once, in seq order, whether replayed (a finished run, a reload) or
// live, so the panel is the same either way.
//
// Model text and tool data are written with textContent only, never parsed
// as HTML. What the page keeps of a node's text is bounded (TEXT_CAP): a
// long answer is cut with a note, the tool steps keep coming.
import * as common from './common.js';

export const TEXT_CAP = 256 * 1024; // UTF-16 units of streamed text kept per node
const STEPS = new Set(['model_call', 'text', 'model_usage', 'tool_call', 'tool_result', 'repair', 'tool_calls_refused', 'warning']);
const STATUS_TEXT = { ok: 'ok', error: 'error', rejected: 'rejected by a person', refused: 'refused', running: 'running…' };

// isAgentStep: a progress event of an agent's loop (they all name the agent).
export function isAgentStep(ev) {
  const p = ev && ev.progress;
  return ev.phase === 'progress' && !!p && typeof p === 'object' && STEPS.has(p.step) && typeof p.agent === 'string';
}

const pretty = (v) => {
  if (v === undefined) return '';
  try { return JSON.stringify(v, null, 2); } catch { return String(v); }
};
const thousands = (n) => String(n).replace(/\B(?=(\d{3})+$)/g, ' ');
const count = (v) => (typeof v === 'number' && isFinite(v) ? v : null);

// create builds the panel inside panelEl (a hidden section holding
// listEl): nameEl(id) is the node's label and id as the page writes them.
export function create(panelEl, listEl, { nameEl }) {
  const nodes = new Map(); // node id → node view

  // The panel follows the newest step while it is scrolled to the bottom,
  // also when it gets shorter (the final output opens above it); a person
  // who scrolls up keeps the place.
  let pinned = true;
  const atBottom = () => panelEl.scrollTop + panelEl.clientHeight >= panelEl.scrollHeight - 30;
  const follow = () => { if (pinned) panelEl.scrollTop = panelEl.scrollHeight; };
  panelEl.addEventListener('scroll', () => { pinned = atBottom(); }, { passive: true });
  if (window.ResizeObserver) new ResizeObserver(follow).observe(panelEl);

  function nodeView(id, agent) {
    let n = nodes.get(id);
    if (n) return n;
    const hid = 'agent-h-' + nodes.size;
    const heading = common.el('h3', { id: hid, class: 'agent-node-title' }, 'Agent ', common.el('strong', { text: agent }), ' · ', ...nameEl(id));
    const wait = common.el('p', { class: 'agent-wait hint', hidden: 'hidden' });
    const turnsEl = common.el('div', { class: 'agent-turns' });
    const section = common.el('section', { class: 'agent-node', 'data-node-id': id, 'aria-labelledby': hid }, heading, turnsEl, wait);
    n = { id, section, turnsEl, wait, turns: new Map(), last: null, textLen: 0, truncated: false, rows: new Map() };
    nodes.set(id, n);
    listEl.append(section);
    panelEl.hidden = false;
    return n;
  }

  // A node run once per map item or loop iteration has its turns apart.
  function groupOf(ev) {
    const parts = [];
    if (ev.item != null) parts.push('item ' + ev.item);
    if (ev.iteration > 1) parts.push('iteration ' + ev.iteration);
    return parts.join(', ');
  }

  function turnView(n, ev, turn) {
    const group = groupOf(ev);
    const key = group + '#' + turn;
    let t = n.turns.get(key);
    if (t) return (n.last = t);
    const meta = common.el('span', { class: 'agent-turn-meta muted' });
    const title = common.el('h4', { class: 'agent-turn-title' }, 'Turn ' + (turn == null ? '?' : turn) + (group ? ' (' + group + ')' : ''), ' ', meta);
    const text = document.createTextNode('');
    const textEl = common.el('div', { class: 'agent-text', hidden: 'hidden' }, text);
    // the steps are announced as they come, the text is not (per token)
    const steps = common.el('ol', { class: 'agent-steps', 'aria-live': 'polite', 'aria-label': 'Steps of turn ' + (turn == null ? '?' : turn), hidden: 'hidden' });
    const el = common.el('div', { class: 'agent-turn', 'data-turn': turn == null ? '' : String(turn) }, title, textEl, steps);
    t = { key, el, meta, text, textEl, steps, model: '', tokens: '', called: 0 };
    n.turns.set(key, t);
    n.turnsEl.append(el);
    return (n.last = t);
  }

  // the turn a step without a turn number (a repair) belongs to: the last one
  const lastTurn = (n, ev) => n.last || turnView(n, ev, null);

  function setMeta(t) {
    t.meta.textContent = [t.model, t.called > 1 ? 'called again' : '', t.tokens].filter(Boolean).join(' · ');
  }

  function addText(n, t, s) {
    if (typeof s !== 'string' || !s || n.truncated) return;
    const room = TEXT_CAP - n.textLen;
    const part = s.length > room ? s.slice(0, room) : s;
    t.text.appendData(part);
    n.textLen += part.length;
    t.textEl.hidden = false;
    if (part.length < s.length) {
      n.truncated = true;
      t.textEl.append(common.el('span', { class: 'agent-cut muted', text: ' … (truncated on this page)' }));
    }
  }

  function stepRow(t, cls, ...children) {
    const li = common.el('li', { class: 'agent-step ' + cls }, ...children);
    t.steps.append(li);
    t.steps.hidden = false;
    return li;
  }

  function details(summary, value, cls) {
    return common.el('details', { class: cls }, common.el('summary', { text: summary }), common.el('pre', { class: 'json', text: pretty(value) }));
  }

  function toolCall(n, t, p) {
    const status = common.el('span', { class: 'agent-status st-running', text: STATUS_TEXT.running });
    const dur = common.el('span', { class: 'agent-dur muted' });
    const head = common.el('div', { class: 'agent-step-head' },
      common.el('code', { class: 'agent-tool', text: p.tool || '?' }),
      p.kind === 'chain' ? common.el('span', { class: 'kind-badge', text: 'chain' }) : null,
      status, dur);
    const li = stepRow(t, 'agent-call', head, p.input === undefined ? null : details('Input', p.input, 'agent-input'));
    if (p.call_id) li.dataset.callId = p.call_id;
    const row = { li, status, dur };
    if (p.call_id) n.rows.set(t.key + '/' + p.call_id, row);
    return row;
  }

  function toolResult(n, t, p) {
    // a result whose call this page never saw (refused calls have none)
    const row = (p.call_id && n.rows.get(t.key + '/' + p.call_id)) || toolCall(n, t, { tool: p.tool, kind: p.kind });
    const st = STATUS_TEXT[p.status] ? p.status : 'error';
    row.status.textContent = STATUS_TEXT[st];
    row.status.className = 'agent-status st-' + st;
    const ms = count(p.duration_ms);
    row.dur.textContent = ms == null ? '' : common.duration(ms);
    row.li.classList.toggle('st-rejected', st === 'rejected'); // a person's answer, not a failure
    if (row.out) row.out.remove();
    if (p.error) row.out = common.el('p', { class: 'agent-error', text: p.error });
    else if (p.output !== undefined) row.out = details('Output', p.output, 'agent-output');
    else row.out = null;
    if (row.out) row.li.append(row.out);
  }

  // apply folds one agent step into the panel.
  function apply(ev) {
    const p = ev.progress;
    const n = nodeView(ev.node_id, p.agent);
    n.wait.hidden = true;
    switch (p.step) {
      case 'model_call': {
        const t = turnView(n, ev, p.turn);
        t.called++;
        if (t.called > 1) { t.text.data = ''; t.textEl.hidden = true; } // the turn asked again: its text starts over
        t.model = p.model || '';
        setMeta(t);
        break;
      }
      case 'text':
        addText(n, turnView(n, ev, p.turn), p.text);
        break;
      case 'model_usage': {
        const t = turnView(n, ev, p.turn != null ? p.turn : (n.last && n.last.el.dataset.turn ? Number(n.last.el.dataset.turn) : null));
        if (!t.model && p.model) t.model = p.model;
        t.tokens = p.reported === false ? 'no token usage reported' : thousands(count(p.input_tokens) || 0) + ' in, ' + thousands(count(p.output_tokens) || 0) + ' out tokens';
        setMeta(t);
        break;
      }
      case 'tool_call':
        toolCall(n, turnView(n, ev, p.turn), p);
        break;
      case 'tool_result':
        toolResult(n, turnView(n, ev, p.turn), p);
        break;
      case 'tool_calls_refused': // a turn over max_tool_calls: one row for all its calls
        stepRow(turnView(n, ev, p.turn), 'agent-refused', common.el('span', { class: 'agent-status st-refused', text: (count(p.calls) ?? '?') + ' calls refused' }), ' ', common.el('span', { class: 'agent-error', text: p.error || '' }));
        break;
      case 'warning': // the agent answered, but some of its calls failed
        n.turnsEl.append(common.el('p', { class: 'agent-warning', text: '⚠ ' + (p.text || '') }));
        break;
      case 'memory': { // the earlier turns of its conversation the model is sent
        const dropped = count(p.dropped) || 0;
        const text = 'memory ' + (p.session || '') + ': ' + (count(p.included) ?? 0) + ' earlier turns sent' + (dropped > 0 ? ', ' + dropped + ' older left out' : '');
        n.turnsEl.append(common.el('p', { class: 'agent-memory', text }));
        break;
      }
      case 'repair':
        stepRow(lastTurn(n, ev), 'agent-repair', common.el('span', { class: 'agent-status st-error', text: 'repair ' + (p.attempt ?? '?') + ' of ' + (p.of ?? '?') }), ' ', common.el('span', { class: 'agent-error', text: p.error || '' }));
        break;
    }
    follow();
  }

  // phase tells a node's panel what the node is doing: paused, an agent
  // waits for a person to approve a tool call (the inbox answers it).
  function phase(id, ph) {
    const n = nodes.get(id);
    if (!n) return;
    if (ph === 'paused') {
      n.wait.replaceChildren('Waiting for a person to approve a tool call: answer it in the ', common.el('a', { href: '/inbox', text: 'inbox' }), '.');
      n.wait.hidden = false;
      follow();
    } else {
      n.wait.hidden = true;
    }
  }

  return { apply, phase, nodes };
}
