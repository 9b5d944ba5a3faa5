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

export async function api(method, path, body) {
  const res = await fetch(BASE + path, {
    method,
    headers: body ? { 'Content-Type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = text; }
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return json;
}

// waitSaved waits until the editor has finished saving (no pending edit).
export async function waitSaved(page) {
  await page.waitForFunction(() => document.getElementById('save-state').dataset.state === 'saved', null, { timeout: 10000 });
}

// nodePos returns a node's position in page coordinates.
export async function nodePos(page, id) {
  return page.evaluate((id) => {
    const cy = window.__studio.cy;
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
