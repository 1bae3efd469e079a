// Writes a synthetic Rill trace (actors/trace/trace_format.md) for developing and
// testing the visualizer without the C++ recorder: a data-parallel MLP step on
// 2 places (feeds, forward, backward, one allreduce with barrier waits and
// chunks, optimizer ops), with data/control/wake/chunk messages.
//
//   node test/make_sample_trace.mjs OUT.json [--iterations N] [--places P] [--seed S]
import { writeFileSync } from 'node:fs';

const argv = process.argv.slice(2);
const out = argv.find((a, i) => !a.startsWith('--') && !(argv[i - 1] || '').startsWith('--'));
const opt = (name, def) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : def;
};
if (!out) {
  console.error('usage: node make_sample_trace.mjs OUT.json [--iterations N] [--places P] [--seed S]');
  process.exit(2);
}
const ITERATIONS = opt('iterations', 3);
const PLACES = opt('places', 2);
let seed = opt('seed', 1) >>> 0 || 1;
const rand = () => {
  // xorshift32: deterministic output for a given seed
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed / 4294967296;
};
const r3 = (x) => Math.round(x * 1000) / 1000;

const events = [];
const lanes = [];
let nextTid = 1;
const meta = (name, pid, tid, args) => events.push({ ph: 'M', name, pid, tid, args });
function addProcess(pid, name) {
  meta('process_name', pid, 0, { name });
  meta('process_sort_index', pid, 0, { sort_index: pid });
}
function addLane(pid, kind, name, extra = {}) {
  const tid = nextTid++;
  lanes.push({ tid, pid, kind, name, graph: 0, node: -1, place: pid - 1, ...extra });
  meta('thread_name', pid, tid, { name });
  meta('thread_sort_index', pid, tid, { sort_index: tid });
  return tid;
}

// -- the graph: per place the same chain of ops, one allreduce across places --
const spec = [
  // type, role, kind, stream, inputs (indices into spec), var
  ['feed', 'other', 'feed', 0, [], 'x'],
  ['feed', 'other', 'feed', 0, [], 'label'],
  ['mul', 'forward', 'compute', 0, [0], 'fc_0.tmp_0'],
  ['elementwise_add', 'forward', 'compute', 0, [2], 'fc_0.tmp_1'],
  ['relu', 'forward', 'compute', 0, [3], 'relu_0.tmp_0'],
  ['mul', 'forward', 'compute', 0, [4], 'fc_1.tmp_0'],
  ['elementwise_add', 'forward', 'compute', 0, [5], 'fc_1.tmp_1'],
  ['softmax_with_cross_entropy', 'forward', 'compute', 0, [6, 1], 'loss'],
  ['softmax_with_cross_entropy_grad', 'backward', 'compute', 0, [7], 'fc_1.tmp_1@GRAD'],
  ['elementwise_add_grad', 'backward', 'compute', 0, [8], 'fc_1.tmp_0@GRAD'],
  ['mul_grad', 'backward', 'compute', 1, [9], 'fc_1.w_0@GRAD'],
  ['relu_grad', 'backward', 'compute', 0, [10], 'fc_0.tmp_1@GRAD'],
  ['mul_grad', 'backward', 'compute', 1, [11], 'fc_0.w_0@GRAD'],
];
const optSpec = ['adam', 'adam'];
const nodes = [];
const edges = [];
const opLane = new Map(); // node id -> tid
const streamLane = []; // [place][stream] -> tid

addProcess(0, 'executor');
const driverTid = addLane(0, 'driver', 'driver');
addLane(0, 'watchdog', 'watchdog');
const collId = 1000;
const collTid = addLane(0, 'collective', `allreduce ${collId}`, { node: collId });
const chunkTid = [];
const placeNodes = []; // [place][spec index] -> node id
for (let p = 0; p < PLACES; p++) {
  const pid = p + 1;
  addProcess(pid, `place ${p} (cpu:${p})`);
  placeNodes[p] = [];
  spec.forEach(([type, role, kind, stream], i) => {
    const id = p * 100 + i;
    const tid = addLane(pid, 'op', `op ${id} ${type}`, { node: id, place: p });
    opLane.set(id, tid);
    placeNodes[p][i] = id;
    nodes.push({ id, type, op: kind === 'feed' ? -1 : i, place: p, stream, kind, role, tid });
  });
  optSpec.forEach((type, j) => {
    const id = p * 100 + spec.length + j;
    const tid = addLane(pid, 'op', `op ${id} ${type}`, { node: id, place: p });
    opLane.set(id, tid);
    placeNodes[p].push(id);
    nodes.push({ id, type, op: spec.length + j, place: p, stream: 0, kind: 'compute', role: 'optimize', tid });
  });
  streamLane[p] = [addLane(pid, 'stream', `stream ${p}.0`), addLane(pid, 'stream', `stream ${p}.1`)];
  chunkTid[p] = addLane(pid, 'chunk', `allreduce ${collId} @ place ${p}`, { node: collId, place: p });
  addLane(pid, 'fibers', 'fibers');
  spec.forEach(([, , , , inputs, ], i) => {
    for (const j of inputs) edges.push({ from: placeNodes[p][j], to: placeNodes[p][i], var: spec[j][5], kind: 'data' });
  });
  // the optimizers read the merged gradients; a control edge orders them
  edges.push({ from: placeNodes[p][spec.length], to: placeNodes[p][spec.length + 1], var: '', kind: 'control' });
}
nodes.push({ id: collId, type: 'allreduce', op: -1, place: -1, stream: -1, kind: 'collective', role: 'backward', tid: collTid });
for (let p = 0; p < PLACES; p++) {
  edges.push({ from: placeNodes[p][10], to: collId, var: 'fc_1.w_0@GRAD', kind: 'data' });
  edges.push({ from: placeNodes[p][12], to: collId, var: 'fc_0.w_0@GRAD', kind: 'data' });
  edges.push({ from: collId, to: placeNodes[p][spec.length], var: 'fc_0.w_0@GRAD', kind: 'data' });
  edges.push({ from: collId, to: placeNodes[p][spec.length + 1], var: 'fc_1.w_0@GRAD', kind: 'data' });
}
const nodeById = new Map(nodes.map((n) => [n.id, n]));

// -- events ------------------------------------------------------------------
let msgId = 1;
const kernel = (n, ts, dur, iteration) => {
  const pid = n.kind === 'collective' ? 0 : n.place + 1;
  events.push({
    ph: 'X', cat: 'kernel', name: n.type, pid, tid: n.tid, ts: r3(ts), dur: r3(dur),
    args: { graph: 0, node: n.id, op: n.op, type: n.type, place: n.place, stream: n.stream, iteration },
  });
};
const message = (kind, fromTid, toTid, sendTs, recvTs, iteration, extra = {}) => {
  const from = lanes.find((l) => l.tid === fromTid);
  const to = lanes.find((l) => l.tid === toTid);
  const id = msgId++;
  events.push({
    ph: 's', cat: 'message', name: kind, id, pid: from.pid, tid: fromTid, ts: r3(sendTs),
    args: { graph: 0, iteration, from: fromTid, to: toTid, ...extra },
  });
  events.push({ ph: 'f', cat: 'message', name: kind, id, pid: to.pid, tid: toTid, ts: r3(recvTs), bp: 'e', args: { iteration } });
};
const bytesOf = (v) => (v.includes('w_0') ? 784 * 256 * 4 : 64 * 256 * 4);

let t = 15;
for (let it = 0; it < ITERATIONS; it++) {
  const itStart = t;
  const end = new Map(); // node id -> kernel end
  const start = new Map();
  const gradReady = [];
  for (let p = 0; p < PLACES; p++) {
    const clock = [t + 3 + rand() * 4, t + 3]; // per stream
    const ids = placeNodes[p];
    spec.forEach(([type, , , stream, inputs], i) => {
      const n = nodeById.get(ids[i]);
      const ready = Math.max(clock[stream], ...inputs.map((j) => end.get(ids[j]) + 2 + rand() * 3));
      const dur = type === 'feed' ? 4 + rand() * 3 : type.startsWith('mul') ? 40 + rand() * 60 : 6 + rand() * 15;
      if (stream === 1 && inputs.length) {
        // the producer wakes the other stream's actor before the kernel runs
        const src = ids[inputs[0]];
        message('wake', opLane.get(src), streamLane[p][1], end.get(src) - 0.001, ready - 1, it);
      }
      kernel(n, ready, dur, it);
      start.set(n.id, ready);
      end.set(n.id, ready + dur);
      clock[stream] = ready + dur;
      for (const j of inputs) {
        const v = spec[j][5];
        message('data', opLane.get(ids[j]), n.tid, end.get(ids[j]) - 0.001, ready, it,
          { from_node: ids[j], to_node: n.id, var: v, bytes: bytesOf(v) });
      }
    });
    if (p === 0 && it === 1) {
      // one op of place 0 waits for stream 1 to go idle
      const n = nodeById.get(ids[11]);
      events.push({ ph: 'X', cat: 'wait', name: 'stream', pid: 1, tid: n.tid, ts: r3(start.get(n.id) - 9), dur: 8.5,
        args: { graph: 0, iteration: it, place: p, what: 'stream 0.1' } });
    }
    gradReady[p] = Math.max(end.get(ids[10]), end.get(ids[12]));
  }
  // allreduce: barrier waits until the last place is ready, then chunks
  const release = Math.max(...gradReady) + 1;
  let collEnd = release;
  for (let p = 0; p < PLACES; p++) {
    const ids = placeNodes[p];
    for (const i of [10, 12]) {
      message('data', opLane.get(ids[i]), collTid, end.get(ids[i]) - 0.001, release, it,
        { from_node: ids[i], to_node: collId, var: spec[i][5], bytes: bytesOf(spec[i][5]) });
    }
    events.push({ ph: 'X', cat: 'wait', name: 'barrier', pid: p + 1, tid: chunkTid[p], ts: r3(gradReady[p]),
      dur: r3(release - gradReady[p]), args: { graph: 0, iteration: it, place: p, what: `allreduce ${collId}` } });
    const cs = release + 2 + rand() * 3;
    const cd = 20 + rand() * 15;
    message('chunk', collTid, chunkTid[p], release + 0.5, cs, it, { from_node: collId, to_node: collId, bytes: 784 * 256 * 4 / PLACES });
    events.push({ ph: 'X', cat: 'kernel', name: 'allreduce chunk', pid: p + 1, tid: chunkTid[p], ts: r3(cs), dur: r3(cd),
      args: { graph: 0, node: collId, op: -1, type: 'allreduce chunk', place: p, stream: 0, iteration: it } });
    collEnd = Math.max(collEnd, cs + cd);
  }
  events.push({ ph: 'X', cat: 'kernel', name: 'allreduce', pid: 0, tid: collTid, ts: r3(release), dur: r3(collEnd - release),
    args: { graph: 0, node: collId, op: -1, type: 'allreduce', place: -1, stream: -1, iteration: it, collective: 0 } });
  // optimizers
  let itEnd = collEnd;
  for (let p = 0; p < PLACES; p++) {
    let c = collEnd + 2;
    const ids = placeNodes[p];
    for (let j = 0; j < optSpec.length; j++) {
      const n = nodeById.get(ids[spec.length + j]);
      const s = c + rand() * 2;
      const d = 10 + rand() * 10;
      message('data', collTid, n.tid, collEnd - 0.001, s, it,
        { from_node: collId, to_node: n.id, var: j ? 'fc_1.w_0@GRAD' : 'fc_0.w_0@GRAD', bytes: bytesOf('w_0') });
      if (j) message('control', opLane.get(ids[spec.length]), n.tid, c - 0.001, s, it, { from_node: ids[spec.length], to_node: n.id, var: '', bytes: 0 });
      kernel(n, s, d, it);
      c = s + d;
    }
    itEnd = Math.max(itEnd, c);
  }
  events.push({ ph: 'X', cat: 'iteration', name: `iteration ${it}`, pid: 0, tid: driverTid, ts: r3(itStart),
    dur: r3(itEnd + 3 - itStart), args: { graph: 0, iteration: it } });
  t = itEnd + 20;
}

const trace = {
  displayTimeUnit: 'ms',
  traceEvents: events,
  rill: {
    format: 1,
    node: 'sample-host:4242',
    clock: { origin_wall_ns: 1795000000000000000, offset_ns: 0 },
    dropped_events: 0,
    lanes,
    graphs: [{ id: 0, block: 0, parent_lane: -1, places: PLACES, streams_per_place: 2, nodes, edges }],
  },
};
writeFileSync(out, JSON.stringify(trace));
console.log(`${out}: ${lanes.length} lanes, ${events.length} events, ${msgId - 1} messages, ${nodes.length} nodes`);
