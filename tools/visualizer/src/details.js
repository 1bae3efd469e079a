// The details panel: what a clicked slice, message or graph node is.
// Every row is <tr data-key=KEY> so tests and users can find a field.
import { html, fmtUs, fmtDur, fmtBytes } from './util.js';
import { nodeOf } from './trace.js';

export class Details {
  constructor(root, { onPick }) {
    this.root = root;
    this.onPick = onPick;
    root.classList.add('details');
    this.clear();
  }

  clear(hint = 'Click a box or an arrow to see what it is.') {
    this.root.textContent = '';
    this.root.dataset.kind = '';
    html('div', { class: 'details-empty' }, this.root, hint);
  }

  begin(kind, title, badge) {
    this.root.textContent = '';
    this.root.dataset.kind = kind;
    const h = html('div', { class: 'details-title' }, this.root);
    html('span', { class: `badge badge-${kind}` }, h, badge);
    html('span', { class: 'details-name' }, h, title);
    return html('table', { class: 'kv' }, this.root);
  }

  row(table, key, value, label = key) {
    if (value === undefined || value === null || value === '') return;
    const tr = html('tr', { 'data-key': key }, table);
    html('th', {}, tr, label);
    html('td', {}, tr, String(value));
  }

  args(args, skip = []) {
    const keys = Object.keys(args || {}).filter((k) => !skip.includes(k));
    if (!keys.length) return;
    html('div', { class: 'details-section' }, this.root, 'args');
    const t = html('table', { class: 'kv args' }, this.root);
    for (const k of keys) {
      const v = args[k];
      this.row(t, `arg-${k}`, typeof v === 'object' ? JSON.stringify(v) : v, k);
    }
  }

  showSlice(model, s, related) {
    const a = s.ev.args || {};
    const node = nodeOf(model, s);
    const t = this.begin('slice', s.name, s.cat);
    this.row(t, 'name', s.name);
    this.row(t, 'cat', s.cat, 'category');
    this.row(t, 'type', a.type ?? (node && node.type));
    if (a.what !== undefined) this.row(t, 'what', a.what, 'waits for');
    this.row(t, 'lane', `${s.lane.name} (tid ${s.lane.tid})`);
    this.row(t, 'process', procName(model, s.lane.pid));
    this.row(t, 'place', a.place ?? (node && node.place));
    this.row(t, 'stream', a.stream ?? (node && node.stream));
    this.row(t, 'iteration', s.iter);
    if (s.node !== null) this.row(t, 'node', `${s.node} (graph ${s.graph})`);
    if (node) this.row(t, 'role', node.role);
    this.row(t, 'start', fmtUs(s.ts));
    this.row(t, 'duration', fmtDur(s.dur));
    this.row(t, 'end', fmtUs(s.end));
    if (related && related.length) {
      html('div', { class: 'details-section' }, this.root, `messages (${related.length})`);
      const ul = html('ul', { class: 'msg-list' }, this.root);
      for (const f of related.slice(0, 60)) {
        const out = f.from === s.lane && f.t0 >= s.ts - 0.002 && f.t0 <= s.end + 0.002;
        const li = html('li', {}, ul);
        const link = html('a', { href: '#', 'data-id': f.id }, li,
          `${out ? '→' : '←'} ${f.kind} ${out ? 'to' : 'from'} ${(out ? f.to : f.from).name}${varOf(f) ? ` (${varOf(f)})` : ''}`);
        link.addEventListener('click', (e) => {
          e.preventDefault();
          this.onPick(f);
        });
      }
      if (related.length > 60) html('li', {}, ul, `… and ${related.length - 60} more`);
    }
    this.args(a);
  }

  showFlow(model, f) {
    const a = f.s.ev.args || {};
    const t = this.begin('arrow', `${f.kind} message`, 'message');
    this.row(t, 'kind', f.kind);
    this.row(t, 'id', f.id);
    this.row(t, 'from', `${f.from.name} (tid ${f.from.tid})`);
    this.row(t, 'to', `${f.to.name} (tid ${f.to.tid})`);
    if (f.from.pid !== f.to.pid) this.row(t, 'processes', `${procName(model, f.from.pid)} → ${procName(model, f.to.pid)}`);
    this.row(t, 'from_node', a.from_node, 'from node');
    this.row(t, 'to_node', a.to_node, 'to node');
    this.row(t, 'var', a.var);
    if (typeof a.bytes === 'number') this.row(t, 'bytes', fmtBytes(a.bytes));
    this.row(t, 'iteration', f.iter);
    this.row(t, 'sent', fmtUs(f.t0));
    this.row(t, 'received', fmtUs(f.t1));
    this.row(t, 'latency', fmtDur(f.t1 - f.t0));
    this.args(a, ['from', 'to', 'from_node', 'to_node', 'var', 'bytes', 'iteration']);
  }

  showNode(model, gi, node, st) {
    const t = this.begin('node', `${node.type} #${node.id}`, 'node');
    this.row(t, 'type', node.type);
    this.row(t, 'id', node.id, 'node');
    this.row(t, 'kind', node.kind);
    this.row(t, 'role', node.role);
    this.row(t, 'place', node.place);
    this.row(t, 'stream', node.stream);
    this.row(t, 'op', node.op);
    const lane = model.laneByTid.get(node.tid ?? node.lane);
    if (lane) this.row(t, 'lane', `${lane.name} (tid ${lane.tid})`);
    this.row(t, 'count', st ? st.count : 0, 'kernels');
    if (st) {
      this.row(t, 'mean', fmtDur(st.mean));
      this.row(t, 'total', fmtDur(st.total));
      this.row(t, 'min', fmtDur(st.min));
      this.row(t, 'max', fmtDur(st.max));
    } else {
      html('div', { class: 'details-empty' }, this.root, 'No kernel of this node in the trace (or the filter).');
    }
  }
}

function varOf(f) {
  const a = f.s.ev.args || {};
  return a.var || '';
}

function procName(model, pid) {
  const p = model.processes.find((q) => q.pid === pid);
  return p ? p.name : `pid ${pid}`;
}
