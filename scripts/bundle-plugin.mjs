// Bundles the CNI plugin path (dist/src/cni/run-plugin.js and everything it imports lazily)
// into a few files under dist/src/plugin/, so that a plugin invocation — once per pod — loads
// one or two modules instead of ~20. Code splitting keeps the lazy imports lazy: VERSION loads
// only the entry, ADD/DEL on the local back end never load the cluster or store code.
// npm packages stay external (better-sqlite3 is native). Same code as dist/src, compiled by
// tsc first; src/main.ts falls back to dist/src/cni/run-plugin.js if this bundle is absent.
import { build } from 'esbuild';

await build({
  entryPoints: { 'run-plugin': 'dist/src/cni/run-plugin.js' },
  outdir: 'dist/src/plugin', // same depth as dist/src/local: the flock addon's relative path holds
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  logLevel: 'warning',
});
