/**
 * The dependency rules of src/, read from the TypeScript sources (static, lazy and type imports).
 *
 * 1. The services know nothing of CNI: no file under src/local, src/cluster, src/controller,
 *    src/server (nor the layers below them: src/model, src/store, src/alloc, src/ip, src/util)
 *    imports from src/cni (the protocol) or src/plugin (the plugin edge). A test file counts too.
 * 2. MAY_IMPORT: for every folder under src/ (and src/main.ts), the folders its code (not its
 *    tests) may import. A folder without an entry fails, named, and so does an entry for a folder
 *    that is gone: the table is the tree's, kept exact.
 * 3. No import cycle between folders, and none between files (type-only imports, erased at run
 *    time, aside).
 * 4. Inside src/cluster, a concept folder (admin, gate, plan, records, reports, service, txn,
 *    views) imports another only through that folder's index.ts, and no two folders import each
 *    other, even through a chain and even for types (ARCHITECTURE.md names their layers).
 *
 * The layers the table describes: model, ip, util, log at the bottom; store and
 * alloc above; the back ends local, cluster and warm import those and each other as documented
 * (warm may use cluster); controller and server use cluster and store; cni is the protocol;
 * plugin imports cni and the back ends (not agent); wire (the agent's frame protocol) imports only
 * the bottom layer; agent imports wire and the back ends (not plugin); cli and main.ts, on top,
 * import anything.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { REPO_ROOT } from './helpers/plugin.js';
import { specifiers } from './helpers/specifiers.js';

const SERVICES = ['local', 'cluster', 'controller', 'server', 'warm', 'model', 'store', 'alloc', 'ip', 'util', 'sqlite'];
const EDGES = ['cni', 'plugin'];

function walk(dir: string, out: string[]): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}

test('specifiers finds static, dynamic and type imports', () => {
  const src =
    "import { a } from '../cni/x.js';\nimport type { B } from \"./b.js\";\nconst m = await import('../plugin/y.js');\ntype T = typeof import('../z.js');\nimport '../side.js';";
  assert.deepEqual(specifiers(src), ['../cni/x.js', './b.js', '../plugin/y.js', '../z.js', '../side.js']);
});

test('no service imports the CNI protocol (src/cni) or the plugin edge (src/plugin)', () => {
  const srcRoot = join(REPO_ROOT, 'src');
  const offenders: string[] = [];
  let files = 0;
  for (const part of SERVICES) {
    for (const file of walk(join(srcRoot, part), [])) {
      files++;
      for (const spec of specifiers(readFileSync(file, 'utf8'))) {
        const target = relative(srcRoot, resolve(dirname(file), spec)).split(sep)[0]!;
        if (EDGES.includes(target)) offenders.push(`${relative(REPO_ROOT, file)} imports ${spec}`);
      }
    }
  }
  assert.ok(files > 100, `only ${files} source files under ${SERVICES.join(', ')}: wrong root?`);
  assert.deepEqual(offenders, []);
});

/**
 * Folder → the folders under src/ its code may import ('*': any). Bottom: log, ip, sqlite (the one
 * SQLite adapter), util, model;
 * then store and alloc (pure allocators); the back ends local, cluster and warm (warm draws its
 * addresses from cluster and opens its files with local's no-follow rules); the services
 * controller and server; the protocols cni (CNI) and wire (the agent's frames); the edges
 * plugin (CNI → back ends) and agent (the host: socket, peers, metrics, pod source), which never
 * import each other — agent-main.ts, the composition root, hands the plugin's entry to the agent;
 * cli and main.ts on top.
 */
const MAY_IMPORT: Record<string, readonly string[] | '*'> = {
  log: [],
  ip: [],
  sqlite: [],
  util: ['log'],
  model: ['ip', 'util'],
  store: ['model', 'sqlite', 'util'],
  alloc: ['ip'],
  local: ['ip', 'model', 'store', 'util'],
  cluster: ['alloc', 'ip', 'model', 'store', 'util'],
  warm: ['alloc', 'cluster', 'ip', 'local', 'log', 'model', 'sqlite', 'store', 'util'],
  controller: ['alloc', 'ip', 'log', 'model', 'store', 'util'],
  history: ['cluster', 'ip', 'log', 'model', 'sqlite', 'store', 'util', 'warm'],
  server: ['cluster', 'controller', 'history', 'install', 'ip', 'log', 'model', 'store', 'util', 'warm'],
  simulate: ['util'],
  cni: ['ip', 'model'],
  wire: ['cni', 'util'],
  install: [],
  masq: ['ip'],
  version: ['cni', 'install'],
  plugin: ['cluster', 'cni', 'ip', 'local', 'model', 'store', 'util', 'warm', 'wire'],
  agent: ['cluster', 'cni', 'log', 'masq', 'model', 'reconcile', 'server', 'store', 'util', 'warm', 'wire'],
  reconcile: ['cluster', 'ip', 'local', 'log', 'model', 'store', 'util', 'warm'],
  runtime: ['cluster', 'cni', 'ip', 'model', 'store', 'wire'],
  'agent-main.ts': ['agent', 'local', 'log', 'plugin', 'reconcile', 'util', 'warm'],
  import: ['alloc', 'cluster', 'ip', 'model', 'store', 'util'],
  cli: '*',
  'main.ts': '*',
};

interface Edge {
  from: string; // path under src/
  to: string;
  spec: string;
  typeOnly: boolean;
}

const srcRoot = join(REPO_ROOT, 'src');
/** The folder (first path segment under src/) of a path under src/; a file at the top is its own. */
const folderOf = (path: string): string => path.split(sep)[0]!;

/** Every import between files under src/ from code that is not a test (the browser dashboard is server's). */
function codeImports(): Edge[] {
  const edges: Edge[] = [];
  for (const file of walk(srcRoot, [])) {
    if (file.endsWith('.test.ts')) continue;
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/^(.*?)(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/gm)) {
      const target = resolve(dirname(file), m[2]!);
      if (!target.startsWith(srcRoot + sep)) continue;
      const typeOnly = /^\s*(?:import|export)\s+type\b/.test(m[1]!) || /\btypeof\s*$/.test(m[1]!);
      edges.push({ from: relative(srcRoot, file), to: relative(srcRoot, target).replace(/\.js$/, '.ts'), spec: m[2]!, typeOnly });
    }
  }
  return edges;
}

/** The strongly connected groups of more than one node of a directed graph (Tarjan), each sorted. */
export function cyclesOf(graph: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1 || graph.get(v)?.has(v)) out.push(group.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return out.sort((a, b) => a.join().localeCompare(b.join()));
}

function graphOf(pairs: Iterable<[string, string]>): Map<string, Set<string>> {
  const g = new Map<string, Set<string>>();
  for (const [a, b] of pairs) {
    if (!g.has(a)) g.set(a, new Set());
    g.get(a)!.add(b);
  }
  return g;
}

test('cyclesOf finds the strongly connected groups', () => {
  const g = graphOf([
    ['a', 'b'],
    ['b', 'c'],
    ['c', 'a'],
    ['c', 'd'],
    ['d', 'e'],
    ['e', 'd'],
    ['f', 'a'],
  ]);
  assert.deepEqual(cyclesOf(g), [
    ['a', 'b', 'c'],
    ['d', 'e'],
  ]);
  assert.deepEqual(
    cyclesOf(
      graphOf([
        ['a', 'b'],
        ['b', 'c'],
      ]),
    ),
    [],
  );
});

test('every folder under src/ has an entry in the dependency table, and every entry a folder', () => {
  const folders = readdirSync(srcRoot).filter((n) => statSync(join(srcRoot, n)).isDirectory() || (n.endsWith('.ts') && !n.endsWith('.test.ts')));
  const missing = folders.filter((f) => !(f in MAY_IMPORT));
  assert.deepEqual(missing, [], `src/ folders with no entry in MAY_IMPORT (test/layering.test.ts): ${missing.join(', ')}`);
  const gone = Object.keys(MAY_IMPORT).filter((f) => !folders.includes(f));
  assert.deepEqual(gone, [], `MAY_IMPORT entries for folders src/ no longer has: ${gone.join(', ')}`);
  for (const [f, allowed] of Object.entries(MAY_IMPORT)) {
    if (allowed === '*') continue;
    for (const a of allowed) assert.ok(a in MAY_IMPORT && a !== f, `MAY_IMPORT.${f} names ${a}: not another folder of the table`);
  }
});

test('every folder imports only the folders the dependency table allows it', () => {
  const edges = codeImports();
  assert.ok(edges.length > 300, `only ${edges.length} imports under src/: wrong root?`);
  const offenders = edges
    .filter((e) => {
      const [a, b] = [folderOf(e.from), folderOf(e.to)];
      const allowed = MAY_IMPORT[a];
      return a !== b && allowed !== undefined && allowed !== '*' && !allowed.includes(b);
    })
    .map((e) => `src/${e.from} imports ${e.spec} (${folderOf(e.from)} may import: ${(MAY_IMPORT[folderOf(e.from)] as string[]).join(', ') || 'nothing'})`);
  assert.deepEqual(offenders, []);
});

test('no import cycle between folders', () => {
  const g = graphOf(
    codeImports()
      .map((e): [string, string] => [folderOf(e.from), folderOf(e.to)])
      .filter(([a, b]) => a !== b),
  );
  assert.deepEqual(cyclesOf(g), [], 'folders that import each other: move the shared part down or the caller up');
});

test('no import cycle between files (type-only imports aside)', () => {
  const g = graphOf(
    codeImports()
      .filter((e) => !e.typeOnly)
      .map((e): [string, string] => [e.from, e.to]),
  );
  assert.deepEqual(cyclesOf(g), []);
});

test('metrics registration is independent of the HTTP server: agent/agent-metrics.ts reaches no file under server/', () => {
  const edges = codeImports().filter((e) => !e.typeOnly);
  const seen = new Set(['agent/agent-metrics.ts']);
  const todo = [...seen];
  for (let f = todo.pop(); f !== undefined; f = todo.pop()) {
    for (const e of edges) {
      if (e.from !== f || seen.has(e.to)) continue;
      seen.add(e.to);
      todo.push(e.to);
    }
  }
  assert.ok(seen.size > 1, 'agent-metrics.ts imports nothing: wrong path?');
  assert.deepEqual(
    [...seen].filter((f) => f.startsWith(`server${sep}`)),
    [],
  );
});

/** Folders whose subfolders each have one public entry, index.ts: code outside the folder imports only those (or the folder's own index.ts). */
const PUBLIC_ENTRY_FOLDERS = ['cluster'];

test('no reaching into inner paths: code outside cluster/ imports only cluster/index.ts or cluster/<concept>/index.ts', () => {
  const offenders: string[] = [];
  for (const e of codeImports()) {
    const top = folderOf(e.to);
    if (!PUBLIC_ENTRY_FOLDERS.includes(top) || folderOf(e.from) === top) continue;
    const parts = e.to.split(sep);
    const entry = parts.at(-1) === 'index.ts' && parts.length <= 3;
    if (!entry) offenders.push(`src/${e.from} imports ${e.spec}`);
  }
  for (const top of PUBLIC_ENTRY_FOLDERS) {
    for (const sub of readdirSync(join(srcRoot, top))) {
      if (statSync(join(srcRoot, top, sub)).isDirectory())
        assert.ok(readdirSync(join(srcRoot, top, sub)).includes('index.ts'), `src/${top}/${sub} has no index.ts (its public entry)`);
    }
  }
  assert.deepEqual(offenders, []);
});

/** The imports between cluster/'s concept folders (code, type-only included): [from folder, to folder, edge]. */
function clusterCrossings(): [string, string, Edge][] {
  const out: [string, string, Edge][] = [];
  for (const e of codeImports()) {
    const [from, to] = [e.from.split(sep), e.to.split(sep)];
    if (from[0] !== 'cluster' || to[0] !== 'cluster' || from.length !== 3 || to.length !== 3 || from[1] === to[1]) continue;
    out.push([from[1]!, to[1]!, e]);
  }
  return out;
}

test('inside cluster/, a concept folder imports another only through its index.ts', () => {
  const crossings = clusterCrossings();
  assert.ok(crossings.length > 100, `only ${crossings.length} imports between cluster/ folders: wrong root?`);
  const offenders = crossings
    .filter(([, , e]) => !e.to.endsWith(`${sep}index.ts`))
    .map(([, to, e]) => `src/${e.from} imports ${e.spec} (import ../${to}/index.js)`);
  assert.deepEqual(offenders, []);
});

test('no import cycle between the concept folders of cluster/ (type-only imports included)', () => {
  const pairs = clusterCrossings().map(([a, b]): [string, string] => [a, b]);
  assert.deepEqual(cyclesOf(graphOf(pairs)), [], 'cluster/ folders that import each other: move the shared part down (records, views) or the caller up');
  // The check sees a cycle planted in the same graph: records (the bottom) importing service (the top).
  assert.deepEqual(cyclesOf(graphOf([...pairs, ['records', 'service']])).length, 1);
});
