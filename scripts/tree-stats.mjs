#!/usr/bin/env node
// Prints the shape of src/: lines, files per folder, the largest files, and import cycles
// (between folders, and between files: strongly connected components of the import graph).
// Usage: node scripts/tree-stats.mjs [root]   (root defaults to the repository)
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const root = resolve(process.argv[2] ?? join(dirname(new URL(import.meta.url).pathname), '..'));
const src = join(root, 'src');
const files = [];
(function walk(d) {
  for (const n of readdirSync(d)) {
    const p = join(d, n);
    if (statSync(p).isDirectory()) walk(p);
    else if (n.endsWith('.ts') && !n.endsWith('.d.ts')) files.push(p);
  }
})(src);
const prod = files.filter((f) => !/\.(test|fuzz\.test|property\.test)\.ts$/.test(f) && !f.includes(`${sep}dashboard${sep}`));
const lines = (f) => readFileSync(f, 'utf8').split('\n').length - 1;
const folder = (f) => relative(src, f).split(sep).slice(0, -1).join('/') || relative(src, f);
const total = prod.reduce((s, f) => s + lines(f), 0);
console.log(
  `source files (no tests, no dashboard): ${prod.length}, lines ${total}; test files under src: ${files.length - prod.length - files.filter((f) => f.includes(`${sep}dashboard${sep}`) && !/\.test\.ts$/.test(f)).length}`,
);
const per = new Map();
for (const f of prod) per.set(folder(f), (per.get(folder(f)) ?? 0) + 1);
console.log(
  'files per folder: ' +
    [...per]
      .sort()
      .map(([k, v]) => `${k} ${v}`)
      .join(', '),
);
console.log(
  'largest: ' +
    prod
      .map((f) => [relative(src, f), lines(f)])
      .sort((a, b) => b[1] - a[1])
      .slice(0, 8)
      .map(([f, n]) => `${f} ${n}`)
      .join(', '),
);
// Imports that exist at run time: `import type` / `export type` lines are erased by tsc.
const spec = (t) =>
  [...t.matchAll(/^(.*?)(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/gm)]
    .filter((m) => !/^\s*(?:import|export)\s+type\b/.test(m[1]) && !/\btypeof\s*$/.test(m[1]))
    .map((m) => m[2]);
const graph = new Map();
for (const f of prod) {
  const deps = spec(readFileSync(f, 'utf8'))
    .map((s) => resolve(dirname(f), s).replace(/\.js$/, '.ts'))
    .filter((t) => prod.includes(t));
  graph.set(f, deps);
}
function sccs(nodes, edges) {
  let i = 0;
  const idx = new Map();
  const low = new Map();
  const st = [];
  const on = new Set();
  const out = [];
  const visit = (v) => {
    idx.set(v, i);
    low.set(v, i);
    i++;
    st.push(v);
    on.add(v);
    for (const w of edges(v)) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const c = [];
      let w;
      do {
        w = st.pop();
        on.delete(w);
        c.push(w);
      } while (w !== v);
      if (c.length > 1) out.push(c);
    }
  };
  for (const v of nodes) if (!idx.has(v)) visit(v);
  return out;
}
const fileCycles = sccs([...graph.keys()], (v) => graph.get(v));
console.log(
  `file import cycles: ${fileCycles.length}${fileCycles.length ? ': ' + fileCycles.map((c) => c.map((f) => relative(src, f)).join(' ⇄ ')).join('; ') : ''}`,
);
const fg = new Map();
for (const [f, ds] of graph)
  for (const d of ds)
    if (folder(f) !== folder(d)) {
      const a = folder(f).split('/')[0];
      const b = folder(d).split('/')[0];
      if (a !== b) {
        if (!fg.has(a)) fg.set(a, new Set());
        fg.get(a).add(b);
      }
    }
const folderCycles = sccs([...new Set(prod.map((f) => folder(f).split('/')[0]))], (v) => [...(fg.get(v) ?? [])]);
console.log(`top-folder import cycles: ${folderCycles.length}${folderCycles.length ? ': ' + folderCycles.map((c) => c.join(' ⇄ ')).join('; ') : ''}`);
