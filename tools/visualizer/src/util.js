// Small DOM and formatting helpers shared by the views.

const SVG_NS = 'http://www.w3.org/2000/svg';

export function svg(tag, attrs = {}, parent = null) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}

export function html(tag, attrs = {}, parent = null, text = null) {
  const e = document.createElement(tag);
  for (const k in attrs) {
    if (k === 'class') e.className = attrs[k];
    else e.setAttribute(k, attrs[k]);
  }
  if (text !== null) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}

// Trace times are microseconds with three decimals (nanoseconds).
export function fmtUs(us) {
  return `${us.toFixed(3)} µs`;
}

export function fmtTime(us) {
  const a = Math.abs(us);
  if (a < 1) return `${(us * 1000).toFixed(0)} ns`;
  if (a < 1000) return `${+us.toFixed(3)} µs`;
  if (a < 1e6) return `${+(us / 1000).toFixed(3)} ms`;
  return `${+(us / 1e6).toFixed(3)} s`;
}

// A duration as exact microseconds, with a readable unit when it is large.
export function fmtDur(us) {
  return Math.abs(us) >= 1000 ? `${fmtUs(us)} (${fmtTime(us)})` : fmtUs(us);
}

export function fmtBytes(n) {
  if (typeof n !== 'number') return String(n);
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = -1;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${+v.toFixed(2)} ${units[i]} (${n} B)`;
}

// Tick labels for an axis whose ticks are `step` microseconds apart.
export function tickFormatter(step) {
  const [div, unit] = step >= 1e5 ? [1e6, 's'] : step >= 100 ? [1e3, 'ms'] : step >= 0.1 ? [1, 'µs'] : [1e-3, 'ns'];
  const digits = Math.max(0, Math.min(6, Math.ceil(-Math.log10(step / div) - 1e-9)));
  return (t) => `${(t / div).toFixed(digits)} ${unit}`;
}
