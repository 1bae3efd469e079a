// The timeline: one row per lane grouped by process, slices as boxes,
// messages as arrows; wheel zooms, drag pans.
//
// Lane names are one SVG, the plot another, three screens wide (the view is
// its middle third) on a composited layer: while the view moves, a frame only
// transforms that layer (cheap however much is drawn), and the exact layout
// follows when it stops. Big traces then also choose again what to draw.
import { scaleLinear } from 'd3-scale';
import { svg, html, tickFormatter, fmtTime } from './util.js';
import { nodeOf } from './trace.js';

const LABEL_W = 210;
const ROW_H = 20;
const HDR_H = 22;
const AXIS_H = 26;
export const DRAW_LIMIT = 20000; // slices + arrows drawn at once
const LIVE_LIMIT = 3000; // up to this many elements, every frame lays out exactly
const MIN_SPAN = 0.01; // µs: 10 ns across the view
const SETTLE_MS = 150;

const KIND_COLORS = { data: '#2b5d9b', control: '#7d8590', wake: '#0f9d8a', chunk: '#8e44ad', network: '#d35400' };
const EXTRA_COLORS = ['#b8860b', '#c0392b', '#2c3e50', '#16a085'];

export function kindColor(kinds, kind) {
  return KIND_COLORS[kind] || EXTRA_COLORS[Math.max(0, kinds.indexOf(kind)) % EXTRA_COLORS.length];
}

export class Timeline {
  constructor(root, { onSelect }) {
    this.onSelect = onSelect;
    root.classList.add('timeline');
    this.axisSvg = svg('svg', { class: 'tl-axis', height: AXIS_H }, root);
    this.scroller = html('div', { class: 'tl-scroll' }, root);
    const rows = html('div', { class: 'tl-rows' }, this.scroller);
    this.labelSvg = svg('svg', { class: 'tl-labels', width: LABEL_W }, rows);
    this.plotBox = html('div', { class: 'tl-plot' }, rows);
    this.svg = svg('svg', { class: 'tl-svg' }, this.plotBox);
    this.tooltip = html('div', { class: 'tooltip' }, document.body);
    this.statusEl = null;
    this.model = null;
    this.data = { lanes: [], slices: [], flows: [] };
    this.view = [0, 1];
    this.laidOut = [0, 1];
    this.drawn = { slices: [], flows: [] };
    this.laneGroups = new Map();
    this.selected = null;
    this.P = 600; // plot width in pixels
    this.pending = 0;
    this.settleTimer = 0;
    this.note = '';
    this.bindInput();
    new ResizeObserver(() => this.resize()).observe(this.scroller);
  }

  setStatusElement(el) {
    this.statusEl = el;
  }

  // data: {lanes, slices, flows} after filtering; span: the time range "fit"
  // shows; view: a time window to keep instead of fitting the span.
  setData(model, data, span, view = null) {
    this.model = model;
    this.data = data;
    this.span = span;
    this.windowed = data.slices.length + data.flows.length > DRAW_LIMIT;
    this.view = view || this.padded(span);
    this.build();
  }

  padded([t0, t1]) {
    const pad = Math.max((t1 - t0) * 0.02, MIN_SPAN);
    return [t0 - pad, t1 + pad];
  }

  fit() {
    this.setView(this.padded(this.span));
  }

  // The time at a pixel of the plot (0 = its left edge) in the current view.
  timeAt(px) {
    const [t0, t1] = this.view;
    return t0 + (px / this.P) * (t1 - t0);
  }

  zoomBy(factor, atPx = this.P / 2) {
    const [t0, t1] = this.view;
    const t = this.timeAt(atPx);
    const span = Math.min(Math.max((t1 - t0) * factor, MIN_SPAN), this.maxSpan());
    const left = t - ((t - t0) / (t1 - t0)) * span;
    this.setView([left, left + span]);
  }

  panBy(dt) {
    this.setView([this.view[0] + dt, this.view[1] + dt]);
  }

  maxSpan() {
    return Math.max((this.model.t1 - this.model.t0) * 1.5, 1);
  }

  setView(view) {
    this.view = view;
    this.schedule();
  }

  // One update per frame: an exact layout when little is drawn, else a
  // transform of the plot and the layout once the view stops moving.
  schedule() {
    const many = this.drawn.slices.length + this.drawn.flows.length > LIVE_LIMIT;
    if (!this.pending) {
      this.pending = requestAnimationFrame(() => {
        this.pending = 0;
        if (many) this.preview();
        else this.position();
      });
    }
    if (many || this.windowed) {
      clearTimeout(this.settleTimer);
      this.settleTimer = setTimeout(() => (this.windowed ? this.drawItems() : this.position()), SETTLE_MS);
    }
  }

  preview() {
    const [r0, r1] = this.laidOut;
    const [v0, v1] = this.view;
    const P = this.P;
    const a = (r1 - r0) / (v1 - v0);
    const b = P * (1 - a) + ((r0 - v0) / (v1 - v0)) * P;
    this.svg.style.transform = `translateX(${b.toFixed(2)}px) scaleX(${a.toFixed(6)})`;
    this.drawAxis(this.scale(this.view));
  }

  // Plot x of time t: the view [t0, t1] is the SVG's middle third.
  scale([t0, t1]) {
    return scaleLinear().domain([t0, t1]).range([this.P, 2 * this.P]);
  }

  resize() {
    const P = Math.max(this.plotBox.clientWidth, 100);
    if (P === this.P) return;
    this.P = P;
    if (this.model) this.build();
  }

  // -- building ---------------------------------------------------------------

  build() {
    const { lanes } = this.data;
    const P = this.P;
    this.svg.textContent = '';
    this.labelSvg.textContent = '';

    // rows: a header per process, then its lanes
    let y = 0;
    const rows = [];
    let lastPid = null;
    for (const l of lanes) {
      if (l.pid !== lastPid) {
        rows.push({ header: this.model.processes.find((q) => q.pid === l.pid), y, h: HDR_H });
        y += HDR_H;
        lastPid = l.pid;
      }
      rows.push({ lane: l, y, h: ROW_H * l.depth });
      l.y = y;
      y += ROW_H * l.depth;
    }
    this.height = Math.max(y, 40);
    for (const [e, w] of [[this.svg, 3 * P], [this.labelSvg, LABEL_W]]) {
      e.setAttribute('width', w);
      e.setAttribute('height', this.height);
    }
    this.svg.style.left = `${-P}px`;

    const defs = svg('defs', {}, this.svg);
    const hatch = svg('pattern', { id: 'wait-hatch', width: 6, height: 6, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' }, defs);
    svg('rect', { width: 6, height: 6, fill: '#f6d5d3' }, hatch);
    svg('line', { x1: 0, y1: 0, x2: 0, y2: 6, stroke: '#d9544f', 'stroke-width': 2.5 }, hatch);
    let css = '';
    this.model.kinds.forEach((k, i) => {
      const color = kindColor(this.model.kinds, k);
      const m = svg('marker', { id: `mk-${i}`, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' }, defs);
      svg('path', { d: 'M0,1 L10,5 L0,9 z', fill: color }, m);
      css += `.arrow[data-kind="${CSS.escape(k)}"]{stroke:${color};marker-end:url(#mk-${i})}`;
    });
    svg('style', {}, this.svg).textContent = css;

    const bg = svg('g', { class: 'tl-bg' }, this.svg);
    const lbg = svg('g', { class: 'tl-bg' }, this.labelSvg);
    rows.forEach((r, i) => {
      const cls = r.header ? 'proc-bg' : i % 2 ? 'row-odd' : 'row-even';
      svg('rect', { x: 0, y: r.y, width: 3 * P, height: r.h, class: cls }, bg);
      svg('rect', { x: 0, y: r.y, width: LABEL_W, height: r.h, class: r.header ? 'proc-bg' : 'label-bg' }, lbg);
    });
    this.grid = svg('g', { class: 'tl-grid' }, this.svg);
    this.laneGroups = new Map();
    for (const l of lanes) {
      const g = svg('g', { class: 'lane', 'data-tid': l.tid, 'data-pid': l.pid, transform: `translate(0,${l.y})` }, this.svg);
      this.laneGroups.set(l, g);
    }
    this.sliceLabels = svg('g', { class: 'slice-labels' }, this.svg);
    this.arrowLayer = svg('g', { class: 'arrows' }, this.svg);

    for (const r of rows) {
      if (r.header) {
        const t = svg('text', { x: 8, y: r.y + 15, class: 'proc-name' }, this.labelSvg);
        t.textContent = clipText(`${r.header.name} · pid ${r.header.pid}`, LABEL_W - 12);
        svg('title', {}, t).textContent = `${r.header.name} (pid ${r.header.pid}, ${r.header.lanes.length} lanes)`;
      } else {
        const t = svg('text', { x: 18, y: r.y + 14, class: 'lane-name' }, this.labelSvg);
        t.textContent = clipText(r.lane.name, LABEL_W - 24);
        svg('title', {}, t).textContent = `${r.lane.name} (tid ${r.lane.tid}${r.lane.kind ? `, ${r.lane.kind}` : ''})`;
      }
    }
    this.drawItems();
  }

  // Creates the slice and arrow elements: all of them, or for big traces
  // those in the visible window (the longest first when still too many).
  drawItems() {
    const { slices, flows } = this.data;
    let ds = slices;
    let df = flows;
    this.note = '';
    if (this.windowed) {
      const [t0, t1] = this.view;
      ds = slices.filter((s) => s.end >= t0 && s.ts <= t1);
      df = flows.filter((f) => Math.max(f.t0, f.t1) >= t0 && Math.min(f.t0, f.t1) <= t1);
      const inView = ds.length + df.length;
      if (inView > DRAW_LIMIT) {
        // slices get up to 3/4 of the budget, longest first; arrows the rest, spread evenly
        const sliceBudget = Math.min(ds.length, DRAW_LIMIT - Math.min(df.length, DRAW_LIMIT / 4));
        ds = ds.slice().sort((a, b) => b.dur - a.dur).slice(0, sliceBudget);
        df = spread(df, DRAW_LIMIT - ds.length);
        this.note = `big trace: drawing ${ds.length + df.length} of the ${inView} slices and messages in view (longest slices first); zoom in for all`;
      } else {
        this.note = `big trace (${slices.length + flows.length} slices and messages): drawing the ${inView} in view`;
      }
    }
    for (const g of this.laneGroups.values()) g.textContent = '';
    this.arrowLayer.textContent = '';
    for (const s of slices) s.el = null;
    for (const f of flows) f.el = null;
    for (const s of ds) {
      const g = this.laneGroups.get(s.lane);
      if (!g) continue;
      const node = nodeOf(this.model, s);
      const attrs = { class: 'slice', 'data-cat': s.cat, 'data-idx': s.idx, y: s.depth * ROW_H + 2, height: ROW_H - 4 };
      const role = s.name === 'allreduce chunk' || (node && node.kind === 'collective') ? 'collective' : node && node.kind === 'feed' ? 'feed' : node && node.role;
      if (role) attrs['data-role'] = role;
      s.el = svg('rect', attrs, g);
      s.el.__item = s;
    }
    for (const f of df) {
      f.el = svg('path', { class: 'arrow', 'data-id': f.id, 'data-kind': f.kind }, this.arrowLayer);
      f.el.__item = f;
    }
    this.drawn = { slices: ds, flows: df };
    if (this.selected) this.highlight(this.selected);
    this.position();
  }

  // Lays out what is drawn for the current view.
  position() {
    const P = this.P;
    const x = this.scale(this.view);
    this.laidOut = this.view.slice();
    this.svg.style.transform = '';
    const lo = -2;
    const hi = 3 * P + 2;
    const cx = (t) => Math.max(lo - P, Math.min(hi + P, x(t)));
    for (const s of this.drawn.slices) {
      const a = Math.max(lo, x(s.ts));
      const b = Math.min(hi, x(s.end));
      if (b < lo || a > hi) {
        s.el.setAttribute('width', 0);
        continue;
      }
      s.el.setAttribute('x', a.toFixed(1));
      s.el.setAttribute('width', Math.max(b - a, 1).toFixed(1));
    }
    for (const f of this.drawn.flows) {
      const y0 = f.from.y + ROW_H / 2;
      const y1 = f.to.y + ROW_H / 2;
      f.el.setAttribute('d', `M${cx(f.t0).toFixed(1)},${y0}L${cx(f.t1).toFixed(1)},${y1}`);
    }
    this.drawLabels(x);
    this.drawAxis(x);
    this.updateStatus();
  }

  // Names inside the slices wide enough for them, on their part in view.
  drawLabels(x) {
    this.sliceLabels.textContent = '';
    let n = 0;
    const lo = this.P;
    const hi = this.P * 2;
    for (const s of this.drawn.slices) {
      const a = Math.max(lo, x(s.ts));
      const b = Math.min(hi, x(s.end));
      if (b - a < 36 || n >= 4000) continue;
      const t = svg('text', { x: (a + 4).toFixed(1), y: s.lane.y + s.depth * ROW_H + 14, class: `slice-label cat-${s.cat}` }, this.sliceLabels);
      t.textContent = clipText(s.name, b - a - 8);
      n++;
    }
  }

  drawAxis(x) {
    const P = this.P;
    const W = LABEL_W + P;
    const ticks = x.ticks(Math.max(2, Math.floor(P / 110)));
    const step = ticks.length > 1 ? ticks[1] - ticks[0] : this.view[1] - this.view[0];
    const fmt = tickFormatter(step);
    this.axisSvg.setAttribute('width', W);
    this.axisSvg.textContent = '';
    svg('rect', { x: 0, y: 0, width: W, height: AXIS_H, class: 'axis-bg' }, this.axisSvg);
    svg('text', { x: 8, y: 17, class: 'axis-span' }, this.axisSvg).textContent = `view: ${fmtTime(this.view[1] - this.view[0])}`;
    for (const t of ticks) {
      const px = LABEL_W + x(t) - P;
      if (px < LABEL_W || px > W) continue;
      svg('line', { x1: px, x2: px, y1: AXIS_H - 6, y2: AXIS_H, class: 'tick' }, this.axisSvg);
      svg('text', { x: px + 3, y: 15, class: 'tick-label' }, this.axisSvg).textContent = fmt(t);
    }
    svg('line', { x1: 0, x2: W, y1: AXIS_H - 0.5, y2: AXIS_H - 0.5, class: 'axis-line' }, this.axisSvg);
    if (this.svg.style.transform) return; // a preview keeps the laid-out grid
    // grid lines across the whole SVG, so that a preview does not run out of them
    this.grid.textContent = '';
    const [g0, g1] = x.domain();
    for (let t = Math.ceil((2 * g0 - g1) / step) * step; t <= 2 * g1 - g0; t += step) {
      const px = x(t);
      svg('line', { x1: px, x2: px, y1: 0, y2: this.height, class: 'grid-line' }, this.grid);
    }
  }

  updateStatus() {
    const st = this.stats();
    document.body.dataset.lanes = st.lanes;
    document.body.dataset.slices = st.slices;
    document.body.dataset.arrows = st.arrows;
    if (!this.statusEl) return;
    const base = `${st.lanes} lanes · ${st.slices} slices · ${st.arrows} messages drawn`;
    this.statusEl.textContent = this.note ? `${base} — ${this.note}` : base;
    this.statusEl.classList.toggle('warn', !!this.note);
  }

  stats() {
    return { lanes: this.laneGroups.size, slices: this.drawn.slices.length, arrows: this.drawn.flows.length };
  }

  // -- selection ----------------------------------------------------------------

  highlight(item) {
    for (const e of this.svg.querySelectorAll('.selected, .related')) e.classList.remove('selected', 'related');
    this.selected = item;
    this.svg.classList.toggle('has-selection', !!item);
    if (!item) return;
    if (item.el) item.el.classList.add('selected');
    if (isSlice(item)) for (const f of this.related(item)) if (f.el) f.el.classList.add('related');
  }

  // Messages sent from or received by a slice.
  related(s) {
    const eps = 0.002;
    return this.data.flows.filter(
      (f) => (f.from === s.lane && f.t0 >= s.ts - eps && f.t0 <= s.end + eps) || (f.to === s.lane && f.t1 >= s.ts - eps && f.t1 <= s.end + eps),
    );
  }

  select(item, { reveal = false } = {}) {
    if (reveal && item) this.reveal(item);
    this.highlight(item);
    this.onSelect(item);
  }

  // Pans (zooming out if needed) and scrolls so that an item is in view.
  reveal(item) {
    const a = isSlice(item) ? item.ts : Math.min(item.t0, item.t1);
    const b = isSlice(item) ? item.end : Math.max(item.t0, item.t1);
    const [t0, t1] = this.view;
    if (a < t0 || b > t1) {
      const span = Math.max(t1 - t0, (b - a) * 1.5);
      const mid = (a + b) / 2;
      this.view = [mid - span / 2, mid + span / 2];
      if (this.windowed) this.drawItems();
      else this.position();
    }
    const lane = isSlice(item) ? item.lane : item.from;
    const sc = this.scroller;
    if (lane.y < sc.scrollTop || lane.y > sc.scrollTop + sc.clientHeight - ROW_H) {
      sc.scrollTop = Math.max(0, lane.y - sc.clientHeight / 3);
    }
  }

  // Arrows are thin: a click within 5 px of one picks it.
  nearestArrow(px, py) {
    let best = null;
    let bestD = 5;
    for (const f of this.drawn.flows) {
      const m = /M([-\d.]+),([-\d.]+)L([-\d.]+),([-\d.]+)/.exec(f.el.getAttribute('d'));
      if (!m) continue;
      const d = segDist(px, py, +m[1], +m[2], +m[3], +m[4]);
      if (d < bestD) {
        bestD = d;
        best = f;
      }
    }
    return best;
  }

  // -- input ----------------------------------------------------------------------

  bindInput() {
    const sc = this.scroller;
    const plotX = (e) => e.clientX - this.plotBox.getBoundingClientRect().left;
    sc.addEventListener(
      'wheel',
      (e) => {
        if (!this.model) return;
        e.preventDefault();
        const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? 400 : 1;
        if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
          const d = (e.shiftKey ? e.deltaY || e.deltaX : e.deltaX) * unit;
          this.panBy((d / this.P) * (this.view[1] - this.view[0]));
        } else {
          this.zoomBy(Math.exp(e.deltaY * unit * 0.0015), Math.max(0, plotX(e)));
        }
      },
      { passive: false },
    );
    let drag = null;
    sc.addEventListener('pointerdown', (e) => {
      if (e.button !== 0 || !this.model) return;
      drag = { x: e.clientX, y: e.clientY, view: this.view.slice(), top: sc.scrollTop, moved: false, id: e.pointerId };
    });
    sc.addEventListener('pointermove', (e) => {
      if (!drag) return this.hover(e);
      const dx = e.clientX - drag.x;
      const dy = e.clientY - drag.y;
      if (!drag.moved && Math.hypot(dx, dy) > 3) {
        drag.moved = true;
        sc.setPointerCapture(drag.id);
        sc.classList.add('dragging');
        this.hideTooltip();
      }
      if (drag.moved) {
        const dt = (dx / this.P) * (drag.view[1] - drag.view[0]);
        this.setView([drag.view[0] - dt, drag.view[1] - dt]);
        sc.scrollTop = drag.top - dy;
      }
    });
    const end = () => {
      if (drag && drag.moved) {
        sc.classList.remove('dragging');
        this.suppressClick = true;
        setTimeout(() => (this.suppressClick = false), 0);
      }
      drag = null;
    };
    sc.addEventListener('pointerup', end);
    sc.addEventListener('pointercancel', end);
    sc.addEventListener('pointerleave', () => this.hideTooltip());
    sc.addEventListener('click', (e) => {
      if (this.suppressClick || !this.model) return;
      const el = e.target.closest('.slice, .arrow');
      let item = el ? el.__item : null;
      if (!item && this.svg.contains(e.target)) {
        const r = this.svg.getBoundingClientRect();
        item = this.nearestArrow(e.clientX - r.left, e.clientY - r.top);
      }
      this.select(item || null);
    });
  }

  hover(e) {
    const el = e.target.closest && e.target.closest('.slice, .arrow');
    if (!el || !el.__item) return this.hideTooltip();
    const it = el.__item;
    this.tooltip.textContent = isSlice(it)
      ? `${it.name} · ${fmtTime(it.dur)}${it.iter !== null ? ` · iteration ${it.iter}` : ''}`
      : `${it.kind}: ${it.from.name} → ${it.to.name} · ${fmtTime(it.t1 - it.t0)}`;
    this.tooltip.style.display = 'block';
    this.tooltip.style.left = `${e.clientX + 12}px`;
    this.tooltip.style.top = `${e.clientY + 14}px`;
  }

  hideTooltip() {
    this.tooltip.style.display = 'none';
  }
}

const isSlice = (item) => item.cat !== undefined;

// n items of a list, evenly spaced.
function spread(list, n) {
  if (list.length <= n) return list;
  const step = list.length / n;
  return Array.from({ length: n }, (_, i) => list[Math.floor(i * step)]);
}

function segDist(px, py, x1, y1, x2, y2) {
  const dx = x2 - x1;
  const dy = y2 - y1;
  const len2 = dx * dx + dy * dy;
  const t = len2 ? Math.max(0, Math.min(1, ((px - x1) * dx + (py - y1) * dy) / len2)) : 0;
  return Math.hypot(px - x1 - t * dx, py - y1 - t * dy);
}

// Cuts text to about `px` pixels of 12px system font.
export function clipText(text, px) {
  const max = Math.floor(px / 6.6);
  if (text.length <= max) return text;
  return max <= 1 ? '' : `${text.slice(0, max - 1)}…`;
}
