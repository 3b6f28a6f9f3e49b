// Runs every compiled test file (dist/**/*.test.js) with Node's built-in test runner.
// Usage: node scripts/test.mjs [--unit] [substring…]  — only files whose path contains one of them.
// --unit (npm run test:unit) runs the unit tests: the tests beside the code (dist/src/**), except
// those named *.integration.test.js (they start a program: etcd, a CNI plugin, the CLI, …) or
// *.scale.test.js (slow on purpose). Each runs with scripts/unit-guard.mjs, which makes any
// child_process call throw, so a unit test that starts a program fails instead of slowing the
// run; the closing line then also gives the run's wall time.
// Files named in START_FIRST (a minute or more each) start first; the rest longest first by the
// times earlier runs here recorded (test-output/test-times.json), then in path order. They run
// three at a time through scripts/test-files.mjs, which keeps this order (`node --test` sorts by path).
// Prints node:test's spec output, the slowest files (seconds of their tests), then a closing line `N passed, N failed, N skipped`. Exits
// non-zero on any failure, and on any skipped (or todo) test unless PODIPAM_ALLOW_SKIP=1: a
// test whose prerequisite is missing must not pass silently. Refuses a compiled test whose
// source is gone (a stale dist/; `npm run build` starts from a clean one).
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';

function walk(dir, out) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}
if (!existsSync('dist')) {
  console.error('no dist/ (did the build run? npm run build)');
  process.exit(1);
}
const args = process.argv.slice(2);
const unit = args.includes('--unit');
const filters = args.filter((a) => a !== '--unit');
const isUnit = (f) => f.startsWith(join('dist', 'src') + '/') && !/\.(integration|scale)\.test\.js$/.test(f);
// Files that take a minute or more start first: with three at a time, a long file started last
// would run alone at the end. Only the order depends on this list; a name missing from it (or
// a name here that no longer exists) changes nothing else.
// Longest first, by the per-file seconds two clean-clone runs printed on the 2-core machine at
// load ~10-15 (2026-12-04; the files then ran in path order, so what ran beside each differed):
// deploy-containerd 178-245 s (it also builds the shared image), lint 56-297 (cold, no cache),
// image-reproducible 140-184 (its second build), cluster-etcd 80-155, crash-points 56-109,
// datastore-backup 65-140, then 50-95 s each down to partition-planted-bug.
const START_FIRST = [
  'deploy-containerd',
  'lint',
  'image-reproducible',
  'cluster-etcd',
  'crash-points',
  'datastore-backup',
  'containerd-runtime-reconcile',
  'agent-warm-pool',
  'multus-networks',
  'local-differential',
  'soak-short',
  'format',
  'cluster-sqlite',
  'install-cni-cli',
  'dashboard-browser',
  'agent-pool-live',
  'cluster-sticky',
  'cluster-ip-set',
  'partition-chaos',
  'prometheus-alerts',
  'import-calico',
  'store-file-faults',
  'local-concurrency',
  'npm-package',
  'partition-planted-bug',
];
const rank = (f) => {
  const base = f.slice(f.lastIndexOf('/') + 1).replace(/\.test\.js$/, '');
  const i = START_FIRST.indexOf(base);
  return i < 0 ? START_FIRST.length : i;
};
// The ms each file's tests took in earlier runs in this checkout (merged after every run;
// test-output/ is gitignored, so a clean clone has none): after START_FIRST, the other files
// start longest first by them, unknown ones last in path order.
const TIMES = join('test-output', 'test-times.json');
let pastMs = {};
try {
  if (existsSync(TIMES)) pastMs = JSON.parse(readFileSync(TIMES, 'utf8'));
} catch {
  pastMs = {};
}
const past = (f) => (typeof pastMs[f] === 'number' ? pastMs[f] : 0);
const files = walk('dist', [])
  .sort()
  .filter((f) => (!unit || isUnit(f)) && (filters.length === 0 || filters.some((s) => f.includes(s))))
  .sort((a, b) => rank(a) - rank(b) || past(b) - past(a));
if (files.length === 0) {
  console.error('no test files found under dist/ (did the build run?)');
  process.exit(1);
}
const stale = files.filter((f) => !existsSync(f.slice('dist/'.length).replace(/\.js$/, '.ts')));
if (stale.length > 0) {
  console.error(`stale build: no source for ${stale.join(', ')} (rebuild with npm run build, which cleans dist/)`);
  process.exit(1);
}

const outDir = mkdtempSync(join(tmpdir(), 'podipam-test-'));
const countFile = join(outDir, 'counts.jsonl');
// The unit files run in UNIT_LANES processes ("lanes"), each importing its share of them in turn,
// instead of a process each: starting a process and loading its modules cost more than most unit
// files' tests (the whole unit set took 2.4x the CPU that way). Their tests run one at a time in
// their lane, as within a file. A file that fails to load fails its lane's run with a test named
// after it; the other files of the lane still run. The lanes' times are recorded as
// dist/unit-lane-N.mjs (a unit file's own time is not known then).
const UNIT_LANES = 2;
const unitFiles = files.filter(isUnit);
const laneFiles = [];
if (unitFiles.length > 1) {
  mkdirSync(join(outDir, 'dist'));
  for (let lane = 0; lane < UNIT_LANES; lane++) {
    const share = unitFiles.filter((_, i) => i % UNIT_LANES === lane);
    if (share.length === 0) continue;
    const lanePath = join(outDir, 'dist', `unit-lane-${lane}.mjs`);
    const lines = ["import { test } from 'node:test';"];
    for (const f of share) {
      const url = JSON.stringify(pathToFileURL(resolve(f)).href);
      lines.push(`try { await import(${url}); } catch (e) { test(${JSON.stringify(`load ${f}`)}, () => { throw e; }); }`);
    }
    writeFileSync(lanePath, lines.join('\n') + '\n');
    laneFiles.push(lanePath);
  }
}
const laneKey = (f) => f.slice(f.lastIndexOf('dist/'));
const toRun =
  laneFiles.length === 0 ? files : [...files.filter((f) => !isUnit(f)), ...laneFiles].sort((a, b) => rank(a) - rank(b) || past(laneKey(b)) - past(laneKey(a)));
const driver = fileURLToPath(new URL('./test-files.mjs', import.meta.url));
const guard = new URL('./unit-guard.mjs', import.meta.url).href;
const started = performance.now();
// Two at a time in this order (`node --test` would sort them by path): scripts/test-files.mjs.
const r = spawnSync(process.execPath, [driver, ...(unit ? ['--guard', guard] : []), countFile, ...toRun], { stdio: 'inherit' });
const results = existsSync(countFile)
  ? readFileSync(countFile, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l))
  : [];
rmSync(outDir, { recursive: true, force: true });

const fileMs = new Map();
for (const x of results) if (x.time !== undefined) fileMs.set(x.file, (fileMs.get(x.file) ?? 0) + x.time);
if (fileMs.size > 0) {
  for (const [f, ms] of fileMs) pastMs[f.slice(f.lastIndexOf('dist/'))] = Math.round(ms);
  mkdirSync('test-output', { recursive: true });
  writeFileSync(TIMES, JSON.stringify(pastMs, null, 1) + '\n');
}
const slowest = [...fileMs].sort((a, b) => b[1] - a[1]).slice(0, 25);
if (files.length > 1 && slowest.length > 0) {
  console.log(`slowest test files (of ${files.length}; seconds of their tests):`);
  for (const [f, ms] of slowest) console.log(`  ${(ms / 1000).toFixed(1).padStart(7)}  ${f.slice(f.lastIndexOf('dist/') + 5)}`);
}
const count = (o) => results.filter((x) => x.outcome === o);
const [passed, failed, skipped] = [count('pass'), count('fail'), count('skip')];
const allowSkip = process.env.PODIPAM_ALLOW_SKIP === '1';
for (const s of skipped) console.log(`skipped: ${s.name} (${s.file ?? '?'}): ${s.reason}`);
const took = unit ? ` in ${((performance.now() - started) / 1000).toFixed(1)} s (${files.length} unit test files)` : '';
console.log(`${passed.length} passed, ${failed.length} failed, ${skipped.length} skipped${took}`);
if (skipped.length > 0 && !allowSkip) console.log('skipped tests fail the run (set PODIPAM_ALLOW_SKIP=1 to allow them)');
const ok = r.status === 0 && failed.length === 0 && results.length > 0 && (skipped.length === 0 || allowSkip);
process.exit(ok ? 0 : 1);
