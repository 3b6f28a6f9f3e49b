/**
 * stopOptimizing (stop-optimizing.ts) in a node of its own, watched with V8's --trace-opt (its
 * compiles synchronous, so each is traced before the call that asked for it returns): hot code
 * before it is optimised, and after it V8 marks, compiles and optimises nothing — so the test
 * fails if V8 stops honouring the flags set at run time (or optimises nothing at all).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const MODULE = fileURLToPath(new URL('./stop-optimizing.js', import.meta.url));
const { V8_INTERRUPT_BUDGET } = (await import(MODULE)) as typeof import('./stop-optimizing.js');

test('stopOptimizing: V8 optimises hot code before it, and marks, compiles or optimises nothing after it', { timeout: 120_000 }, () => {
  const script = `
    const { stopOptimizing } = await import(${JSON.stringify(MODULE)});
    function before(o) { return o.a * 2 + o.b; }
    function after(o) { return o.a * 3 - o.b; }
    const run = (f) => { let s = 0; for (let i = 0; i < 3e6; i++) s += f({ a: i, b: 1 }); return s; };
    run(before);
    stopOptimizing();
    console.log('STOPPED');
    run(after);
    run(before);
    console.log('DONE');
  `;
  const r = spawnSync(process.execPath, ['--trace-opt', '--no-concurrent-recompilation', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.split('\n');
  const stopped = lines.indexOf('STOPPED');
  assert.ok(stopped > 0 && lines.includes('DONE'), r.stdout);
  const compiles = (ls: string[]): string[] => ls.filter((l) => /^\[(marking|compiling method|completed)/.test(l));
  // Before: V8 optimises the hot loop (on its own or, on-stack, `run` with `before` inlined).
  assert.ok(
    compiles(lines.slice(0, stopped)).some((l) => l.startsWith('[completed compiling')),
    `V8 optimises the hot code before stopOptimizing:\n${lines.slice(0, stopped).join('\n')}`,
  );
  assert.deepEqual(compiles(lines.slice(stopped)), [], 'nothing is marked, compiled or optimised after stopOptimizing');
});

test("V8_INTERRUPT_BUDGET is this node's V8 default", () => {
  const r = spawnSync(process.execPath, ['--v8-options'], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  const m = /--interrupt-budget \(.*\)\n\s+type: int\s+default: --interrupt-budget=(\d+)/.exec(r.stdout);
  assert.ok(m, 'node --v8-options lists --interrupt-budget');
  assert.equal(Number(m[1]), V8_INTERRUPT_BUDGET);
});

test("keepArrayKinds' flag is one this node's V8 knows, on by default", () => {
  const r = spawnSync(process.execPath, ['--v8-options'], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /--turbo-inline-array-builtins \(.*\)\n\s+type: bool\s+default: --turbo-inline-array-builtins\n/);
});

/**
 * A small function run 1,500 times, traced with --trace-opt: with V8's budget it gets no
 * profiler tick (1,500 × its bytecode < V8_INTERRUPT_BUDGET), with the warm-up's it is ticked
 * and optimised; after `done()` another one run as often is not; a node started with its own
 * --interrupt-budget keeps it, after `done()` too.
 */
function eagerRun(nodeArgs: string[], eager: boolean): { during: boolean; after: boolean } {
  const script = `
    const { optimizeEagerly } = await import(${JSON.stringify(MODULE)});
    function during(o) { return o.a * 2 + o.b; }
    function after(o) { return o.a * 3 - o.b; }
    const run = (f) => { let s = 0; for (let i = 0; i < 1500; i++) s += f({ a: i, b: 1 }); return s; };
    const w = ${eager} ? optimizeEagerly() : { done() {} };
    run(during);
    w.done();
    run(after);
  `;
  const r = spawnSync(process.execPath, [...nodeArgs, '--trace-opt', '--no-concurrent-recompilation', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(r.status, 0, r.stderr);
  const optimised = (name: string): boolean => r.stdout.split('\n').some((l) => l.startsWith('[completed compiling') && l.includes(`<JSFunction ${name} `));
  return { during: optimised('during'), after: optimised('after') };
}

test('optimizeEagerly: V8 optimises what runs until done() sooner, and after done() as before', { timeout: 120_000 }, () => {
  assert.deepEqual(eagerRun([], false), { during: false, after: false }, "with V8's budget 1,500 calls are too few");
  assert.deepEqual(eagerRun([], true), { during: true, after: false });
  // A small budget given at start: kept during (optimised either way) and after done() (not V8's put back).
  assert.deepEqual(eagerRun(['--interrupt-budget=1024'], true), { during: true, after: true }, 'a budget given at start is kept');
});
