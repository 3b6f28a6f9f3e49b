/**
 * What V8 throws away of podipam's own code at the pods' calls after an agent's warm-up (as
 * shipped: `--optimize warm-up`, so thrown-away code runs in V8's baseline tiers for the agent's
 * life), through bench/tools/deopt-trace.ts: an agent on SQLite under V8's --trace-deopt-verbose,
 * 150 ADD/DEL pairs made as containerd makes them. Each such deoptimisation found so far was a
 * difference between the warm-up's services and the agent's: a closure per instance (V8: "wrong
 * call target"), options of another shape, a path the warm-up's pool never took.
 * - cluster mode: no bailout at a position in podipam's code (none in any run, on a quiet or a
 *   loaded machine);
 * - warm-pool mode: none for a wrong call target. On a loaded machine (a warm-up of fewer rounds)
 *   one "wrong map" may remain in some runs — a field V8 first saw hold only small integers
 *   later holding others, which depends on timing — so those are not counted here.
 * Not counted: Node.js's own functions (its stream internals vary with timing), code marked for
 * deoptimisation without a bailout position (deopt-trace prints those without one: Node's module
 * loader's, after the agent's first lazy imports), local mode (its first config's decoding meets
 * shapes of its own). Nor are agents with a kubeconfig, pod cache or sticky policy traced: the
 * warm-up's pool has none of them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const TOOL = fileURLToPath(new URL('../../bench/tools/deopt-trace.js', import.meta.url));

/** podipam's functions deoptimised after the warm-up of an agent serving `mode`'s calls (deopt-trace's lines). */
function deoptsAfterWarmUp(mode: 'warm' | 'cluster'): { ours: string[]; out: string } {
  const r = spawnSync(process.execPath, [TOOL, mode, '150'], { encoding: 'utf8', timeout: 200_000 });
  assert.equal(r.status, 0, `deopt-trace failed: ${r.stderr}`);
  const lines = r.stdout.trim().split('\n');
  assert.match(lines.at(-1) ?? '', new RegExp(`deoptimisations after the agent was ready, over 150 ${mode} ADD/DEL pairs$`), r.stdout);
  return { ours: lines.filter((l) => / at src\//.test(l)), out: r.stdout };
}

test("after the warm-up, cluster mode's calls throw none of podipam's optimised code away", { timeout: 240_000 }, () => {
  const { ours, out } = deoptsAfterWarmUp('cluster');
  assert.deepEqual(ours, [], `podipam's functions deoptimised after the warm-up:\n${out}`);
});

test("after the warm-up, warm-pool mode's calls call what the warm-up's called (no wrong call target)", { timeout: 240_000 }, () => {
  const { ours, out } = deoptsAfterWarmUp('warm');
  assert.deepEqual(
    ours.filter((l) => l.includes('wrong call target')),
    [],
    `podipam's functions deoptimised after the warm-up:\n${out}`,
  );
});
