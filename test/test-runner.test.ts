/**
 * scripts/test.mjs, run on a throw-away tree: it ends with `N passed, N failed, N skipped`,
 * exits non-zero on a skipped or todo test unless PODIPAM_ALLOW_SKIP=1, non-zero on a failure,
 * and refuses a compiled test whose source is gone (a stale dist/); it records each file's time in
 * test-output/test-times.json, merged across runs, and starts the files longest first by it
 * (not in path order, which `node --test` itself would impose), PODIPAM_TEST_LANES files at a
 * time; the unit files run in two processes that import them in turn, a file that fails to load
 * failing the run.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './helpers/plugin.js';
import { withTempDir } from './helpers/tmp.js';

const RUNNER = join(REPO_ROOT, 'scripts', 'test.mjs');

function run(cwd: string, env: Record<string, string> = {}, args: readonly string[] = []): { code: number | null; out: string } {
  const e: NodeJS.ProcessEnv = { ...process.env, ...env };
  if (!('PODIPAM_ALLOW_SKIP' in env)) delete e.PODIPAM_ALLOW_SKIP;
  // The child runner must not inherit this process's test-runner context.
  delete e.NODE_TEST_CONTEXT;
  const r = spawnSync(process.execPath, [RUNNER, ...args], { cwd, env: e, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

/** A tree with dist/<folder>/NAME.test.js (the body) and its source <folder>/NAME.test.ts. */
function put(dir: string, name: string, body: string, folder = 't'): void {
  mkdirSync(join(dir, 'dist', folder), { recursive: true });
  mkdirSync(join(dir, folder), { recursive: true });
  writeFileSync(join(dir, 'dist', folder, `${name}.test.js`), `import { test } from 'node:test';\n${body}\n`);
  writeFileSync(join(dir, folder, `${name}.test.ts`), '');
}

test('test runner: closing counts; a skip fails the run unless PODIPAM_ALLOW_SKIP=1; a failure fails it; a stale build is refused', () =>
  withTempDir('runner', (dir) => {
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
    put(dir, 'ok', "test('passes', () => {});\ntest('nested', async (t) => { await t.test('inner', () => {}); });");
    let r = run(dir);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /^3 passed, 0 failed, 0 skipped$/m);

    put(dir, 'skips', "test('needs a thing', { skip: 'no thing here' }, () => {});\ntest('later', { todo: true }, () => {});");
    r = run(dir);
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /^3 passed, 0 failed, 2 skipped$/m);
    assert.match(r.out, /^skipped: needs a thing \(.*skips\.test\.js\): no thing here$/m);
    assert.match(r.out, /^slowest test files \(of 2; seconds of their tests\):$/m);
    assert.match(r.out, /^ +\d+\.\d {2}t\/ok\.test\.js$/m);
    r = run(dir, { PODIPAM_ALLOW_SKIP: '1' });
    assert.equal(r.code, 0, r.out);

    put(dir, 'fails', "test('fails', () => { throw new Error('boom'); });");
    r = run(dir, { PODIPAM_ALLOW_SKIP: '1' });
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /^3 passed, 1 failed, 2 skipped$/m);

    rmSync(join(dir, 't', 'fails.test.ts'));
    r = run(dir, { PODIPAM_ALLOW_SKIP: '1' });
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /stale build: no source for dist\/t\/fails\.test\.js/);
  }));

test('test runner --unit: only src/ tests not named integration or scale, and a unit test that starts a program fails', () =>
  withTempDir('runner-unit', (dir) => {
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
    put(dir, 'ok', "test('unit passes', () => {});", 'src/a');
    put(dir, 'etcd.integration', "test('integration', () => { throw new Error('an integration test ran'); });", 'src/a');
    put(dir, 'big.scale', "test('scale', () => { throw new Error('a scale test ran'); });", 'src/a');
    put(dir, 'e2e', "test('e2e', () => { throw new Error('a test/ file ran'); });", 'test');
    let r = run(dir, {}, ['--unit']);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /^1 passed, 0 failed, 0 skipped in [\d.]+ s \(1 unit test files\)$/m);

    put(dir, 'spawns', "import { spawnSync } from 'node:child_process';\ntest('starts true', () => { spawnSync('true'); });", 'src/b');
    r = run(dir, {}, ['--unit']);
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /a unit test must not start a program: child_process\.spawnSync\("true"\)/);
    assert.match(r.out, /^1 passed, 1 failed, 0 skipped/m);

    r = run(dir, {}, ['spawns']);
    assert.equal(r.code, 0, `without --unit a test may start a program:\n${r.out}`);
  }));

test('test runner: the time of each file is recorded in test-output/test-times.json and kept across runs of other files', () =>
  withTempDir('runner-times', (dir) => {
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
    put(dir, 'slow', "test('waits', async () => { await new Promise((r) => setTimeout(r, 300)); });");
    put(dir, 'quick', "test('passes', () => {});");
    let r = run(dir, {}, ['slow']);
    assert.equal(r.code, 0, r.out);
    r = run(dir, {}, ['quick']);
    assert.equal(r.code, 0, r.out);
    const times = JSON.parse(readFileSync(join(dir, 'test-output', 'test-times.json'), 'utf8')) as Record<string, number>;
    assert.deepEqual(Object.keys(times).sort(), ['dist/t/quick.test.js', 'dist/t/slow.test.js']);
    assert.ok((times['dist/t/slow.test.js'] ?? 0) >= 300, JSON.stringify(times));
    assert.ok((times['dist/t/quick.test.js'] ?? Infinity) < (times['dist/t/slow.test.js'] ?? 0), JSON.stringify(times));
  }));

test('test runner: files start longest first by the recorded times, not in path order (two lanes here)', () =>
  withTempDir('runner-order', (dir) => {
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
    const log = join(dir, 'started.log');
    for (const name of ['aaa', 'mmm', 'zzz'])
      put(
        dir,
        name,
        `import { appendFileSync } from 'node:fs';\nappendFileSync(${JSON.stringify(log)}, '${name}\\n');\ntest('waits', async () => { await new Promise((r) => setTimeout(r, 500)); });`,
      );
    mkdirSync(join(dir, 'test-output'));
    writeFileSync(
      join(dir, 'test-output', 'test-times.json'),
      JSON.stringify({ 'dist/t/zzz.test.js': 9000, 'dist/t/mmm.test.js': 8000, 'dist/t/aaa.test.js': 10 }),
    );
    appendFileSync(log, '');
    const r = run(dir, { PODIPAM_TEST_LANES: '2' });
    assert.equal(r.code, 0, r.out);
    const order = readFileSync(log, 'utf8').trim().split('\n');
    assert.deepEqual([order.slice(0, 2).sort(), order[2]], [['mmm', 'zzz'], 'aaa'], `started: ${order.join(', ')}`);
  }));

test('test runner: unit files run in two processes (lanes), a file that fails to load fails the run and the rest of its lane still runs', () =>
  withTempDir('runner-lanes', (dir) => {
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
    const log = join(dir, 'pids.log');
    appendFileSync(log, '');
    for (const name of ['a', 'b', 'c', 'd', 'e', 'f'])
      put(
        dir,
        name,
        `import { appendFileSync } from 'node:fs';\ntest('${name} runs', () => { appendFileSync(${JSON.stringify(log)}, process.pid + '\\n'); });`,
        'src/x',
      );
    let r = run(dir, {}, ['--unit']);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /^6 passed, 0 failed, 0 skipped in [\d.]+ s \(6 unit test files\)$/m);
    const pids = new Set(readFileSync(log, 'utf8').trim().split('\n'));
    assert.equal(pids.size, 2, `six unit files ran in ${pids.size} processes`);
    // 'b' is the second file in path order: it shares its lane with 'd' and 'f', which run after it.
    put(dir, 'b', "throw new Error('broken at load');", 'src/x');
    r = run(dir, {}, ['--unit']);
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /load dist\/src\/x\/b\.test\.js/);
    assert.match(r.out, /broken at load/);
    assert.match(r.out, /^5 passed, 1 failed, 0 skipped/m);
  }));

test('test runner: PODIPAM_TEST_LANES=1 runs one file at a time; a value that is not a whole number of lanes is refused naming it', () =>
  withTempDir('runner-file-lanes', (dir) => {
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
    const log = join(dir, 'lanes.log');
    for (const name of ['aaa', 'bbb', 'ccc'])
      put(
        dir,
        name,
        `import { appendFileSync } from 'node:fs';\nappendFileSync(${JSON.stringify(log)}, 'start ${name}\\n');\ntest('waits', async () => { await new Promise((r) => setTimeout(r, 300)); appendFileSync(${JSON.stringify(log)}, 'end ${name}\\n'); });`,
      );
    appendFileSync(log, '');
    const r = run(dir, { PODIPAM_TEST_LANES: '1' });
    assert.equal(r.code, 0, r.out);
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    // One lane: every file ends before the next starts.
    assert.deepEqual(
      lines.map((l) => l.split(' ')[0]),
      ['start', 'end', 'start', 'end', 'start', 'end'],
      lines.join(', '),
    );
    const bad = run(dir, { PODIPAM_TEST_LANES: '0' });
    assert.notEqual(bad.code, 0, bad.out);
    assert.match(bad.out, /invalid PODIPAM_TEST_LANES "0"/);
  }));
