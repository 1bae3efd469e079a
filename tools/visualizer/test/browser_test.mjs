// Browser test of the visualizer: opens a self-contained page in headless
// Chromium (a trace embedded as `rill trace view` writes it; or the page as
// built, and then it opens TRACE.json with the page's file picker) and checks
// what it drew against numbers computed here from the trace file itself.
//
//   node test/browser_test.mjs PAGE.html TRACE.json SCREENSHOT.png
//
// Saves the timeline to SCREENSHOT.png and the graph view beside it
// (SCREENSHOT-graph.png). Exits non-zero with a message on any mismatch.
import { chromium } from 'playwright-core';
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { resolve, join } from 'node:path';
import { tmpdir } from 'node:os';
import { pathToFileURL } from 'node:url';

const TIMEOUT_MS = 90_000;
const DRAW_LIMIT = 20000; // the page draws everything below this (src/timeline.js)
const CHROMIUM = process.env.RILL_CHROMIUM || '/usr/bin/chromium';

const [pagePath, tracePath, shotPath] = process.argv.slice(2);
if (!shotPath) {
  console.error('usage: node browser_test.mjs PAGE.html TRACE.json SCREENSHOT.png');
  process.exit(2);
}

let browser = null;
let profile = null;
const cleanup = async () => {
  if (browser) await browser.close().catch(() => {});
  if (profile) rmSync(profile, { recursive: true, force: true });
};
const fail = async (msg) => {
  console.error(`FAIL: ${msg}`);
  await cleanup();
  process.exit(1);
};
setTimeout(() => fail(`timed out after ${TIMEOUT_MS / 1000} s`), TIMEOUT_MS);

let checks = 0;
const ok = (msg) => {
  checks++;
  console.log(`ok ${checks} - ${msg}`);
};
const near = (a, b, eps = 0.0006) => Math.abs(a - b) <= eps;
const firstNumber = (text) => Number((/-?\d+(\.\d+)?/.exec(text) || [NaN])[0]);

// -- what the trace says, computed independently of the page --------------------
const trace = JSON.parse(readFileSync(tracePath, 'utf8'));
const events = trace.traceEvents;
const rill = trace.rill || {};
const laneNames = new Map();
const laneKeys = new Set();
for (const l of rill.lanes || []) {
  laneKeys.add(`${l.pid ?? 0}:${l.tid}`);
  laneNames.set(`${l.pid ?? 0}:${l.tid}`, l.name);
}
for (const e of events) {
  if (e.ph === 'M') {
    if (e.name === 'thread_name' || e.name === 'thread_sort_index') laneKeys.add(`${e.pid ?? 0}:${e.tid}`);
    if (e.name === 'thread_name') laneNames.set(`${e.pid ?? 0}:${e.tid}`, e.args.name);
  } else if (typeof e.tid === 'number') {
    laneKeys.add(`${e.pid ?? 0}:${e.tid}`);
  }
}
const sends = new Map();
const recvs = new Map();
for (const e of events) {
  if (e.ph === 's' && !sends.has(String(e.id))) sends.set(String(e.id), e);
  if (e.ph === 'f' && !recvs.has(String(e.id))) recvs.set(String(e.id), e);
}
const pairs = [...sends.entries()].filter(([id]) => recvs.has(id)).map(([id, s]) => ({ id, s, f: recvs.get(id) }));
const slicesAll = events.filter((e) => e.ph === 'X');
const iterOf = (e) => (e.args || {}).iteration;
const iterations = [...new Set(slicesAll.map(iterOf).filter((i) => typeof i === 'number'))].sort((a, b) => a - b);
const graph0 = (rill.graphs || [])[0];

console.log(
  `trace ${tracePath}: ${laneKeys.size} lanes, ${slicesAll.length} slices, ${pairs.length} messages, ` +
    `${iterations.length} iterations, graph 0 with ${graph0 ? graph0.nodes.length : 0} nodes`,
);
if (!pairs.length) await fail('the trace has no message (no s/f flow pair): nothing to check arrows against');
if (!slicesAll.some((e) => e.cat === 'kernel')) await fail('the trace has no kernel slice');

// -- the page ---------------------------------------------------------------------
profile = mkdtempSync(join(tmpdir(), 'rill-vis-profile-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: CHROMIUM,
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1400, height: 800 },
  offline: true,
});
browser = context;
const page = context.pages()[0] || (await context.newPage());
const pageErrors = [];
page.on('pageerror', (err) => pageErrors.push(err.message));
page.on('console', (m) => m.type() === 'error' && pageErrors.push(m.text()));
page.on('request', (r) => {
  if (!r.url().startsWith('file:') && !r.url().startsWith('data:')) pageErrors.push(`network request: ${r.url()}`);
});

await page.goto(pathToFileURL(resolve(pagePath)).href);
try {
  await page.waitForFunction(() => document.body.dataset.ready, null, { timeout: 30_000 });
} catch {
  await fail('the page did not finish loading the embedded trace in 30 s');
}
let ready = await page.evaluate(() => document.body.dataset.ready);
if (ready === 'loader') {
  // the page as built, with no trace in it: open the trace with its file picker
  await page.setInputFiles('#file', tracePath);
  await page.waitForFunction(() => document.body.dataset.ready !== 'loader', null, { timeout: 30_000 }).catch(() => {});
  ready = await page.evaluate(() => document.body.dataset.ready);
  if (ready === '1') ok('the page (no trace embedded) loaded the trace through its file picker');
} else if (ready === '1') {
  ok('the page loaded the embedded trace');
}
if (ready !== '1') {
  const why = await page.locator('#loader-error').textContent();
  await fail(`the page shows its loader instead of the trace (${ready}): ${why || 'unknown reason'}`);
}

const counts = () =>
  page.evaluate(() => ({
    lanes: document.querySelectorAll('#timeline .lane').length,
    slices: document.querySelectorAll('#timeline .slice').length,
    arrows: document.querySelectorAll('#timeline .arrow').length,
    stats: window.rillViewer.stats(),
  }));
async function expectCounts(what, want) {
  try {
    await page.waitForFunction(
      (w) => document.querySelectorAll('#timeline .lane').length === w.lanes &&
        document.querySelectorAll('#timeline .arrow').length === w.arrows &&
        (w.slices === undefined || document.querySelectorAll('#timeline .slice').length === w.slices),
      want, { timeout: 10_000 },
    );
  } catch {
    const got = await counts();
    await fail(`${what}: expected ${JSON.stringify(want)}, the page drew lanes=${got.lanes} slices=${got.slices} arrows=${got.arrows}`);
  }
  const got = await counts();
  if (got.stats.lanes !== got.lanes || got.stats.arrows !== got.arrows || got.stats.slices !== got.slices) {
    await fail(`${what}: rillViewer.stats() ${JSON.stringify(got.stats)} disagrees with the DOM ${JSON.stringify(got)}`);
  }
  ok(`${what}: ${got.lanes} lanes, ${got.slices} slices, ${got.arrows} arrows drawn, as expected`);
}

// default view: every lane; every message when the trace is small enough to draw whole
if (slicesAll.length + pairs.length <= DRAW_LIMIT) {
  await expectCounts('default view', { lanes: laneKeys.size, arrows: pairs.length, slices: slicesAll.length });
} else {
  const got = await counts();
  if (got.lanes !== laneKeys.size) await fail(`default view: expected ${laneKeys.size} lanes, the page drew ${got.lanes}`);
  if (got.slices + got.arrows > DRAW_LIMIT) await fail(`big trace: the page drew ${got.slices + got.arrows} elements, over ${DRAW_LIMIT}`);
  const status = await page.locator('#status').textContent();
  if (!/big trace/.test(status)) await fail(`big trace: the status line does not say so: "${status}"`);
  ok(`default view of a big trace: ${got.lanes} lanes, ${got.slices + got.arrows} elements drawn (status: ${status})`);
}

// wheel zooms in, "Fit" shows the whole range again
const span = () => page.evaluate(() => {
  const [t0, t1] = window.rillViewer.view();
  return t1 - t0;
});
const fitted = await span();
const box = await page.locator('#timeline .tl-plot').boundingBox();
await page.mouse.move(box.x + box.width / 2, box.y + Math.min(box.height, 400) / 2);
await page.mouse.wheel(0, -400);
await page.waitForTimeout(100);
const zoomed = await span();
if (!(zoomed < fitted * 0.9)) await fail(`wheel up over the timeline did not zoom in: ${fitted} µs -> ${zoomed} µs across`);
await page.click('#fit');
await page.waitForTimeout(100);
if (!near(await span(), fitted, 1e-6 * fitted)) await fail(`"Fit" did not restore the whole range: ${await span()} µs, expected ${fitted}`);
ok(`wheel zoomed the timeline in (${fitted.toFixed(3)} -> ${zoomed.toFixed(3)} µs across); Fit restored it`);

// one iteration (the middle one)
const it = iterations.length ? iterations[Math.floor(iterations.length / 2)] : null;
if (it !== null) {
  const itPairs = pairs.filter((p) => iterOf(p.s) === it);
  const itSlices = slicesAll.filter((e) => iterOf(e) === it);
  await page.selectOption('#iteration', String(it));
  await expectCounts(`iteration ${it}`, { lanes: laneKeys.size, arrows: itPairs.length, slices: itSlices.length });
}

// a process filter: hiding a process hides its lanes and every arrow touching it
const procPids = await page.$$eval('#procs input[data-pid]', (els) => els.map((e) => Number(e.dataset.pid)));
if (procPids.length > 1) {
  const hide = procPids[procPids.length - 1];
  await page.click('#procs-summary');
  await page.click(`#procs input[data-pid="${hide}"]`);
  const lanesLeft = [...laneKeys].filter((k) => Number(k.split(':')[0]) !== hide).length;
  const arrowsLeft = pairs.filter((p) => (it === null || iterOf(p.s) === it) && (p.s.pid ?? 0) !== hide && (p.f.pid ?? 0) !== hide).length;
  await expectCounts(`process ${hide} hidden`, { lanes: lanesLeft, arrows: arrowsLeft });
  await page.click(`#procs input[data-pid="${hide}"]`);
  await page.click('#procs-summary');
}

// a message-kind filter
const kinds = [...new Set(pairs.map((p) => p.s.name))];
if (kinds.length > 1) {
  const kind = kinds.includes('data') ? 'data' : kinds[0];
  await page.click(`#kinds input[data-kind="${kind}"]`);
  const left = pairs.filter((p) => (it === null || iterOf(p.s) === it) && p.s.name !== kind).length;
  await expectCounts(`messages of kind ${kind} hidden`, { lanes: laneKeys.size, arrows: left });
  await page.click(`#kinds input[data-kind="${kind}"]`);
}

// Finds an element of `selector` whose centre (or a path's midpoint) is on top,
// widest first, and returns that point.
async function clickablePoint(selector) {
  return page.evaluate((sel) => {
    const els = [...document.querySelectorAll(sel)];
    const pts = els.map((el) => {
      let x;
      let y;
      let w;
      if (el.tagName === 'path') {
        const len = el.getTotalLength();
        const p = el.getPointAtLength(len / 2);
        const m = el.getScreenCTM();
        x = m.a * p.x + m.c * p.y + m.e;
        y = m.b * p.x + m.d * p.y + m.f;
        w = len;
      } else {
        const r = el.getBoundingClientRect();
        x = r.left + r.width / 2;
        y = r.top + r.height / 2;
        w = r.width;
      }
      return { el, x, y, w };
    });
    pts.sort((a, b) => b.w - a.w);
    for (const p of pts) {
      if (p.x < 0 || p.y < 0 || p.x > innerWidth || p.y > innerHeight) continue;
      if (document.elementFromPoint(p.x, p.y) === p.el) {
        return { x: p.x, y: p.y, idx: p.el.dataset.idx, id: p.el.dataset.id };
      }
    }
    return null;
  }, selector);
}
const field = (key) => page.locator(`#details tr[data-key="${key}"] td`).first().textContent({ timeout: 5000 }).catch(() => null);

// click an arrow: the details show the message
const ap = await clickablePoint('#timeline .arrow');
if (!ap) await fail('no arrow could be clicked (none visible on top)');
await page.mouse.click(ap.x, ap.y);
const pair = pairs.find((p) => p.id === String(ap.id));
if (!pair) await fail(`clicked arrow data-id=${ap.id} is not a message of the trace`);
const want = {
  kind: pair.s.name,
  from: laneNames.get(`${pair.s.pid ?? 0}:${pair.s.tid}`),
  to: laneNames.get(`${pair.f.pid ?? 0}:${pair.f.tid}`),
  latency: pair.f.ts - pair.s.ts,
};
const got = { kind: await field('kind'), from: await field('from'), to: await field('to'), latency: await field('latency') };
if (got.kind !== want.kind) await fail(`message details: kind "${got.kind}", expected "${want.kind}"`);
if (want.from && !(got.from || '').includes(want.from)) await fail(`message details: from "${got.from}", expected "${want.from}"`);
if (want.to && !(got.to || '').includes(want.to)) await fail(`message details: to "${got.to}", expected "${want.to}"`);
if (!near(firstNumber(got.latency || ''), want.latency, 0.0015)) await fail(`message details: latency "${got.latency}", expected ${want.latency.toFixed(3)} µs`);
const sArgs = pair.s.args || {};
if (sArgs.var) {
  const v = await field('var');
  if (v !== sArgs.var) await fail(`message details: var "${v}", expected "${sArgs.var}"`);
}
ok(`clicked ${want.kind} message ${pair.id} (${want.from ?? `tid ${pair.s.tid}`} → ${want.to ?? `tid ${pair.f.tid}`}): details show kind, lanes, latency ${got.latency}`);

// click a kernel box: the details show its name and duration
const kp = await clickablePoint('#timeline .slice[data-cat="kernel"]');
if (!kp) await fail('no kernel slice could be clicked (none visible on top)');
await page.mouse.click(kp.x, kp.y);
const kev = events[Number(kp.idx)];
const kname = await field('name');
const kdur = await field('duration');
const klane = await field('lane');
if (kname !== kev.name) await fail(`kernel details: name "${kname}", the event's is "${kev.name}"`);
if (!near(firstNumber(kdur || ''), kev.dur)) await fail(`kernel details: duration "${kdur}", the event's is ${kev.dur} µs`);
const kLaneName = laneNames.get(`${kev.pid ?? 0}:${kev.tid}`);
if (kLaneName && !(klane || '').includes(kLaneName)) await fail(`kernel details: lane "${klane}", expected "${kLaneName}"`);
ok(`clicked kernel "${kev.name}" on ${kLaneName ?? `tid ${kev.tid}`}: details show its name, duration ${kdur} and lane`);

await page.mouse.move(1, 1); // no tooltip in the picture
await page.screenshot({ path: shotPath });
ok(`timeline screenshot saved to ${shotPath}`);

// graph view: one node per node of rill.graphs[0]
if (graph0) {
  await page.click('.tab[data-tab="graph"]');
  const n = graph0.nodes.length;
  try {
    await page.waitForFunction((w) => document.querySelectorAll('#graph .node').length === w, n, { timeout: 20_000 });
  } catch {
    const drawn = await page.locator('#graph .node').count();
    await fail(`graph view: expected ${n} nodes (rill.graphs[0].nodes), the page drew ${drawn}`);
  }
  ok(`graph view: ${n} nodes drawn`);
  // a compute node that ran: its stats are its kernels in the current filter
  const gid = graph0.id ?? 0;
  const candidates = graph0.nodes.filter((nd) => nd.kind !== 'collective');
  let checked = false;
  for (const nd of candidates) {
    const ks = slicesAll.filter((e) => e.cat === 'kernel' && (e.args || {}).graph === gid && e.args.node === nd.id && (it === null || iterOf(e) === it));
    if (!ks.length) continue;
    const np = await clickablePoint(`#graph .node[data-id="${nd.id}"] rect`);
    if (!np) continue; // under the legend
    await page.mouse.click(np.x, np.y);
    const count = Number(await field('count'));
    const mean = firstNumber((await field('mean')) || '');
    const wantMean = ks.reduce((a, e) => a + e.dur, 0) / ks.length;
    if (count !== ks.length) await fail(`graph node ${nd.id}: ${count} kernels shown, expected ${ks.length}`);
    if (!near(mean, wantMean, 0.0015)) await fail(`graph node ${nd.id}: mean ${mean}, expected ${wantMean.toFixed(3)}`);
    ok(`graph node ${nd.id} (${nd.type}): ${count} kernels, mean ${mean} µs, as expected`);
    checked = true;
    break;
  }
  if (!checked) await fail('graph view: no compute node of graph 0 has a kernel in the trace');
  await page.screenshot({ path: shotPath.replace(/(\.png)?$/, '-graph.png') });
} else {
  console.log('# the trace has no rill.graphs: graph view not checked');
}

if (pageErrors.length) await fail(`the page reported errors:\n  ${pageErrors.join('\n  ')}`);
ok('no page errors and no network request');
await cleanup();
console.log(`browser test passed: ${checks} checks`);
process.exit(0);
