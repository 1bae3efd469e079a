// The graph view: rill.graphs[g] laid out as a DAG by dagre, each node
// coloured by its mean kernel time in the (filtered) trace.
import { Graph, layout } from '@dagrejs/dagre';
import { select } from 'd3-selection';
import { zoom, zoomIdentity } from 'd3-zoom';
import { scaleSequential, scaleSequentialLog } from 'd3-scale';
import { interpolateYlOrRd } from 'd3-scale-chromatic';
import { svg, html, fmtTime } from './util.js';
import { nodeStats } from './trace.js';

const NODE_H = 36;

export class GraphView {
  constructor(root, { onSelectNode }) {
    this.root = root;
    this.onSelectNode = onSelectNode;
    root.classList.add('graph-view');
    this.svg = svg('svg', { class: 'graph-svg' }, root);
    this.legend = html('div', { class: 'legend' }, root);
    this.empty = html('div', { class: 'graph-empty' }, root);
    this.layer = null;
    this.gi = 0;
    this.layouts = new Map();
    this.zoom = zoom()
      .scaleExtent([0.02, 4])
      .on('zoom', (e) => this.layer && this.layer.setAttribute('transform', e.transform));
    select(this.svg).call(this.zoom).on('dblclick.zoom', null);
  }

  setModel(model) {
    this.model = model;
    this.layouts.clear();
    this.gi = 0;
    this.drawnGi = null;
    this.slices = model.slices;
  }

  setGraph(gi) {
    this.gi = gi;
    this.selectedId = null;
    this.render();
  }

  setSlices(slices) {
    this.slices = slices;
    if (this.drawnGi !== null) this.recolor();
  }

  visible() {
    return this.root.offsetParent !== null;
  }

  render() {
    const graph = this.model.graphs[this.gi];
    this.svg.textContent = '';
    this.legend.textContent = '';
    this.drawnGi = null;
    if (!graph) {
      this.empty.textContent = 'This trace has no graph (rill.graphs is empty).';
      this.empty.style.display = 'block';
      return;
    }
    this.empty.style.display = 'none';
    const lay = this.layoutOf(this.gi);
    const defs = svg('defs', {}, this.svg);
    const m = svg('marker', { id: 'g-arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto' }, defs);
    svg('path', { d: 'M0,1 L10,5 L0,9 z', class: 'edge-head' }, m);
    this.layer = svg('g', { class: 'graph-layer' }, this.svg);
    const edges = svg('g', { class: 'edges' }, this.layer);
    for (const e of lay.edges) {
      const p = svg('path', { class: 'edge', 'data-kind': e.kind || 'data', d: e.d, 'marker-end': 'url(#g-arrow)' }, edges);
      svg('title', {}, p).textContent = `${e.from} → ${e.to}${e.var ? `: ${e.var}` : ''} (${e.kind || 'data'})`;
    }
    const nodes = svg('g', { class: 'nodes' }, this.layer);
    this.nodeEls = new Map();
    for (const n of lay.nodes) {
      const g = svg('g', { class: 'node', 'data-id': n.node.id, 'data-role': n.node.role || '', transform: `translate(${n.x - n.w / 2},${n.y - NODE_H / 2})` }, nodes);
      svg('rect', { width: n.w, height: NODE_H, rx: 5 }, g);
      svg('text', { x: n.w / 2, y: 15, class: 'node-type' }, g).textContent = n.node.type;
      svg('text', { x: n.w / 2, y: 29, class: 'node-sub' }, g).textContent = n.sub;
      g.addEventListener('click', () => this.pick(n.node));
      this.nodeEls.set(n.node.id, g);
    }
    this.drawnGi = this.gi;
    this.recolor();
    this.fit();
  }

  layoutOf(gi) {
    if (this.layouts.has(gi)) return this.layouts.get(gi);
    const graph = this.model.graphs[gi];
    const g = new Graph({ multigraph: true });
    g.setGraph({ rankdir: 'TB', nodesep: 16, ranksep: 30, edgesep: 8, marginx: 12, marginy: 12 });
    g.setDefaultEdgeLabel(() => ({}));
    const info = new Map();
    for (const n of graph.nodes || []) {
      const sub = [`#${n.id}`, n.place >= 0 ? `p${n.place}` : '', n.stream >= 0 ? `s${n.stream}` : ''].filter(Boolean).join(' · ');
      const w = Math.max(70, Math.max(String(n.type).length * 7.2, sub.length * 6) + 18);
      g.setNode(String(n.id), { width: w, height: NODE_H });
      info.set(String(n.id), { node: n, sub, w });
    }
    (graph.edges || []).forEach((e, i) => {
      if (info.has(String(e.from)) && info.has(String(e.to))) g.setEdge(String(e.from), String(e.to), { e }, `e${i}`);
    });
    layout(g);
    const nodes = g.nodes().map((id) => {
      const d = g.node(id);
      return { ...info.get(id), x: d.x, y: d.y };
    });
    const edges = g.edges().map((ref) => {
      const d = g.edge(ref);
      const pts = d.points || [];
      if (pts.length > 3) return { ...d.e, d: basisPath(pts) };
      // between adjacent ranks dagre may bend an edge far aside: go straight down
      const a = g.node(ref.v);
      const b = g.node(ref.w);
      const y0 = a.y + NODE_H / 2;
      const y1 = b.y - NODE_H / 2;
      const m = (y0 + y1) / 2;
      return { ...d.e, d: `M${a.x.toFixed(1)},${y0}C${a.x.toFixed(1)},${m} ${b.x.toFixed(1)},${m} ${b.x.toFixed(1)},${y1}` };
    });
    const out = { nodes, edges, width: g.graph().width || 100, height: g.graph().height || 100 };
    this.layouts.set(gi, out);
    return out;
  }

  fit() {
    const lay = this.layouts.get(this.gi);
    if (!lay) return;
    // the legend keeps the top right corner: fit the graph beside it
    const W = Math.max((this.svg.clientWidth || 800) - this.legend.offsetWidth - 24, 200);
    const H = this.svg.clientHeight || 600;
    const k = Math.min(1.5, Math.min(W / lay.width, H / lay.height) * 0.97);
    const t = zoomIdentity.translate((W - lay.width * k) / 2, Math.max(6, (H - lay.height * k) / 2)).scale(k);
    select(this.svg).call(this.zoom.transform, t);
  }

  recolor() {
    const gi = this.drawnGi;
    this.stats = nodeStats(this.model, gi, this.slices);
    const means = [...this.stats.values()].map((s) => s.mean).filter((v) => v > 0);
    const lo = means.length ? Math.min(...means) : 1;
    const hi = means.length ? Math.max(...means) : 1;
    // a log scale when kernel times span more than a decade
    const useLog = hi / lo > 10;
    const scale = (useLog ? scaleSequentialLog : scaleSequential)(interpolateYlOrRd).domain(hi > lo ? [lo, hi] : [lo * 0.9 || 0.001, hi * 1.1 || 1]);
    for (const [id, g] of this.nodeEls) {
      const st = this.stats.get(id);
      const rect = g.firstChild;
      if (st && st.mean > 0) {
        const c = scale(st.mean);
        rect.style.fill = c;
        g.classList.remove('not-run');
        g.classList.toggle('dark', (useLog ? Math.log(st.mean / lo) / Math.log(hi / lo || 2) : (st.mean - lo) / (hi - lo || 1)) > 0.62);
        g.dataset.mean = st.mean.toFixed(3);
      } else {
        rect.style.fill = '';
        g.classList.add('not-run');
        g.classList.remove('dark');
        delete g.dataset.mean;
      }
      g.classList.toggle('selected', id === this.selectedId);
    }
    this.drawLegend(scale, lo, hi, useLog, means.length);
    if (this.selectedId !== null && this.selectedId !== undefined) {
      const n = (this.model.graphs[gi].nodes || []).find((q) => q.id === this.selectedId);
      if (n) this.onSelectNode(gi, n, this.stats.get(n.id));
    }
  }

  drawLegend(scale, lo, hi, useLog, n) {
    this.legend.textContent = '';
    html('div', { class: 'legend-title' }, this.legend, `mean kernel time${useLog ? ' (log scale)' : ''}`);
    if (!n) {
      html('div', { class: 'legend-note' }, this.legend, 'no kernels in the current filter');
    } else {
      const stops = [];
      for (let i = 0; i <= 10; i++) {
        const v = useLog ? lo * Math.pow(hi / lo, i / 10) : lo + ((hi - lo) * i) / 10;
        stops.push(`${scale(v)} ${i * 10}%`);
      }
      html('div', { class: 'legend-bar', style: `background: linear-gradient(to right, ${stops.join(', ')})` }, this.legend);
      const ticks = html('div', { class: 'legend-ticks' }, this.legend);
      html('span', {}, ticks, fmtTime(lo));
      html('span', {}, ticks, fmtTime(useLog ? Math.sqrt(lo * hi) : (lo + hi) / 2));
      html('span', {}, ticks, fmtTime(hi));
    }
    const nr = html('div', { class: 'legend-note' }, this.legend);
    html('span', { class: 'swatch not-run-swatch' }, nr);
    nr.append(' not run · ');
    html('span', { class: 'swatch control-swatch' }, nr);
    nr.append(' control edge');
  }

  pick(node) {
    this.selectedId = node.id;
    for (const [id, g] of this.nodeEls) g.classList.toggle('selected', id === node.id);
    this.onSelectNode(this.drawnGi, node, this.stats.get(node.id));
  }
}

// A smooth path through dagre's edge points: a uniform cubic B-spline that
// starts and ends on the end points (d3-shape's curveBasis).
function basisPath(pts) {
  if (pts.length < 3) return pts.map((p, i) => `${i ? 'L' : 'M'}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join('');
  const f = (v) => v.toFixed(1);
  const p = [pts[0], pts[0], ...pts, pts[pts.length - 1]];
  let d = `M${f(pts[0].x)},${f(pts[0].y)}`;
  for (let i = 1; i + 2 < p.length; i++) {
    const [a, b, c] = [p[i], p[i + 1], p[i + 2]];
    d += `C${f((2 * a.x + b.x) / 3)},${f((2 * a.y + b.y) / 3)} ${f((a.x + 2 * b.x) / 3)},${f((a.y + 2 * b.y) / 3)} ` +
      `${f((a.x + 4 * b.x + c.x) / 6)},${f((a.y + 4 * b.y + c.y) / 6)}`;
  }
  const last = pts[pts.length - 1];
  return `${d}L${f(last.x)},${f(last.y)}`;
}
