// Accessibility: axe-core (WCAG 2.0/2.1/2.2 A and AA rules) finds no violation
// on any page, in the light and in the dark theme. axe-core is a
// devDependency injected here only; it is never shipped in static/.
//
// To cover a new page, add it to PAGES: `path` is a string, or a function of
// the fixtures made in before() (chain, runs, agent) returning the path;
// `ready` is a selector the page shows once it has drawn, and `act` a
// function of the page run before the check, e.g. to open a dialog (both
// optional).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BASE, launch, close, open, api } from './lib.mjs';

export const PAGES = [
  { name: 'chains list', path: '/', ready: '#chain-rows tr[data-chain-id]' },
  { name: 'chains list, New chain dialog', path: '/', ready: '#chain-rows tr[data-chain-id]', act: openDialog('#new-chain', '#new-dialog') },
  { name: 'chains list, Import dialog', path: '/', ready: '#chain-rows tr[data-chain-id]', act: openDialog('#open-import', '#import-dialog') },
  { name: 'editor', path: (f) => '/chains/' + f.chain, ready: '#editor[data-ready="1"]' },
  { name: 'editor, Run dialog', path: (f) => '/chains/' + f.chain, ready: '#editor[data-ready="1"]', act: openDialog('#btn-run', '#run-dialog') },
  { name: 'editor, Save version dialog', path: (f) => '/chains/' + f.chain, ready: '#editor[data-ready="1"]', act: openDialog('#btn-save-version', '#save-version-dialog') },
  { name: 'editor, Publish dialog', path: (f) => '/chains/' + f.chain, ready: '#editor[data-ready="1"]', act: openDialog('#btn-publish', '#publish-dialog') },
  { name: 'versions', path: (f) => '/chains/' + f.chain + '/versions' },
  { name: 'versions with a diff', path: (f) => '/chains/' + f.chain + '/versions?v=1', ready: '#versions[data-ready="1"]' },
  { name: 'runs of a chain', path: (f) => '/chains/' + f.chain + '/runs' },
  { name: 'run completed', path: (f) => '/runs/' + f.completed, ready: '.runpage' },
  { name: 'run failed', path: (f) => '/runs/' + f.failed, ready: '.runpage' },
  { name: 'run paused', path: (f) => '/runs/' + f.paused, ready: '.runpage .approval, .runpage .resume' },
  { name: 'run failed, node drawer', path: (f) => '/runs/' + f.failed, ready: '.runpage', act: async (page) => { await page.click('#node-table .select-node[data-node-id="boom"]'); await page.waitForSelector('#btn-rerun'); } },
  { name: 'run failed, Re-run dialog', path: (f) => '/runs/' + f.failed, ready: '.runpage', act: async (page) => { await page.click('#node-table .select-node[data-node-id="boom"]'); await openDialog('#btn-rerun', '#rerun-dialog')(page); } },
  { name: 'run completed, a done row selected', path: (f) => '/runs/' + f.completed, ready: '.runpage', act: async (page) => { await page.click('#node-table .select-node[data-node-id="read"]'); await page.waitForSelector('#node-table tr[data-node-id="read"][aria-selected="true"]'); } },
  { name: 'run diff', path: (f) => (f.other ? '/runs/' + f.completed + '/diff/' + f.other : null), ready: '#rundiff' },
  { name: 'editor, condition node properties', path: (f) => '/chains/' + f.condChain, ready: '#editor[data-ready="1"]', act: async (page) => { await page.click('#node-table .select-node[data-node-id="route"]'); await page.waitForSelector('.props[data-id="route"] fieldset.cases'); } },
  { name: 'editor, node view', path: (f) => '/chains/' + f.codeChain, ready: '#editor[data-ready="1"]', act: async (page) => { await page.click('#node-table .select-node[data-node-id="js"]'); await page.click('.props[data-id="js"] [data-open-node-view]'); await page.waitForSelector('#node-view[data-filled="js"] .props[data-id="js"] .cm-editor'); } },
  { name: 'editor, code node script editor', path: (f) => '/chains/' + f.codeChain, ready: '#editor[data-ready="1"]', act: async (page) => { await page.click('#node-table .select-node[data-node-id="js"]'); await page.waitForSelector('.props[data-id="js"] .sf-code .cm-editor'); } },
  { name: 'runs list', path: '/runs' },
  { name: 'inbox', path: '/inbox', ready: '#inbox' },
  { name: 'inbox, modify form open', path: (f) => '/inbox?run=' + f.paused, ready: '.inbox-item', act: async (page) => { await page.click('.ib-modify > summary'); await page.waitForSelector('.ib-modify[open] fieldset.schema-form'); } },
  { name: 'agents list', path: '/agents' },
  { name: 'model usage', path: '/usage' },
  { name: 'credentials', path: '/settings/credentials', ready: '#credential-form' },
  { name: 'MCP servers', path: '/settings/mcp-servers', ready: '#mcp-form' },
  { name: 'agent', path: (f) => (f.agent ? '/agents/' + encodeURIComponent(f.agent) : null) },
  { name: 'model agent', path: (f) => (f.modelAgent ? '/agents/' + encodeURIComponent(f.modelAgent) : null), ready: '#agent-model' },
  { name: 'login', path: '/login' },
  // The login page exists only when a token is set: a second studio, with
  // one, serves it (STUDIO_BIN, set by scripts/e2e.sh).
  { name: 'login (token set)', path: (f) => f.loginURL || null, optional: !process.env.STUDIO_BIN },
];
export const THEMES = ['light', 'dark'];

// openDialog clicks button and waits for dialog to be open.
function openDialog(button, dialog) {
  return async (page) => {
    await page.click(button);
    await page.waitForSelector(dialog + '[open]');
  };
}
const TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'];

const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const fixtures = {};

async function waitRun(id, want) {
  for (let i = 0; i < 200; i++) {
    const r = await api('GET', '/v1/runs/' + id);
    if (want.includes(r.status)) return r;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail('run ' + id + ' did not reach ' + want.join('/'));
}

async function chainByName(name) {
  const list = await api('GET', '/v1/chains?q=' + encodeURIComponent(name));
  return list.chains.find((c) => c.name === name);
}

before(async () => {
  await launch();
  // A chain with history: autosaves, a named version, a diff with values.
  const doc = {
    name: 'a11y chain ' + Date.now(),
    description: 'checks x > 1 && y < 2',
    nodes: [
      { node_id: 'read', kind: 'tool', name: 'echo', input_map: { x: 'input.x' }, position: { x: 0, y: 0 } },
      { node_id: 'check', kind: 'branch', condition: 'read.output.x > `1`', position: { x: 220, y: 0 } },
      { node_id: 'yes', kind: 'tool', name: 'echo', position: { x: 440, y: -60 } },
      { node_id: 'no', kind: 'tool', name: 'echo', position: { x: 440, y: 60 } },
    ],
    edges: [{ source: 'read', target: 'check' }, { source: 'check', target: 'yes', label: 'true' }, { source: 'check', target: 'no', label: 'false' }],
  };
  const ch = await api('POST', '/v1/chains', doc);
  fixtures.chain = ch.id;
  doc.nodes[0].input_map.x = 'input.y || input.x';
  await api('PUT', '/v1/chains/' + ch.id + '?version=1', doc);
  await api('POST', '/v1/chains/' + ch.id + '/versions', { message: 'Reviewed <ok>' });
  await api('POST', '/v1/chains/' + ch.id + '/publish', { message: 'Reviewed <ok>' }); // runs by id run the published version
  const done = await api('POST', '/v1/chains/' + ch.id + '/runs', { input: { x: 3 } });
  fixtures.completed = done.run_id;
  await waitRun(done.run_id, ['completed']);
  // a second run, another input and branch: the run diff page compares them
  const other = await api('POST', '/v1/chains/' + ch.id + '/runs', { input: { x: 0 } });
  await waitRun(other.run_id, ['completed']);
  fixtures.other = other.run_id;
  const cond = await api('POST', '/v1/chains', {
    name: 'a11y condition ' + Date.now(),
    nodes: [
      { node_id: 'route', kind: 'condition', cases: [{ handle: 'big', when: 'input.x > `1`' }], position: { x: 0, y: 0 } },
      { node_id: 'big', kind: 'tool', name: 'echo', position: { x: 220, y: -60 } },
      { node_id: 'small', kind: 'tool', name: 'echo', position: { x: 220, y: 60 } },
    ],
    edges: [{ source: 'route', target: 'big', label: 'big' }, { source: 'route', target: 'small', label: 'default' }],
  });
  fixtures.condChain = cond.id;
  const code = await api('POST', '/v1/chains', {
    name: 'a11y code ' + Date.now(),
    nodes: [{ node_id: 'js', kind: 'tool', name: 'code', input: { code: "console.log('hi')\nreturn {n: input.n + 1}" }, position: { x: 0, y: 0 } }],
  });
  fixtures.codeChain = code.id;

  const failing = await api('POST', '/v1/chains', {
    name: 'a11y failing ' + Date.now(),
    nodes: [{ node_id: 'boom', kind: 'tool', name: 'fail', input: { message: 'broken on purpose' } }],
  });
  const failed = await api('POST', '/v1/chains/' + failing.id + '/runs', {});
  fixtures.failed = failed.run_id;
  await waitRun(failed.run_id, ['failed']);

  const approval = await chainByName('approval');
  const paused = await api('POST', '/v1/chains/' + approval.id + '/runs', { input: {} });
  fixtures.paused = paused.run_id;
  await waitRun(paused.run_id, ['paused']);

  if (process.env.STUDIO_BIN) fixtures.loginURL = (await startTokenStudio()) + '/login';

  const agents = await api('GET', '/v1/agents');
  fixtures.agent = (agents.agents || []).map((a) => a.name).find((n) => n) || '';
  fixtures.modelAgent = (agents.agents || []).find((a) => a.kind === 'model')?.name || '';
});
after(async () => {
  await close();
  if (tokenStudio) { tokenStudio.kill(); rmSync(tokenStudio.dir, { recursive: true, force: true }); }
});

let tokenStudio = null;
// startTokenStudio runs a studio that needs a token, on a loopback port, and
// returns its base URL.
async function startTokenStudio() {
  const dir = mkdtempSync(join(tmpdir(), 'studio-a11y-'));
  const proc = spawn(process.env.STUDIO_BIN, ['serve', '--addr', '127.0.0.1:0', '--db', join(dir, 'a.db'), '--token', 'a11y-test-token-0123'], { stdio: ['ignore', 'pipe', 'pipe'] });
  proc.dir = dir;
  tokenStudio = proc;
  let log = '';
  return new Promise((resolve, reject) => {
    const seen = (b) => {
      log += b;
      const m = /url=(http:\/\/127\.0\.0\.1:\d+)/.exec(log);
      if (m) resolve(m[1]);
    };
    proc.stdout.on('data', seen);
    proc.stderr.on('data', seen);
    proc.on('exit', (code) => reject(new Error('the token studio exited (' + code + '): ' + log)));
    setTimeout(() => reject(new Error('the token studio did not start: ' + log)), 10000);
  });
}

// violations runs axe on the page as it is and returns one line per
// offending element.
async function violations(page) {
  // Evaluated through the DevTools protocol: the page's CSP (script-src
  // 'self') would refuse an injected <script>, rightly.
  if (!(await page.evaluate(() => !!window.axe))) await page.evaluate(AXE + '\n;void 0');
  const res = await page.evaluate(async (tags) => {
    // eslint-disable-next-line no-undef
    // asked for by name: label-content-name-mismatch (WCAG 2.5.3, label in
    // name) is experimental, empty-table-header (a header cell a screen
    // reader reads as nothing) is tagged best practice
    const r = await axe.run(document, { runOnly: { type: 'tag', values: tags }, rules: { 'label-content-name-mismatch': { enabled: true }, 'empty-table-header': { enabled: true } }, resultTypes: ['violations'] });
    return r.violations.map((v) => ({ id: v.id, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ') + ': ' + (n.failureSummary || '').replace(/\s+/g, ' ').slice(0, 240)) }));
  }, TAGS);
  const out = [];
  for (const v of res) for (const n of v.nodes) out.push(`${v.id} (${v.help}) at ${n}`);
  return out;
}

for (const theme of THEMES) {
  test(`axe finds no WCAG A/AA violation on any page, ${theme} theme`, async () => {
    const found = [];
    const visited = [];
    for (const p of PAGES) {
      const path = typeof p.path === 'function' ? p.path(fixtures) : p.path;
      if (!path) {
        if (!p.optional) found.push(`${p.name}: could not be visited (no fixture)`);
        continue;
      }
      const page = await open(null, { colorScheme: theme });
      await page.addInitScript((t) => localStorage.setItem('studio-theme', t), theme);
      const res = await page.goto(new URL(path, BASE).href);
      // Without a token the studio has no login: /login redirects home.
      if (p.name === 'login' && !new URL(page.url()).pathname.startsWith('/login')) { visited.push('login (redirected: no token set)'); await page.done(); continue; }
      assert.ok(res.ok(), `${p.name} ${path}: HTTP ${res.status()}`);
      if (p.ready) await page.waitForSelector(p.ready, { timeout: 15000 });
      await page.waitForLoadState('networkidle');
      if (p.act) await p.act(page);
      assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), theme, 'the theme is applied');
      for (const v of await violations(page)) found.push(`${p.name} (${path}): ${v}`);
      // Only status regions are live: a live panel (properties, node
      // details) would read its whole content out at every change.
      const live = await page.$$eval('[aria-live]', (els) => els.filter((e) => e.getAttribute('role') !== 'status').map((e) => e.id || e.className || e.tagName));
      for (const l of live) found.push(`${p.name} (${path}): aria-live on ${l}, which is not the status region`);
      visited.push(p.name);
      await page.done();
    }
    assert.equal(found.length, 0, `${found.length} accessibility violations (${theme}):\n` + found.join('\n'));
    assert.ok(visited.length >= PAGES.filter((p) => !p.optional).length, 'pages visited: ' + visited.join(', '));
  });
}
