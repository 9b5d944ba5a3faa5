// The API document (web/openapi.json) as clients use it: it lints with no
// warning (redocly, recommended-strict), a client generated from it
// (openapi-typescript + openapi-fetch) type-checks under `tsc --strict` in a
// program that calls every operation without a cast (e2e/client/client.ts),
// and that program runs against the live studio, reading every answer through
// its generated type. The Go tests check every response they see against the
// same document (web/openapi_check_test.go).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BASE, ROOT } from './lib.mjs';

const bin = (name) => join(ROOT, 'node_modules', '.bin', name);
const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };
const run = (cmd, args) => execFileSync(cmd, args, { cwd: ROOT, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
const doc = JSON.parse(readFileSync(join(ROOT, 'web', 'openapi.json'), 'utf8'));
const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
  Object.keys(item).filter((m) => ['get', 'put', 'post', 'delete', 'patch'].includes(m)).map((m) => `${m.toUpperCase()} ${path}`)).sort();
const clientDir = join(ROOT, 'e2e', 'client');
const outFile = join(ROOT, 'node_modules', '.cache', 'studio-client', 'client.js');

test('the OpenAPI document lints with no error or warning', () => {
  let out;
  try {
    out = run(bin('redocly'), ['lint', 'web/openapi.json', '--format=json']);
  } catch (e) {
    out = e.stdout; // a failed lint still prints its report
  }
  const report = JSON.parse(out.slice(out.indexOf('{')));
  const problems = report.problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location?.[0]?.pointer}`);
  assert.deepEqual(problems, [], 'redocly lint problems');
  assert.equal(report.totals.errors + report.totals.warnings, 0);
});

test('a client generated from the document type-checks with --strict, covering every operation without a cast', () => {
  run(bin('openapi-typescript'), ['web/openapi.json', '-c', join(clientDir, 'redocly.yaml'), '-o', join(clientDir, 'generated', 'openapi.d.ts'), '--silent']);
  try {
    run(bin('tsc'), ['-p', join(clientDir, 'tsconfig.json')]);
  } catch (e) {
    assert.fail(`tsc --strict:\n${e.stdout}${e.stderr}`);
  }
  const src = readFileSync(join(clientDir, 'client.ts'), 'utf8');
  const code = src.replace(/\/\/.*$/gm, '').replace(/"(?:[^"\\]|\\.)*"/g, '""');
  for (const [what, re] of [['an `as` cast', /\bas\s+(?!const\b)[A-Za-z{[(]/], ['a non-null assertion', /[\w)\]]!(?=[.[(])/],
    ['any', /\bany\b/], ['a @ts- directive', /@ts-/], ['an angle-bracket cast', /(?:[=(,:?]|\breturn)\s*<[A-Z]\w*>\s*[\w(]/]]) {
    assert.doesNotMatch(code, re, `client.ts uses ${what}`);
  }
  const noted = [...src.matchAll(/note\("([A-Z]+ [^"]+)"\)/g)].map((m) => m[1]).sort();
  assert.deepEqual([...new Set(noted)], operations, 'client.ts must call every operation of the document, and only those');
});

test('the generated client drives every operation of the live studio and reads every answer', async () => {
  const { exercise } = await import(pathToFileURL(outFile).href);
  const called = await exercise(BASE, Date.now().toString(36));
  assert.deepEqual([...new Set(called)].sort(), operations);
});
