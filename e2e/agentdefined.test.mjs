// An agent built in the designer, with no file and no restart: an agent
// node left on "defined in this node" gets the agent's form; the credential
// picker offers only the types the provider takes, the model's name field
// offers what the server's /models lists, a tool is added with a fixed
// input; the chain validates, runs against a fake OpenAI-compatible server
// on loopback (its own studio, started with --model-allow-private) and the
// run page shows the streamed answer and the tool's row. At 1400×900, keyboard
// where a person would type; axe on the form.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { launch, close, open, ownStudio, ROOT, SHOTS } from './lib.mjs';

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
async function violations(page) {
  if (!(await page.evaluate(() => !!window.axe))) await page.evaluate(AXE + '\n;void 0');
  return page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] }, resultTypes: ['violations'] });
    return r.violations.flatMap((v) => v.nodes.map((n) => v.id + ' at ' + n.target.join(' ')));
  });
}

let studio, base, fake;

// fakeModels is an OpenAI-compatible server on 127.0.0.1:0: GET /v1/models
// lists two models; a chat turn without a tool result streams a few words
// and a call of the first tool offered, one after a tool result streams the
// answer. Every request body is kept.
async function fakeModels() {
  const bodies = [];
  const chunk = (choices, extra = {}) => 'data: ' + JSON.stringify({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1764633600, model: 'fake-model', choices, ...extra }) + '\n\n';
  const delta = (d, finish = null) => chunk([{ index: 0, delta: d, finish_reason: finish }]);
  const server = createServer(async (req, res) => {
    let raw = '';
    for await (const b of req) raw += b;
    if (req.method === 'GET' && req.url === '/v1/models') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: [{ id: 'fake-model', object: 'model' }, { id: 'fake-model-large', object: 'model' }] }));
      return;
    }
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') { res.writeHead(404).end('{}'); return; }
    const body = JSON.parse(raw);
    bodies.push(body);
    const msgs = body.messages || [];
    // each offered tool is called once, in order, then the answer: its
    // arguments fill every string property the tool asks for
    const answered = msgs.filter((m) => m.role === 'tool').length;
    const next = body.tools && body.tools[answered] && body.tools[answered].function;
    const tool = next && next.name;
    const props = (next && next.parameters && next.parameters.properties) || {};
    const args = Object.keys(props).length ? Object.fromEntries(Object.keys(props).filter((k) => props[k].type === 'string').map((k) => [k, 'hi Ada'])) : { data: 'hi Ada' };
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
    res.write(delta({ role: 'assistant', content: '' }));
    if (!tool) {
      for (const w of ['Ada ', 'is ', 'greeted.']) res.write(delta({ content: w }));
      res.write(delta({}, 'stop'));
    } else {
      res.write(delta({ content: 'Greeting first. ' }));
      res.write(delta({ tool_calls: [{ index: 0, id: 'call_' + (answered + 1), type: 'function', function: { name: tool, arguments: JSON.stringify(args) } }] }));
      res.write(delta({}, 'tool_calls'));
    }
    res.write(chunk([], { usage: { prompt_tokens: 21, completion_tokens: 9, total_tokens: 30 } }));
    res.end('data: [DONE]\n\n');
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}/v1`, bodies, stop: () => server.close() };
}

before(async () => {
  await launch();
  fake = await fakeModels();
  studio = await ownStudio('studio-defined-', [], { args: ['--model-allow-private', '--allow-mcp-command', 'node'] });
  ({ base } = studio);
});
after(async () => {
  await close();
  if (studio) studio.stop();
  if (fake) fake.stop();
});

async function call(method, path, body) {
  const res = await fetch(base + path, { method, headers: body ? { 'Content-Type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = text; }
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return json;
}

test('an agent defined in its node: credential and model picked, a tool with a fixed input, run with its answer streamed', async () => {
  // a key for the fake (a server speaking OpenAI's API), and one the openai provider cannot use
  await call('POST', '/v1/credentials', { name: 'local-llm', type: 'openai_compatible', fields: { base_url: fake.url, api_key: 'sk-local' } });
  await call('POST', '/v1/credentials', { name: 'claude', type: 'anthropic', fields: { api_key: 'sk-ant' } });
  const ch = await call('POST', '/v1/chains', {
    name: 'defined-agent',
    sample_input: { name: 'Ada' },
    nodes: [{ node_id: 'greet', kind: 'agent', label: 'Greet', input_map: { query: 'input.name' }, position: { x: 0, y: 0 } }],
  });

  const page = await open('');
  await page.setViewportSize({ width: 1400, height: 900 });
  await page.goto(base + '/chains/' + ch.id);
  await page.waitForFunction(() => document.getElementById('editor').dataset.ready === '1');
  await page.click('#node-table button.select-node[data-node-id="greet"]');
  const form = '.props[data-id="greet"] fieldset.schema-form[data-f="config"]';
  await page.waitForSelector(form + ' .sf-credential');
  assert.match(await page.textContent('.props[data-id="greet"] #agent-select'), /defined in this node/);

  // the credential picker offers the openai provider's types only
  await page.waitForFunction((f) => document.querySelector(f + ' .sf-credential').options.length > 1, form);
  const offered = await page.$$eval(form + ' .sf-credential option', (os) => os.map((o) => o.value).filter(Boolean));
  assert.deepEqual(offered, ['local-llm'], 'an anthropic key is not offered for an openai model');
  await page.selectOption(form + ' .sf-credential', 'local-llm');

  // the model's name: the server's list is offered as the field gets the focus
  const nameField = await page.$(form + ' input[list$="-models"]');
  await nameField.focus();
  await page.waitForFunction((f) => /2 models listed/.test(document.querySelector(f + ' .sf-models').textContent), form);
  assert.deepEqual(await page.$$eval(form + ' datalist option', (os) => os.map((o) => o.value)), ['fake-model', 'fake-model-large']);
  // a model the server does not list is said as the field is left
  await page.keyboard.type('fake-modle', { delay: 10 });
  await page.keyboard.press('Tab');
  const modelErr = nameField.evaluateHandle((i) => i.closest('.sf-field').querySelector('.sf-err'));
  await page.waitForFunction((e) => /fake-modle is not among the 2 models the server lists/.test(e.textContent), await modelErr);
  assert.equal(await nameField.getAttribute('aria-invalid'), 'true');
  await nameField.fill('');
  await nameField.focus();
  await page.keyboard.type('fake-model', { delay: 10 });
  await page.waitForFunction((e) => e.textContent === '', await modelErr);

  // the prompts, typed
  const prompt = page.locator(form + ' textarea').nth(1);
  await page.locator(form + ' textarea').first().fill('You greet people.');
  await prompt.fill('Greet {{ query }}');

  // the output schema is JSON text: a half-typed one says so and is not kept
  await page.fill(form + ' textarea.sf-json', '{"type": ');
  await page.waitForFunction((f) => /not JSON yet/.test(document.querySelector(f + ' textarea.sf-json').closest('.sf-field').textContent), form);
  await page.fill(form + ' textarea.sf-json', '');

  // a tool: transform, its expression fixed (the model gives data only)
  // each tool is a form of its own: the tool picked from the studio's,
  // its name and description for the model, its fixed input as JSON
  await page.click(form + ' button.sf-add[aria-label="Add item to tools"]');
  const tool = page.locator(form + ' .sf-item-object').first();
  assert.equal(await tool.locator('legend').textContent(), 'tools 1');
  assert.ok(await tool.locator('input').first().evaluate((i) => i === document.activeElement), 'the new tool\'s first field has the focus');
  const toolList = await tool.locator('input').first().getAttribute('list');
  await page.waitForFunction((id) => document.getElementById(id)?.querySelector('option[value="transform"]'), toolList);
  await page.keyboard.type('transform', { delay: 5 });
  await tool.locator('.sf-field[data-path$="name"] input').fill('say');
  await tool.locator('.sf-field[data-path$="description"] input').fill('Says it back.');
  await tool.locator('.sf-field[data-path$="input"] textarea').fill('{"expression": "@"}');
  await page.keyboard.press('Tab');
  await page.screenshot({ path: join(SHOTS, 'agent-defined-form.png') });
  assert.deepEqual(await violations(page), [], 'the agent form passes axe');

  // saved in the draft: the config is the agent, and it validates
  let saved;
  for (let i = 0; i < 100; i++) {
    await page.waitForFunction(() => document.getElementById('save-state').dataset.state === 'saved', null, { timeout: 10000 });
    saved = await call('GET', '/v1/chains/' + ch.id);
    const cfg = saved.doc.nodes[0].config || {};
    if (cfg.model && cfg.model.name === 'fake-model' && cfg.prompt && cfg.tools) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const cfg = saved.doc.nodes[0].config;
  assert.deepEqual(cfg.model, { credential: 'local-llm', name: 'fake-model' });
  assert.equal(cfg.system_prompt, 'You greet people.');
  assert.equal(cfg.prompt, 'Greet {{ query }}');
  assert.deepEqual(cfg.tools, [{ tool: 'transform', name: 'say', description: 'Says it back.', input: { expression: '@' } }]);
  assert.equal(cfg.output_schema, undefined, 'a schema that never parsed is not saved');
  assert.deepEqual(saved.issues.filter((i) => i.severity === 'error'), [], 'the defined agent validates');

  // run the draft; the run page shows the answer streamed and the tool's row
  const r = await call('POST', '/v1/chains/' + ch.id + '/runs', { input: { name: 'Ada' }, version: 'draft' });
  await page.goto(base + '/runs/' + r.run_id);
  await page.waitForFunction(() => /completed/.test((document.querySelector('.runpage .status') || {}).textContent || ''), null, { timeout: 20000 });
  const run = await call('GET', '/v1/runs/' + r.run_id);
  assert.equal(run.status, 'completed', JSON.stringify(run.error));
  assert.equal(run.final_output.answer, 'Ada is greeted.');
  await page.click('#node-table .select-node[data-node-id="greet"]');
  await page.waitForFunction(() => /say/.test(document.getElementById('drawer').textContent) && /Ada is greeted/.test(document.getElementById('drawer').textContent));
  await page.screenshot({ path: join(SHOTS, 'agent-defined-run.png') });

  // what the model was sent: the system prompt, the rendered prompt, the tool without its fixed input
  const first = fake.bodies[0];
  assert.equal(first.model, 'fake-model');
  assert.equal(first.messages[0].content, 'You greet people.');
  assert.equal(first.messages[1].content, 'Greet Ada');
  assert.equal(first.tools[0].function.name, 'say');
  assert.equal(first.tools[0].function.parameters.properties.expression, undefined, 'the fixed input is hidden from the model');
  await page.done();
});

test('save a node\'s agent as a reusable agent, then use it in a second chain', async () => {
  const config = { model: { credential: 'local-llm', name: 'fake-model' }, system_prompt: 'You greet people.', prompt: 'Greet {{ query }}' };
  const first = await call('POST', '/v1/chains', {
    name: 'saves-an-agent', sample_input: { name: 'Ada' },
    nodes: [{ node_id: 'greet', kind: 'agent', label: 'Greet', input_map: { query: 'input.name' }, config, position: { x: 0, y: 0 } }],
  });
  const page = await open('');
  await page.setViewportSize({ width: 1400, height: 900 });
  await page.goto(base + '/chains/' + first.id);
  await page.waitForFunction(() => document.getElementById('editor').dataset.ready === '1');
  await page.click('#node-table button.select-node[data-node-id="greet"]');
  await page.waitForSelector('.props[data-id="greet"] #save-agent');
  // by keyboard: open the block, name the agent, save
  await page.focus('#save-agent summary');
  await page.keyboard.press('Enter');
  await page.fill('#save-agent-name', 'greeter');
  await page.focus('#save-agent-description');
  await page.keyboard.type('Greets people by name.');
  await page.screenshot({ path: join(SHOTS, 'agent-save-as.png') });
  await page.focus('#save-agent-button');
  await page.keyboard.press('Enter');
  // the node now names the stored agent, and the draft is saved so
  await page.waitForFunction(() => document.querySelector('.props[data-id="greet"] #agent-select')?.value === 'greeter');
  let saved;
  for (let i = 0; i < 100; i++) {
    await page.waitForFunction(() => document.getElementById('save-state').dataset.state === 'saved', null, { timeout: 10000 });
    saved = await call('GET', '/v1/chains/' + first.id);
    if (saved.doc.nodes[0].name === 'greeter') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(saved.doc.nodes[0].name, 'greeter');
  assert.deepEqual(saved.issues.filter((i) => i.severity === 'error'), [], 'the node naming the stored agent validates');
  const stored = await call('GET', '/v1/agents/greeter');
  assert.equal(stored.agent.source, 'store');
  assert.equal(stored.agent.version, 1);
  assert.equal(stored.stored.description, 'Greets people by name.');

  // a second chain picks it from the Agents list and runs it
  const second = await call('POST', '/v1/chains', {
    name: 'uses-an-agent', sample_input: { name: 'Grace' },
    nodes: [{ node_id: 'hello', kind: 'agent', label: 'Hello', input_map: { query: 'input.name' }, position: { x: 0, y: 0 } }],
  });
  await page.goto(base + '/chains/' + second.id);
  await page.waitForFunction(() => document.getElementById('editor').dataset.ready === '1');
  await page.click('#node-table button.select-node[data-node-id="hello"]');
  await page.waitForSelector('.props[data-id="hello"] #agent-select');
  await page.selectOption('.props[data-id="hello"] #agent-select', 'greeter');
  for (let i = 0; i < 100; i++) {
    await page.waitForFunction(() => document.getElementById('save-state').dataset.state === 'saved', null, { timeout: 10000 });
    saved = await call('GET', '/v1/chains/' + second.id);
    if (saved.doc.nodes[0].name === 'greeter') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(saved.doc.nodes[0].name, 'greeter');
  const before = fake.bodies.length;
  const r = await call('POST', '/v1/chains/' + second.id + '/runs', { input: { name: 'Grace' }, version: 'draft' });
  await page.goto(base + '/runs/' + r.run_id);
  await page.waitForFunction(() => /completed|failed/.test((document.querySelector('.runpage .status') || {}).textContent || ''), null, { timeout: 20000 });
  const run = await call('GET', '/v1/runs/' + r.run_id);
  assert.equal(run.status, 'completed', JSON.stringify(run.error));
  assert.equal(fake.bodies[before].messages[1].content, 'Greet Grace', 'the stored agent\'s prompt');

  // the Agents page lists it as stored
  await page.goto(base + '/agents');
  const row = page.locator('#agents-table tr', { hasText: 'greeter' });
  assert.match(await row.textContent(), /stored, version 1/);
  await page.screenshot({ path: join(SHOTS, 'agents-stored.png') });
  await page.done();
});

test('an agent\'s tools from everywhere: an MCP server\'s tool and a saved chain a person approves in the inbox', async () => {
  // the reference MCP server (npm), over stdio
  const script = join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
  await call('POST', '/v1/mcp-servers', { name: 'everything', transport: 'stdio', command: 'node', args: [script, 'stdio'] });
  for (let i = 0; ; i++) {
    const list = await call('GET', '/v1/mcp-servers');
    if (list.servers?.find((m) => m.name === 'everything')?.status.state === 'available') break;
    if (i > 300) throw new Error('server-everything did not become available: ' + JSON.stringify(list));
    await new Promise((r) => setTimeout(r, 50));
  }
  // a saved chain the model may run, gated
  await call('POST', '/v1/chains', { name: 'lookup-customer', nodes: [{ node_id: 'find', kind: 'tool', name: 'echo', input_map: { customer: 'input.customer' } }] });
  const ch = await call('POST', '/v1/chains', {
    name: 'tools-from-everywhere', sample_input: { name: 'Ada' },
    nodes: [{ node_id: 'helper', kind: 'agent', label: 'Helper', input_map: { query: 'input.name' }, position: { x: 0, y: 0 }, config: {
      model: { credential: 'local-llm', name: 'fake-model' }, prompt: 'Help {{ query }}',
      tools: [
        { tool: 'mcp:everything/echo', description: 'Says the message back.' },
        { chain: 'lookup-customer', name: 'lookup', description: 'Finds a customer.', approval: 'required',
          input_schema: { type: 'object', properties: { customer: { type: 'string' } }, required: ['customer'] } },
      ],
    } }],
  });
  assert.deepEqual((await call('GET', '/v1/chains/' + ch.id)).issues.filter((i) => i.severity === 'error'), [], 'the agent with both tools validates');
  const before = fake.bodies.length;
  const { run_id: id } = await call('POST', '/v1/chains/' + ch.id + '/runs', { input: { name: 'Ada' }, version: 'draft' });
  const page = await open('');
  await page.setViewportSize({ width: 1400, height: 900 });
  await page.goto(base + '/runs/' + id);
  await page.waitForFunction(() => document.getElementById('runpage').dataset.status === 'paused', null, { timeout: 20000 });
  // the MCP tool ran; the chain waits for a person
  const offered = fake.bodies[before].tools.map((t) => t.function);
  assert.deepEqual(offered.map((t) => t.description), ['Says the message back.', 'Finds a customer.'], 'both tools are offered with their descriptions');
  assert.ok(offered[0].parameters.properties.message, 'the MCP tool\'s schema is the server\'s');
  const inbox = await open('');
  await inbox.setViewportSize({ width: 1400, height: 900 });
  await inbox.goto(base + '/inbox');
  const item = inbox.locator(`.inbox-item[data-run-id="${id}"]`);
  await item.waitFor();
  assert.match(await item.textContent(), /lookup/);
  await inbox.screenshot({ path: join(SHOTS, 'agent-tools-inbox.png') });
  await item.locator('button[data-action="approve"]').click();
  await item.locator('.ib-done-note').waitFor();
  await inbox.done();
  await page.waitForFunction(() => document.getElementById('runpage').dataset.status === 'completed', null, { timeout: 20000 });
  const run = await call('GET', '/v1/runs/' + id);
  const calls = run.outputs.helper.tool_calls || [];
  assert.equal(calls.length, 2, JSON.stringify(run.outputs.helper));
  assert.match(JSON.stringify(calls[0].output), /hi Ada/, 'the MCP server echoed the message');
  assert.equal(calls[1].tool, 'lookup');
  assert.deepEqual(calls[1].input, { customer: 'hi Ada' });
  await page.waitForFunction(() => document.querySelectorAll('#agent-streams .agent-call').length === 2);
  await page.screenshot({ path: join(SHOTS, 'agent-tools-run.png') });
  await page.done();
});
