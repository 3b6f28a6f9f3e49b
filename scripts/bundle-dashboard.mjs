// Bundles the dashboard (src/server/dashboard/: app.ts and its modules, style.css, index.html)
// into dist/src/server/dashboard/: app-HASH.js and style-HASH.css (esbuild, minified, names
// carrying a hash of their content, so the server can mark them immutable), index.html with
// its two references rewritten to those names, and manifest.json listing the files. The server
// reads them once at start (src/server/api/dashboard-assets.ts). Type-checking is a separate step
// of `npm run build`: tsc -p src/server/dashboard/tsconfig.json (strict, DOM lib, no emit).
import { build } from 'esbuild';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';

const SRC = 'src/server/dashboard';
const OUT = 'dist/src/server/dashboard';

rmSync(OUT, { recursive: true, force: true });
mkdirSync(OUT, { recursive: true });
const result = await build({
  entryPoints: { app: join(SRC, 'app.ts'), style: join(SRC, 'style.css') },
  outdir: OUT,
  entryNames: '[name]-[hash]',
  bundle: true,
  minify: true,
  format: 'iife',
  platform: 'browser',
  target: ['chrome100', 'firefox100', 'safari15'],
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
});

const outputs = Object.entries(result.metafile.outputs);
const outputOf = (entry) => {
  const found = outputs.filter(([, o]) => o.entryPoint === join(SRC, entry));
  if (found.length !== 1) throw new Error(`bundle-dashboard: expected one output for ${entry}, got ${found.length}`);
  return basename(found[0][0]);
};
const js = outputOf('app.ts');
const css = outputOf('style.css');

// The page's comments are for its readers here, not for every browser.
let html = readFileSync(join(SRC, 'index.html'), 'utf8').replace(/<!--[\s\S]*?-->\n?/g, '');
for (const [from, to] of [
  ['<link rel="stylesheet" href="/assets/style.css">', `<link rel="stylesheet" href="/assets/${css}">`],
  ['<script src="/assets/app.js"></script>', `<script src="/assets/${js}"></script>`],
]) {
  if (html.split(from).length !== 2) throw new Error(`bundle-dashboard: ${SRC}/index.html must contain ${from} exactly once`);
  html = html.replace(from, to);
}
writeFileSync(join(OUT, 'index.html'), html);
writeFileSync(join(OUT, 'manifest.json'), `${JSON.stringify({ index: 'index.html', assets: [js, css] }, null, 2)}\n`);
