// The front end's modules that need no page, run in node: api.js reads the
// API's error envelope into ApiError, patch.js diffs the document against
// the saved copy, undo.js steps back and forth. (The browser tests use them
// on the pages.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '../static/js/api.js';
import { SavedCopy } from '../static/js/patch.js';
import { UndoHistory } from '../static/js/undo.js';

// answering stubs fetch with one answer and records the request.
function answering(status, body, type = 'application/json') {
  const seen = [];
  globalThis.fetch = async (path, init) => {
    seen.push({ path, ...init });
    return new Response(body, { status, headers: { 'Content-Type': type } });
  };
  return seen;
}

test('api.js: a 2xx answer is read, a body is sent as JSON', async () => {
  const seen = answering(200, '{"ok":true}');
  assert.deepEqual(await api.post('/v1/x', { a: 1 }), { ok: true });
  assert.equal(seen[0].method, 'POST');
  assert.equal(seen[0].body, '{"a":1}');
  assert.equal(seen[0].headers['Content-Type'], 'application/json');
  answering(204, null);
  assert.equal(await api.json('DELETE', '/v1/x'), null);
});

test('api.js: the error envelope becomes one ApiError', async () => {
  answering(422, '{"error":{"code":"bad_answer","message":"value: not an object","details":{"field":"/value"}}}');
  const err = await api.get('/v1/x').catch((e) => e);
  assert.ok(err instanceof api.ApiError);
  assert.deepEqual([err.status, err.code, err.message, err.details], [422, 'bad_answer', 'value: not an object', { field: '/value' }]);

  answering(502, '<html>bad gateway</html>', 'text/html');
  const page = await api.html('GET', '/runs/r/controls').catch((e) => e);
  assert.deepEqual([page.status, page.code, page.message, page.body], [502, '', 'The studio answered 502', '<html>bad gateway</html>']);

  globalThis.fetch = async () => { throw new TypeError('Failed to fetch'); };
  const gone = await api.get('/v1/x').catch((e) => e);
  assert.deepEqual([gone.status, gone.code, gone.message], [0, 'unreachable', 'The studio did not answer: Failed to fetch']);
});

test('patch.js: a change is a patch of the node; a reorder sends the whole document', () => {
  const doc = { name: 'c', nodes: [{ node_id: 'a', kind: 'tool' }, { node_id: 'b', kind: 'tool' }], edges: [{ id: 'a->b', source: 'a', target: 'b' }] };
  const saved = new SavedCopy();
  assert.equal(saved.diff(doc), null, 'no copy yet: the whole document');
  saved.fromText(JSON.stringify({ id: 'x', version: 1, doc }), true);
  const edited = structuredClone(doc);
  edited.nodes[1].label = 'B';
  edited.nodes.push({ node_id: 'c', kind: 'tool' });
  edited.edges = [];
  const d = saved.diff(edited);
  assert.deepEqual(d.patch, { expect: { nodes: 3, edges: 0 }, nodes: [edited.nodes[1], edited.nodes[2]], remove_edges: ['a->b'] });
  saved.took(d.next);
  assert.deepEqual(saved.diff(edited).patch, { expect: { nodes: 3, edges: 0 } }, 'nothing changed since');
  const reordered = structuredClone(edited);
  reordered.nodes.reverse();
  assert.equal(saved.diff(reordered), null);
  saved.forget();
  assert.equal(saved.diff(edited), null);
});

test('undo.js: undo and redo walk the edits; a new edit ends redo', () => {
  const h = new UndoHistory();
  assert.equal(h.undo({ v: 0 }), null);
  h.record({ v: 0 });
  h.record({ v: 1 });
  assert.deepEqual(h.undo({ v: 2 }), { v: 1 });
  assert.deepEqual(h.redo({ v: 1 }), { v: 2 });
  assert.deepEqual(h.undo({ v: 2 }), { v: 1 });
  h.record({ v: 1 });
  assert.equal(h.canRedo, false);
  for (let i = 0; i < 300; i++) h.record({ v: i });
  let n = 0;
  while (h.undo({})) n++;
  assert.equal(n, 200, 'at most 200 edits back');
});
