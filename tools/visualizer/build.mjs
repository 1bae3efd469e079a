// Bundles src/ into one self-contained HTML page: OUTDIR/index.html.
//   node build.mjs OUTDIR
import { build, transform } from 'esbuild';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const outDir = process.argv[2];
if (!outDir) {
  console.error('usage: node build.mjs OUTDIR');
  process.exit(2);
}
const PLACEHOLDER = '<script id="rill-trace" type="application/json">null</script>';

const js = await build({
  entryPoints: [join(here, 'src/main.js')],
  bundle: true, minify: true, format: 'iife', target: 'es2020',
  legalComments: 'none', write: false, logLevel: 'warning',
});
// Inline script: no "</script" may appear in it (esbuild escapes it in strings).
let code = js.outputFiles[0].text.replace(/<\/script/gi, '<\\/script');
if (code.includes('<!--')) throw new Error('bundle contains "<!--", which breaks an inline script');
const css = (await transform(readFileSync(join(here, 'src/style.css'), 'utf8'), { loader: 'css', minify: true })).code;

const template = readFileSync(join(here, 'src/index.html'), 'utf8');
const page = template.replace('/*STYLE*/', () => css.trim()).replace('/*SCRIPT*/', () => code.trim());
if (page.split(PLACEHOLDER).length !== 2) throw new Error('the page must hold exactly one trace placeholder');
if (page.indexOf(PLACEHOLDER) > page.indexOf('<script>')) throw new Error('the placeholder must come before the code');

mkdirSync(outDir, { recursive: true });
writeFileSync(join(outDir, 'index.html'), page);
console.log(`${join(outDir, 'index.html')}: ${(page.length / 1024).toFixed(1)} KiB (js ${(code.length / 1024).toFixed(1)} KiB, css ${(css.length / 1024).toFixed(1)} KiB)`);
