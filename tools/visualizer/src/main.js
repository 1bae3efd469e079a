// Entry point: loads the embedded trace (or shows the file loader), wires the
// header, filters, timeline, graph view and details panel together.
import { parseTrace, filterModel, graphIdOf } from './trace.js';
import { Timeline, kindColor } from './timeline.js';
import { GraphView } from './graph.js';
import { Details } from './details.js';
import { html, fmtTime } from './util.js';

const $ = (id) => document.getElementById(id);

const state = { model: null, filter: { iteration: null, hiddenPids: new Set(), hiddenKinds: new Set() }, tab: 'timeline' };
let timeline;
let graphView;
let details;

function init() {
  details = new Details($('details'), { onPick: (f) => timeline.select(f, { reveal: true }) });
  timeline = new Timeline($('timeline'), { onSelect: showItem });
  timeline.setStatusElement($('status'));
  graphView = new GraphView($('graph'), { onSelectNode: (gi, n, st) => details.showNode(state.model, gi, n, st) });

  for (const b of document.querySelectorAll('.tab')) b.addEventListener('click', () => setTab(b.dataset.tab));
  $('fit').addEventListener('click', () => (state.tab === 'graph' ? graphView.fit() : timeline.fit()));
  $('iteration').addEventListener('change', (e) => setIteration(e.target.value === 'all' ? null : Number(e.target.value)));
  $('graph-select').addEventListener('change', (e) => {
    details.clear('Click a node to see its kernel statistics.');
    graphView.setGraph(Number(e.target.value));
  });
  $('open').addEventListener('click', () => $('file').click());
  $('loader-open').addEventListener('click', () => $('file').click());
  $('file').addEventListener('change', (e) => e.target.files[0] && loadFile(e.target.files[0]));
  bindDrop();
  bindKeys();

  window.rillViewer = {
    stats: () => timeline.stats(),
    view: () => timeline.view.slice(), // the timeline's time window, µs
    get model() {
      return state.model;
    },
    setIteration,
    setTab,
    load: (obj, name) => load(obj, name),
  };

  const embedded = $('rill-trace');
  const text = embedded ? embedded.textContent.trim() : '';
  if (text && text !== 'null') {
    try {
      load(JSON.parse(text), '');
    } catch (err) {
      showLoader(`The embedded trace could not be read: ${err.message}`);
    }
  } else {
    showLoader();
  }
}

function showLoader(error = '') {
  document.body.classList.add('no-trace');
  $('loader-error').textContent = error;
  document.body.dataset.ready = error ? 'error' : 'loader';
}

function loadFile(file) {
  const reader = new FileReader();
  reader.onload = () => {
    try {
      load(JSON.parse(reader.result), file.name);
    } catch (err) {
      showLoader(`${file.name}: ${err.message}`);
    }
  };
  reader.onerror = () => showLoader(`${file.name}: could not be read`);
  reader.readAsText(file);
}

function load(obj, fileName) {
  const model = parseTrace(obj, fileName);
  state.model = model;
  state.filter = { iteration: null, hiddenPids: new Set(), hiddenKinds: new Set() };
  document.body.classList.remove('no-trace');
  fillHeader(model);
  fillFilters(model);
  graphView.setModel(model);
  details.clear();
  applyFilter(true);
  if (state.tab === 'graph') graphView.render();
  document.body.dataset.ready = '1';
}

function fillHeader(model) {
  $('title').textContent = model.title;
  $('title').title = [model.rill.node, model.fileName].filter(Boolean).join(' · ');
  document.title = `${model.title} — Rill trace`;
  const t = model.totals;
  const totals = $('totals');
  totals.textContent = '';
  const item = (key, value, label, warn = false) => {
    const s = html('span', { class: `total${warn ? ' warn' : ''}`, 'data-key': key }, totals);
    html('b', {}, s, String(value));
    s.append(` ${label}`);
  };
  item('iterations', t.iterations, 'iterations');
  item('events', t.events, 'events');
  item('messages', t.messages, 'messages');
  item('lanes', model.lanes.length, 'lanes');
  item('dropped', t.dropped, 'dropped events', t.dropped > 0);
  if (t.unmatched) item('unmatched', t.unmatched, 'unmatched messages', true);
  item('span', fmtTime(model.t1 - model.t0), 'traced');
  if (model.fileName && model.fileName !== model.title) html('span', { class: 'total file' }, totals, model.fileName);
}

function fillFilters(model) {
  const it = $('iteration');
  it.textContent = '';
  html('option', { value: 'all' }, it, `all (${model.iterations.length})`);
  for (const i of model.iterations) {
    const span = model.iterSlice.get(i);
    const label = i < 0 ? `${i} (outside iterations)` : span ? `${i} · ${fmtTime(span.dur)}` : String(i);
    html('option', { value: String(i) }, it, label);
  }

  const procs = $('procs');
  procs.textContent = '';
  for (const p of model.processes) {
    const label = html('label', { class: 'check' }, procs);
    const cb = html('input', { type: 'checkbox', 'data-pid': p.pid }, label);
    cb.checked = true;
    label.append(` ${p.name}`);
    cb.addEventListener('change', () => {
      if (cb.checked) state.filter.hiddenPids.delete(p.pid);
      else state.filter.hiddenPids.add(p.pid);
      applyFilter(false);
    });
  }
  updateProcSummary();

  const kinds = $('kinds');
  kinds.textContent = '';
  for (const k of model.kinds) {
    const label = html('label', { class: 'check kind' }, kinds);
    const cb = html('input', { type: 'checkbox', 'data-kind': k }, label);
    cb.checked = true;
    html('span', { class: 'kind-swatch', style: `background:${kindColor(model.kinds, k)}` }, label);
    label.append(k);
    cb.addEventListener('change', () => {
      if (cb.checked) state.filter.hiddenKinds.delete(k);
      else state.filter.hiddenKinds.add(k);
      applyFilter(false);
    });
  }
  if (!model.kinds.length) html('span', { class: 'muted' }, kinds, 'none');

  const gs = $('graph-select');
  gs.textContent = '';
  model.graphs.forEach((g, gi) => {
    const parent = g.parent_lane >= 0 ? `, in lane ${g.parent_lane}` : '';
    html('option', { value: String(gi) }, gs, `graph ${graphIdOf(model, gi)} (block ${g.block ?? 0}, ${(g.nodes || []).length} nodes${parent})`);
  });
  gs.disabled = model.graphs.length < 2;
}

function updateProcSummary() {
  const m = state.model;
  const shown = m.processes.length - state.filter.hiddenPids.size;
  $('procs-summary').textContent = `processes ${shown}/${m.processes.length}`;
}

function setIteration(it) {
  state.filter.iteration = it;
  $('iteration').value = it === null ? 'all' : String(it);
  applyFilter(true);
}

function applyFilter(refit) {
  const m = state.model;
  const data = filterModel(m, state.filter);
  const it = state.filter.iteration;
  const span = it !== null && m.iterSpan.has(it) ? m.iterSpan.get(it) : [m.t0, m.t1];
  const view = refit ? null : timeline.view;
  timeline.setData(m, data, span, view);
  graphView.setSlices(data.slices);
  updateProcSummary();
  if (state.tab === 'timeline') details.clear();
}

function showItem(item) {
  if (!item) details.clear();
  else if (item.cat !== undefined) details.showSlice(state.model, item, timeline.related(item));
  else details.showFlow(state.model, item);
}

function setTab(tab) {
  state.tab = tab;
  document.body.dataset.view = tab;
  for (const b of document.querySelectorAll('.tab')) b.classList.toggle('active', b.dataset.tab === tab);
  $('view-timeline').hidden = tab !== 'timeline';
  $('view-graph').hidden = tab !== 'graph';
  if (!state.model) return;
  if (tab === 'graph') {
    details.clear('Click a node to see its kernel statistics.');
    if (graphView.drawnGi === null || graphView.drawnGi !== Number($('graph-select').value || 0)) {
      graphView.setGraph(Number($('graph-select').value || 0));
    }
  } else {
    details.clear();
    timeline.highlight(null);
  }
}

function bindDrop() {
  let depth = 0;
  const over = (on) => document.body.classList.toggle('drop-over', on);
  window.addEventListener('dragenter', (e) => {
    e.preventDefault();
    depth++;
    over(true);
  });
  window.addEventListener('dragleave', () => {
    if (--depth <= 0) {
      depth = 0;
      over(false);
    }
  });
  window.addEventListener('dragover', (e) => e.preventDefault());
  window.addEventListener('drop', (e) => {
    e.preventDefault();
    depth = 0;
    over(false);
    const file = e.dataTransfer && e.dataTransfer.files[0];
    if (file) loadFile(file);
  });
}

function bindKeys() {
  window.addEventListener('keydown', (e) => {
    if (!state.model || e.ctrlKey || e.metaKey || e.altKey) return;
    if (/^(INPUT|SELECT|TEXTAREA)$/.test(e.target.tagName)) return;
    const tl = state.tab === 'timeline';
    if (e.key === 'f') tl ? timeline.fit() : graphView.fit();
    else if (tl && (e.key === '+' || e.key === '=' || e.key === 'w')) timeline.zoomBy(0.6);
    else if (tl && (e.key === '-' || e.key === 's')) timeline.zoomBy(1 / 0.6);
    else if (tl && (e.key === 'ArrowLeft' || e.key === 'a')) timeline.panBy(-(timeline.view[1] - timeline.view[0]) * 0.2);
    else if (tl && (e.key === 'ArrowRight' || e.key === 'd')) timeline.panBy((timeline.view[1] - timeline.view[0]) * 0.2);
    else if (e.key === 'Escape') timeline.select(null);
    else return;
    e.preventDefault();
  });
}

init();
