// Makes a self-contained page from the built page and a trace, as
// `rill trace view` does: the trace file's text replaces the `null` in
// <script id="rill-trace" type="application/json">null</script>, with "</"
// written "<\/" and "<!--" written "<\u0021--" (both only occur in JSON
// strings, where they read back the same) so that nothing ends the element early.
//   node test/embed.mjs PAGE.html TRACE.json OUT.html
import { readFileSync, writeFileSync } from 'node:fs';

const [page, trace, out] = process.argv.slice(2);
if (!out) {
  console.error('usage: node embed.mjs PAGE.html TRACE.json OUT.html');
  process.exit(2);
}
const PLACEHOLDER = '<script id="rill-trace" type="application/json">null</script>';
const html = readFileSync(page, 'utf8');
if (html.split(PLACEHOLDER).length !== 2) {
  console.error(`${page}: expected exactly one ${PLACEHOLDER}`);
  process.exit(1);
}
const text = readFileSync(trace, 'utf8');
JSON.parse(text); // a trace must at least be JSON
const json = text.trim().replaceAll('</', '<\\/').replaceAll('<!--', '<\\u0021--');
const filled = PLACEHOLDER.replace('null', () => json);
writeFileSync(out, html.replace(PLACEHOLDER, () => filled));
console.log(`${out}: ${(filled.length / 1024).toFixed(1)} KiB of trace embedded`);
