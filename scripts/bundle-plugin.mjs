// Bundles the CNI plugin path (dist/src/plugin/run-plugin.js and everything it imports lazily)
// into a few files under dist/bundle/plugin/, so that a plugin invocation — once per pod — loads
// one or two modules instead of ~20. Code splitting keeps the lazy imports lazy: VERSION loads
// only the entry, ADD/DEL on the local back end never load the cluster or store code.
// npm packages stay external (better-sqlite3 is native). Same code as dist/src, compiled by
// tsc first; src/main.ts falls back to dist/src/plugin/run-plugin.js if this bundle is absent.
import { build } from 'esbuild';

await build({
  entryPoints: { 'run-plugin': 'dist/src/plugin/run-plugin.js' },
  // Three levels below the package root, as dist/src/<dir>/: the native addons' relative path
  // (src/util/native-addon.ts) holds. Not dist/src/plugin/, where tsc puts src/plugin/.
  outdir: 'dist/bundle/plugin',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  logLevel: 'warning',
});
