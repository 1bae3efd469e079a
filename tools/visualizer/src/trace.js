// Parses a Rill trace (actors/trace/trace_format.md: Chrome trace-event JSON plus a
// `rill` key) into lanes, slices and messages, and filters them.

const num = (v, d = null) => (typeof v === 'number' && Number.isFinite(v) ? v : d);

export function laneKey(pid, tid) {
  return `${pid}:${tid}`;
}

// A lane is identified by pid and tid: Rill's tids are unique in the file,
// but plain Chrome traces reuse tids across processes.
export function parseTrace(obj, fileName = '') {
  if (Array.isArray(obj)) obj = { traceEvents: obj }; // Chrome's bare-array form
  if (!obj || !Array.isArray(obj.traceEvents)) throw new Error('not a trace: no traceEvents array');
  const rill = obj.rill && typeof obj.rill === 'object' ? obj.rill : {};
  const events = obj.traceEvents;

  const processes = new Map();
  const lanes = new Map();
  const process = (pid) => {
    let p = processes.get(pid);
    if (!p) {
      p = { pid, name: `process ${pid}`, sort: pid, lanes: [] };
      processes.set(pid, p);
    }
    return p;
  };
  const lane = (pid, tid) => {
    const key = laneKey(pid, tid);
    let l = lanes.get(key);
    if (!l) {
      process(pid);
      l = { key, pid, tid, name: `thread ${tid}`, sort: tid, kind: '', info: null, depth: 1 };
      lanes.set(key, l);
    }
    return l;
  };

  for (const info of Array.isArray(rill.lanes) ? rill.lanes : []) {
    if (num(info.tid) === null) continue;
    const l = lane(num(info.pid, 0), info.tid);
    l.info = info;
    l.kind = info.kind || '';
    if (info.name) l.name = info.name;
  }

  const slices = [];
  const sends = new Map();
  const recvs = new Map();
  let nonMeta = 0;
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    if (!e || typeof e !== 'object') continue;
    const pid = num(e.pid, 0);
    const tid = num(e.tid, 0);
    const args = e.args && typeof e.args === 'object' ? e.args : {};
    if (e.ph === 'M') {
      if (e.name === 'process_name') process(pid).name = String(args.name ?? pid);
      else if (e.name === 'process_sort_index') process(pid).sort = num(args.sort_index, pid);
      else if (e.name === 'thread_name') lane(pid, tid).name = String(args.name ?? tid);
      else if (e.name === 'thread_sort_index') lane(pid, tid).sort = num(args.sort_index, tid);
      continue;
    }
    nonMeta++;
    if (typeof e.tid === 'number') lane(pid, tid);
    const ts = num(e.ts);
    if (ts === null) continue;
    if (e.ph === 'X') {
      const dur = Math.max(0, num(e.dur, 0));
      slices.push({
        idx: i, ev: e, lane: lane(pid, tid), ts, dur, end: ts + dur,
        cat: String(e.cat || 'other'), name: String(e.name ?? ''),
        iter: num(args.iteration), graph: num(args.graph, 0), node: num(args.node),
        depth: 0,
      });
    } else if (e.ph === 's' || e.ph === 'f') {
      // flow ids are unique per file; keep the first of each end
      const map = e.ph === 's' ? sends : recvs;
      const key = String(e.id);
      if (!map.has(key)) map.set(key, { idx: i, ev: e, lane: lane(pid, tid), ts });
    }
  }

  const flows = [];
  for (const [key, s] of sends) {
    const f = recvs.get(key);
    if (!f) continue;
    const args = s.ev.args || {};
    flows.push({
      id: s.ev.id, key, s, f, kind: String(s.ev.name ?? 'message'),
      from: s.lane, to: f.lane, t0: s.ts, t1: f.ts,
      iter: num(args.iteration, num((f.ev.args || {}).iteration)),
    });
  }
  flows.sort((a, b) => a.t0 - b.t0);

  // Nested slices on one lane stack downwards (Rill's rarely nest).
  slices.sort((a, b) => a.ts - b.ts || b.dur - a.dur);
  const stacks = new Map();
  for (const s of slices) {
    let stack = stacks.get(s.lane);
    if (!stack) stacks.set(s.lane, (stack = []));
    while (stack.length && stack[stack.length - 1] <= s.ts) stack.pop();
    s.depth = stack.length;
    stack.push(s.end);
    if (stack.length > s.lane.depth) s.lane.depth = stack.length;
  }

  const procList = [...processes.values()].sort((a, b) => a.sort - b.sort || a.pid - b.pid);
  for (const l of lanes.values()) process(l.pid).lanes.push(l);
  for (const p of procList) p.lanes.sort((a, b) => a.sort - b.sort || a.tid - b.tid);

  let t0 = Infinity;
  let t1 = -Infinity;
  const iterSpan = new Map();
  const iterSlice = new Map();
  const widen = (it, a, b) => {
    if (it === null) return;
    const span = iterSpan.get(it);
    if (!span) iterSpan.set(it, [a, b]);
    else {
      span[0] = Math.min(span[0], a);
      span[1] = Math.max(span[1], b);
    }
  };
  for (const s of slices) {
    t0 = Math.min(t0, s.ts);
    t1 = Math.max(t1, s.end);
    widen(s.iter, s.ts, s.end);
    if (s.cat === 'iteration' && s.iter !== null) iterSlice.set(s.iter, s);
  }
  for (const f of flows) {
    t0 = Math.min(t0, f.t0, f.t1);
    t1 = Math.max(t1, f.t0, f.t1);
    widen(f.iter, Math.min(f.t0, f.t1), Math.max(f.t0, f.t1));
  }
  if (!(t0 <= t1)) [t0, t1] = [0, 1];

  const graphs = Array.isArray(rill.graphs) ? rill.graphs : [];
  const nodeInfo = new Map();
  graphs.forEach((g, gi) => {
    for (const n of g.nodes || []) nodeInfo.set(`${num(g.id, gi)}:${n.id}`, n);
  });

  const iterations = [...iterSpan.keys()].sort((a, b) => a - b);
  const kinds = [...new Set(flows.map((f) => f.kind))].sort();
  return {
    raw: obj, rill, fileName,
    title: rill.node || fileName || 'Rill trace',
    processes: procList,
    lanes: procList.flatMap((p) => p.lanes),
    laneByTid: new Map([...lanes.values()].map((l) => [l.tid, l])),
    slices, flows, iterations, iterSpan, iterSlice, kinds, t0, t1,
    graphs, nodeInfo,
    totals: {
      events: nonMeta,
      iterations: iterSlice.size || iterations.filter((i) => i >= 0).length,
      dropped: num(rill.dropped_events, 0),
      unmatched: num(rill.unmatched_messages, 0),
      messages: flows.length,
    },
  };
}

export function graphIdOf(model, gi) {
  const g = model.graphs[gi];
  return num(g && g.id, gi);
}

// The node a slice ran, from rill.graphs (null if unknown).
export function nodeOf(model, slice) {
  if (slice.node === null) return null;
  return model.nodeInfo.get(`${slice.graph}:${slice.node}`) || null;
}

// filter: {iteration: number|null, hiddenPids: Set, hiddenKinds: Set}
export function filterModel(model, filter) {
  const it = filter.iteration;
  const pidOn = (pid) => !filter.hiddenPids.has(pid);
  const lanes = model.lanes.filter((l) => pidOn(l.pid));
  const slices = model.slices.filter((s) => pidOn(s.lane.pid) && (it === null || s.iter === it));
  const flows = model.flows.filter(
    (f) => !filter.hiddenKinds.has(f.kind) && pidOn(f.from.pid) && pidOn(f.to.pid) && (it === null || f.iter === it),
  );
  return { lanes, slices, flows };
}

// Per-node kernel statistics of one graph, over the (filtered) slices.
// A collective's chunks carry its node id too; a node's own lane wins when known.
export function nodeStats(model, gi, slices) {
  const gid = graphIdOf(model, gi);
  const graph = model.graphs[gi];
  const tidOf = new Map((graph.nodes || []).map((n) => [n.id, n.tid ?? n.lane]));
  const stats = new Map();
  for (const s of slices) {
    if (s.graph !== gid || s.node === null || s.cat === 'wait' || s.cat === 'iteration') continue;
    const own = tidOf.get(s.node) === s.lane.tid;
    let st = stats.get(s.node);
    if (!st) stats.set(s.node, (st = { count: 0, total: 0, min: Infinity, max: 0, mean: 0, ownOnly: false }));
    if (own && !st.ownOnly) Object.assign(st, { count: 0, total: 0, min: Infinity, max: 0, ownOnly: true });
    if (st.ownOnly && !own) continue;
    st.count++;
    st.total += s.dur;
    st.min = Math.min(st.min, s.dur);
    st.max = Math.max(st.max, s.dur);
  }
  for (const st of stats.values()) st.mean = st.total / st.count;
  return stats;
}
