// Shared set-up of the end-to-end tests: one Chromium for the whole run, a
// fresh page per test that fails the test on any console error, console
// warning or page error.
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BASE = process.env.STUDIO_URL || 'http://127.0.0.1:8080';
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
// Where the tests' screenshots go: docs/screenshots only for `make
// screenshots` (STUDIO_SHOTS set by scripts/e2e.sh --screenshots); a plain
// test run must not touch a tracked file.
export const SHOTS = process.env.STUDIO_SHOTS || join(tmpdir(), 'chain-studio-e2e-shots');
mkdirSync(SHOTS, { recursive: true });

let browser;
export async function launch() {
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  return browser;
}
export async function close() { if (browser) await browser.close(); }

// open returns a page whose console errors and warnings are collected; call done() at the
// end of the test to assert there were none.
export async function open(path, opts = {}) {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, acceptDownloads: true, colorScheme: opts.colorScheme || 'light' });
  await context.addInitScript(exposeEditor);
  const page = await context.newPage();
  const errors = [];
  // a warning is a defect too (Cytoscape reports bad styles as warnings)
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') errors.push('console ' + m.type() + ': ' + m.text()); });
  page.on('pageerror', (e) => errors.push('pageerror: ' + e.message));
  page.on('dialog', (d) => d.accept());
  if (path) await page.goto(BASE + path);
  page.done = async () => {
    await context.close();
    assert.deepEqual(errors, [], 'no console errors, warnings or page errors');
  };
  page.errors = errors;
  return page;
}

// exposeEditor runs in every page the tests open, before the page's own
// scripts: on a designer page it puts the editor's add-on surface (studio,
// exported by the page's instance of js/editor.js: doc, cy, version, edit,
// the timings) on window.__editor for page.evaluate and waitForFunction.
// The editor itself puts nothing on window; the module scripts have all run
// by DOMContentLoaded, so the import finds the page's instance, long before
// the editor is ready (#editor[data-ready="1"]).
function exposeEditor() {
  document.addEventListener('DOMContentLoaded', () => {
    const s = document.querySelector('script[type="module"][src*="/js/editor.js"]');
    if (s) import(s.src).then((m) => { window.__editor = m.studio; });
  });
}

export async function api(method, path, body) {
  // a request that never answers fails its test with its name, rather than
  // holding the whole suite
  const res = await fetch(BASE + path, {
    method,
    headers: body ? { 'Content-Type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(60000),
  }).catch((e) => { throw new Error(`${method} ${path}: ${e.name === 'TimeoutError' ? 'no answer in 60 s' : e.message}`); });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = text; }
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return json;
}

// waitSaved waits until the editor has finished saving (no pending edit).
// loadModule puts the page's instance of one of its ES modules (static/js/NAME.js)
// on window.__modules[NAME], for page.evaluate and waitForFunction.
export async function loadModule(page, name) {
  await page.evaluate(async (n) => {
    const s = document.querySelector('script[type="module"][src*="/js/' + n + '.js"]');
    if (!s) throw new Error('the page does not load js/' + n + '.js');
    window.__modules = window.__modules || {};
    window.__modules[n] = await import(s.src);
  }, name);
}

export async function waitSaved(page) {
  await page.waitForFunction(() => document.getElementById('save-state').dataset.state === 'saved', null, { timeout: 10000 });
}

// nodePos returns a node's position in page coordinates.
export async function nodePos(page, id) {
  return page.evaluate((id) => {
    const cy = window.__editor.cy;
    const p = cy.getElementById(id).renderedPosition();
    const r = cy.container().getBoundingClientRect();
    return { x: r.left + p.x, y: r.top + p.y };
  }, id);
}

export function percentile(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
}

// bigChain makes a chain of n nodes: a spine of tools with branches every 10
// nodes, positions included (as the designer saves them).
export function bigChain(name, n, withPositions = true) {
  const nodes = [];
  const edges = [];
  for (let i = 0; i < n; i++) {
    const id = 'n' + i;
    const node = { node_id: id, kind: 'tool', name: 'echo', label: 'Step ' + i };
    if (withPositions) node.position = { x: (i % 40) * 200, y: Math.floor(i / 40) * 110 };
    nodes.push(node);
    if (i > 0) edges.push({ source: 'n' + (i - 1), target: id });
  }
  return { name, nodes, edges };
}

// ownStudio starts a studio of the test file's own on a fresh database, with
// users added by `studio users add` before it starts ([[name, role], …]); it
// returns its base URL, the users' tokens by role, and stop(). examples
// loads the example chains; agentsDir is its agents folder (default: an
// empty one); args are more `studio serve` flags. It uses STUDIO_BIN
// (scripts/e2e.sh sets it) or builds the studio.
export async function ownStudio(prefix, users, { examples = false, agentsDir = '', args = [] } = {}) {
  const { spawn, execFileSync } = await import('node:child_process');
  const { mkdtempSync, rmSync } = await import('node:fs');
  const dir = mkdtempSync(join(tmpdir(), prefix));
  let bin = process.env.STUDIO_BIN;
  if (!bin) {
    bin = join(dir, 'studio');
    execFileSync('go', ['build', '-o', bin, './cmd/studio'], { cwd: ROOT, stdio: 'inherit' });
  }
  const db = join(dir, 'studio.db');
  const tokens = {};
  for (const [name, role] of users) {
    // the token is stdout's only line; what it is goes to stderr
    tokens[role] = execFileSync(bin, ['users', 'add', name, '--role', role, '--db', db], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  }
  const proc = spawn(bin, ['serve', '--addr', '127.0.0.1:0', '--db', db, '--agents', agentsDir || join(dir, 'none'), ...(examples ? [] : ['--no-examples']), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const base = await new Promise((resolve, reject) => {
    let log = '';
    const seen = (b) => {
      log += b;
      const m = /url=(http:\/\/127\.0\.0\.1:\d+)/.exec(log);
      if (m) resolve(m[1]);
    };
    proc.stdout.on('data', seen);
    proc.stderr.on('data', seen);
    proc.on('exit', (code) => reject(new Error('the studio exited (' + code + '): ' + log)));
    setTimeout(() => reject(new Error('the studio did not start: ' + log)), 15000);
  });
  const stop = () => { proc.kill(); rmSync(dir, { recursive: true, force: true }); };
  return { base, tokens, stop };
}
