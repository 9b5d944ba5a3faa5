// Browser test of the studio as an MCP client, with a server nobody here
// wrote: an admin registers the reference server
// @modelcontextprotocol/server-everything (npm) over stdio on Settings → MCP
// servers (node is on the studio's --allow-mcp-command list); its tools
// come up in a tool node's Tool list; its echo tool is dropped on the
// canvas, its form drawn from the tool's schema is filled, and the chain
// runs it: the run page shows what the server answered.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { launch, close, open, ownStudio, ROOT, SHOTS, waitSaved } from './lib.mjs';

const script = join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
let studio;

before(async () => {
  await launch();
  studio = await ownStudio('e2e-mcp-', [], { args: ['--allow-mcp-command', 'node'] });
});
after(async () => { if (studio) studio.stop(); await close(); });

test('register an MCP server on the page, drop its echo tool on the canvas, fill its form, run it', async () => {
  assert.ok(existsSync(script), 'server-everything is installed (npm ci)');
  const page = await open();
  await page.goto(studio.base + '/settings/mcp-servers');
  await page.fill('#mcp-name', 'everything');
  await page.selectOption('#mcp-transport', 'stdio');
  await page.fill('#mcp-command', 'node');
  await page.fill('#mcp-args', script + '\nstdio');
  await Promise.all([page.waitForURL(/saved=everything/), page.click('#mcp-save')]);
  // Its status comes once the server has started and listed its tools:
  // the page follows it without a reload.
  await page.waitForFunction(() => {
    const row = document.querySelector('tr[data-mcp-server="everything"]');
    return row && row.dataset.state === 'available' && /available/.test(row.querySelector('.mcp-state').textContent);
  }, null, { timeout: 15000 });
  assert.match(await page.textContent('tr[data-mcp-server="everything"] .mcp-tools'), /[1-9]/, 'the tools count is filled in too');
  await page.screenshot({ path: join(SHOTS, 'mcp-servers.png') });

  // A chain: one tool node from the palette, its tool the server's echo.
  const res = await fetch(studio.base + '/v1/chains', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'mcp echo', nodes: [], edges: [] }) });
  assert.equal(res.status, 201);
  const chain = await res.json();
  await page.goto(studio.base + '/chains/' + chain.id);
  await page.waitForSelector('#editor[data-ready="1"]');
  await page.click('.palette-item[data-kind="tool"]');
  await page.waitForSelector('#props .props[data-target="node"] #tool-select');
  await page.selectOption('#tool-select', 'mcp:everything/echo');
  const field = page.locator('.schema-form[data-f="input"] .sf-field[data-path="input.message"] input');
  await field.waitFor();
  await field.fill('hello from the canvas');
  await waitSaved(page);
  await page.waitForFunction(() => !document.getElementById('btn-run').disabled);
  await page.screenshot({ path: join(SHOTS, 'mcp-tool-node.png') });

  await page.click('#btn-run');
  await page.waitForSelector('#run-dialog[open]');
  await Promise.all([page.waitForURL(/\/runs\//), page.click('#run-submit')]);
  await page.waitForFunction(() => document.getElementById('runpage').dataset.status === 'completed', null, { timeout: 30000 });
  const runID = page.url().split('/runs/')[1];
  const run = await (await fetch(studio.base + '/v1/runs/' + runID)).json();
  assert.match(JSON.stringify(run.final_output), /hello from the canvas/, 'the server echoed the message: ' + JSON.stringify(run.final_output));
  await page.screenshot({ path: join(SHOTS, 'mcp-run.png') });
  await page.done();
});
