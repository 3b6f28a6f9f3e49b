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
