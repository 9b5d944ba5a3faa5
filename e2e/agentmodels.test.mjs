// A model agent's page: where its calls go, and the models its server
// offers, listed from a fake OpenAI-compatible server on loopback (so the
// studio runs with --model-allow-private). Keyboard only.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, close, open, ownStudio, SHOTS } from './lib.mjs';

let studio, fake, agentsDir;

before(async () => {
  fake = createServer((req, res) => {
    res.setHeader('Content-Type', 'application/json');
    if (req.method === 'GET' && req.url === '/v1/models') {
      res.end(JSON.stringify({ object: 'list', data: [{ id: 'llama3.1:latest', object: 'model' }, { id: 'qwen2.5:7b', object: 'model' }] }));
      return;
    }
    if (req.method === 'GET' && req.url === '/down/v1/models') {
      res.statusCode = 503;
      res.end(JSON.stringify({ error: { message: 'the model is loading' } }));
      return;
    }
    res.statusCode = 404;
    res.end('{"error":"not found"}');
  });
  await new Promise((resolve) => fake.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${fake.address().port}`;
  agentsDir = mkdtempSync(join(tmpdir(), 'studio-agentmodels-'));
  writeFileSync(join(agentsDir, 'summary.agent.yaml'), `name: summary\ndescription: Summarises a lead on a local model\nmodel: {url: '${url}/v1', name: llama3.1}\nprompt: "Lead: {{ query }}"\n`);
  writeFileSync(join(agentsDir, 'other.agent.yaml'), `name: other\nmodel: {url: '${url}/v1', name: mistral}\n`);
  writeFileSync(join(agentsDir, 'down.agent.yaml'), `name: down\nmodel: {url: '${url}/down/v1', name: llama3.1}\n`);
  await launch();
  studio = await ownStudio('studio-agentmodels-', [], { agentsDir, args: ['--model-allow-private'] });
});
after(async () => {
  await close();
  if (studio) studio.stop();
  if (fake) fake.close();
  if (agentsDir) rmSync(agentsDir, { recursive: true, force: true });
});

async function listModels(name) {
  const page = await open(null);
  await page.goto(studio.base + '/agents/' + name);
  const button = page.getByRole('button', { name: 'List models' });
  await button.focus();
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => ['yes', 'no', 'error'].includes(document.getElementById('agent-model').dataset.listed));
  return page;
}

test('a model agent lists its server\'s models, marking its own', async () => {
  const page = await listModels('summary');
  const section = page.locator('#agent-model');
  assert.match(await section.innerText(), /Provider\s+openai/);
  assert.match(await section.innerText(), new RegExp(`URL\\s+http://127\\.0\\.0\\.1:${fake.address().port}/v1`));
  const items = page.locator('#models-list li');
  assert.equal(await items.count(), 2);
  assert.match(await page.locator('#models-list li.is-mine').innerText(), /llama3\.1:latest/);
  assert.match(await page.locator('#models-status').innerText(), /2 models; the server serves llama3\.1/);
  assert.equal(await page.locator('#models-error').innerText(), '');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'list-models', 'the focus stays on the button');
  await page.screenshot({ path: join(SHOTS, 'agent-models.png'), fullPage: true });
  await page.done();
});

test('a model the server does not serve is said in the alert region', async () => {
  const page = await listModels('other');
  assert.match(await page.getByRole('alert').filter({ hasText: 'mistral' }).innerText(), /does not list mistral/);
  assert.equal(await page.locator('#models-list li.is-mine').count(), 0);
  await page.done();
});

test('a failing server\'s words are shown in the alert region', async () => {
  const page = await listModels('down');
  const alert = await page.locator('#models-error').innerText();
  assert.match(alert, /model llama3\.1 at http:\/\/127\.0\.0\.1:\d+\/down\/v1\/models: .*503.*the model is loading/);
  assert.equal(await page.locator('#models-list').isHidden(), true);
  await page.screenshot({ path: join(SHOTS, 'agent-models-error.png'), fullPage: true });
  // The console error is the failed fetch itself (a 502), which the page shows.
  page.errors.splice(0, page.errors.length, ...page.errors.filter((e) => !/502/.test(e)));
  await page.done();
});
