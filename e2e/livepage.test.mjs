// Browser test of what a live run page asks the server: it follows its run
// on one stream, whose frames carry what the page shows (the timeline's
// entries, the finished run's controls), instead of fetching them batch
// after batch. The run waits at its first node for a gate the test opens
// once the page is ready, so that every later event reaches it live.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { launch, close, open, ownStudio } from './lib.mjs';

let studio, gate, release;

before(async () => {
  await launch();
  let opened;
  const ready = new Promise((r) => { opened = r; });
  release = opened;
  gate = createServer(async (req, res) => {
    await ready;
    res.setHeader('Content-Type', 'application/json');
    res.end('{"open":true}');
  });
  await new Promise((r) => gate.listen(0, '127.0.0.1', r));
  // the run's first node calls the gate on loopback
  studio = await ownStudio('studio-livepage-', [], { args: ['--http-allow-private'] });
});
after(async () => {
  if (release) release();
  if (gate) gate.close();
  if (studio) studio.stop();
  await close();
});

async function api(method, path, body) {
  const res = await fetch(studio.base + path, {
    method, headers: body ? { 'Content-Type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

// countBatches counts, in the page, the stream's messages and the batches
// they arrive in (those delivered before the page's next task): what the
// page's own batching sees, measured without its code.
function countBatches() {
  const stats = { messages: 0, batches: 0, streams: [] };
  window.__sse = stats;
  const ES = window.EventSource;
  const seen = new WeakSet();
  let open = false;
  window.EventSource = class extends ES {
    constructor(url, init) { super(url, init); stats.streams.push(String(url)); }
    addEventListener(type, fn, opts) {
      return super.addEventListener(type, (e) => {
        if (e.data !== undefined && !seen.has(e)) {
          seen.add(e);
          stats.messages++;
          if (!open) { open = true; stats.batches++; setTimeout(() => { open = false; }, 0); }
        }
        return fn(e);
      }, opts);
    }
  };
}

test('a live run page follows its run on one request: no fetch per batch of events', async () => {
  const nodes = [{ node_id: 'gate', kind: 'tool', name: 'http', input: { url: 'http://127.0.0.1:' + gate.address().port + '/gate' }, position: { x: 0, y: 0 } }];
  const edges = [];
  for (let i = 1; i < 20; i++) {
    nodes.push({ node_id: 'n' + i, kind: 'tool', name: 'delay', label: 'Step ' + i, input: { ms: 80 }, position: { x: (i % 5) * 200, y: Math.floor(i / 5) * 110 } });
    edges.push({ source: i === 1 ? 'gate' : 'n' + (i - 1), target: 'n' + i });
  }
  const chain = await api('POST', '/v1/chains', { name: 'live-requests', nodes, edges });
  const page = await open();
  await page.addInitScript(countBatches);
  const paths = [];
  page.on('request', (r) => paths.push(new URL(r.url()).pathname));
  const id = (await api('POST', '/v1/chains/' + chain.id + '/runs', { input: {} })).run_id;
  await page.goto(studio.base + '/runs/' + id);
  await page.waitForSelector('#runpage[data-ready="1"]');
  release(); // the gate opens: every later event reaches the page live
  await page.waitForSelector('#runpage[data-status="completed"]', { timeout: 20000 });
  await page.waitForFunction(() => {
    const last = document.querySelector('#timeline .ev:last-child'), ph = window.__run.phases;
    return last && ph.length > 0 && Number(last.dataset.seq) === ph[ph.length - 1][0];
  }, null, { timeout: 10000 });
  const sse = await page.evaluate(() => window.__sse);
  const run = '/runs/' + id;
  const count = (re) => paths.filter((p) => re.test(p)).length;
  const n = {
    events: count(new RegExp('^(/v1)?' + run + '/(events|stream)$')),
    timeline: count(new RegExp('^' + run + '/timeline$')),
    controls: count(new RegExp('^' + run + '/controls$')),
    usage: count(new RegExp('^' + run + '/usage$')),
    drawer: count(new RegExp('^' + run + '/nodes/')),
  };
  const total = Object.values(n).reduce((a, b) => a + b, 0);
  console.log(`# live run page, 20 nodes: ${sse.messages} messages in ${sse.batches} batches; requests ${JSON.stringify(n)}: ${(total / sse.batches).toFixed(2)} per batch`);
  assert.ok(sse.batches >= 5, 'the run was followed live, in batches: ' + sse.batches);
  assert.equal(n.events, 1, 'one stream for the run');
  assert.equal(n.timeline, 0, 'no timeline fetch: the entries come on the stream');
  assert.equal(n.controls, 0, 'the finished run\'s controls come on the stream');
  assert.equal(n.usage, 0, 'no usage fetch for a run without model calls');
  // what the stream built is what a reload renders
  const live = await page.$$eval('#timeline .ev', (l) => l.map((x) => x.outerHTML));
  const controls = await page.$eval('#run-controls', (e) => e.innerHTML);
  const status = await page.$eval('#run-status', (e) => e.outerHTML);
  await page.reload();
  await page.waitForSelector('#runpage[data-ready="1"]');
  assert.deepEqual(await page.$$eval('#timeline .ev', (l) => l.map((x) => x.outerHTML)), live, 'the same entries');
  assert.equal(await page.$eval('#run-controls', (e) => e.innerHTML), controls, 'the same controls');
  assert.equal(await page.$eval('#run-status', (e) => e.outerHTML), status, 'the same status');
  await page.done();
});
