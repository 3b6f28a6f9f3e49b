/**
 * stopOptimizing (stop-optimizing.ts) in a node of its own, watched with V8's --trace-opt: a
 * function made hot before it is optimised, one made hot after it is not — so the test fails if
 * V8 stops honouring the flag set at run time (or optimises nothing at all).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const MODULE = fileURLToPath(new URL('./stop-optimizing.js', import.meta.url));

test('stopOptimizing: what V8 optimised before stays optimised, nothing made hot after is optimised', { timeout: 120_000 }, () => {
  const script = `
    const { stopOptimizing } = await import(${JSON.stringify(MODULE)});
    function before(o) { return o.a * 2 + o.b; }
    function after(o) { return o.a * 3 - o.b; }
    const run = (f) => { let s = 0; for (let i = 0; i < 3e6; i++) s += f({ a: i, b: 1 }); return s; };
    run(before);
    await new Promise((r) => setTimeout(r, 200)); // the compiler thread's job installed
    stopOptimizing();
    run(after);
    run(before);
    console.log('done');
  `;
  const r = spawnSync(process.execPath, ['--trace-opt', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /done/);
  const optimised = r.stdout.split('\n').filter((l) => l.startsWith('[completed optimizing'));
  assert.ok(
    optimised.some((l) => l.includes('<JSFunction before')),
    `the function made hot first is optimised:\n${optimised.join('\n')}`,
  );
  assert.deepEqual(
    optimised.filter((l) => l.includes('<JSFunction after')),
    [],
    'nothing is optimised after stopOptimizing',
  );
});
