// The front end's modules that need no page, run in node: api.js reads the
// API's error envelope into ApiError, patch.js diffs the document against
// the saved copy, undo.js steps back and forth, editor-rename.js renames a
// node. (The browser tests use them on the pages.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '../static/js/api.js';
import { SavedCopy } from '../static/js/patch.js';
import { UndoHistory } from '../static/js/undo.js';
import { idProblem, rename } from '../static/js/editor-rename.js';

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

test('patch.js: the saved copy can be GET /v1/chains/{id}\'s answer, whose doc it diffs', () => {
  const doc = { name: 'c', nodes: [{ node_id: 'a', kind: 'tool', name: 'echo' }], edges: [] };
  const answer = { id: 'x', name: 'c', version: 3, node_count: 1, created: '2026-01-01T00:00:00Z', updated: '2026-01-01T00:00:00Z', doc, issues: [], valid: true };
  const saved = new SavedCopy();
  saved.fromText(JSON.stringify(answer), true);
  assert.deepEqual(saved.diff(structuredClone(doc)).patch, { expect: { nodes: 1, edges: 0 } }, 'the answer\'s fields are not the document\'s');
  const edited = structuredClone(doc);
  edited.nodes[0].label = 'A';
  assert.deepEqual(saved.diff(edited).patch, { expect: { nodes: 1, edges: 0 }, nodes: [edited.nodes[0]] });
});

test('editor-rename.js: a rename follows edges, automatic edge ids, owners and expressions', () => {
  const doc = {
    name: 'c', entry_node: 'a',
    nodes: [
      { node_id: 'a', kind: 'tool' },
      { node_id: 'm', kind: 'map', map_node: 'a', items_path: 'a.output.items' },
      { node_id: 'b', kind: 'tool', input_map: { x: 'a.output.v', y: 'node_results.a.output', z: 'data.output' } },
    ],
    edges: [{ id: 'a->b', source: 'a', target: 'b', condition: 'a.output.ok' }, { id: 'mine', source: 'a', target: 'm' }],
  };
  assert.match(idProblem(doc, 'b', 'a'), /already has the id/);
  assert.match(idProblem(doc, 'input', 'a'), /reserved/);
  assert.equal(idProblem(doc, 'fetch', 'a'), '');
  rename(doc, 'a', 'fetch');
  assert.equal(doc.entry_node, 'fetch');
  assert.deepEqual(doc.edges.map((e) => [e.id, e.source, e.target, e.condition]), [['fetch->b', 'fetch', 'b', 'fetch.output.ok'], ['mine', 'fetch', 'm', undefined]]);
  assert.equal(doc.nodes[1].map_node, 'fetch');
  assert.equal(doc.nodes[1].items_path, 'fetch.output.items');
  assert.deepEqual(doc.nodes[2].input_map, { x: 'fetch.output.v', y: 'node_results.fetch.output', z: 'data.output' });
});

test('editor-rename.js: a renamed node keeps its pinned output', () => {
  const doc = { nodes: [{ node_id: 'a', kind: 'tool' }, { node_id: 'b', kind: 'tool' }], edges: [{ id: 'a->b', source: 'a', target: 'b' }], pinned_outputs: { a: { x: 1 }, b: 2 } };
  rename(doc, 'a', 'fetch');
  assert.deepEqual(doc.pinned_outputs, { fetch: { x: 1 }, b: 2 });
});
