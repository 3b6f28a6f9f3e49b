/**
 * Multus-style pods driven by bench/native/multus-driver.c (posix_spawn, as a runtime's exec
 * does) instead of Node's child_process: the same schedule as runMultusPods
 * (test/helpers/multus-pods.ts) — each pod's calls in turn, pods in parallel — and the same
 * MultusRun, so the same checks apply, with a harness that costs a fraction of Node's per call.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildNative } from './build-native.js';
import type { MultusRun, MultusSize } from '../../test/helpers/multus-pods.js';
import { type PluginCall, callEnv, stdinOf } from '../../test/helpers/plugin.js';

/** Compiles the driver into `dir` with $CC (default cc); returns its path. */
export function buildMultusDriver(dir: string): string {
  return buildNative('multus-driver.c', join(dir, 'multus-driver'));
}

/** Runs `command` for every pod's networks through `plugin` with the driver at `driver`; plan and answers files in `dir`. */
export function runMultusLean(
  driver: string,
  plugin: string,
  dir: string,
  size: MultusSize,
  call: (command: string, pod: number, net: number) => PluginCall,
  command: 'ADD' | 'DEL' | 'VERSION',
): MultusRun {
  const parts: Buffer[] = [Buffer.from(`${size.pods} ${size.networks}\n`)];
  for (let pod = 0; pod < size.pods; pod++) {
    for (let net = 0; net < size.networks; net++) {
      const c = call(command, pod, net);
      const env = Object.entries(callEnv(c))
        .filter(([k, v]) => k !== 'CNI_COMMAND' && v !== undefined)
        .map(([k, v]) => `${k}=${v}\0`)
        .join('');
      const e = Buffer.from(env);
      const conf = Buffer.from(stdinOf(c));
      parts.push(Buffer.from(`${e.length} ${conf.length}\n`), e, conf);
    }
  }
  const plan = join(dir, `multus-plan-${command}`);
  const answersFile = join(dir, `multus-answers-${command}`);
  writeFileSync(plan, Buffer.concat(parts));
  const r = spawnSync(driver, [plugin, plan, String(size.inFlight), command, answersFile], { encoding: 'utf8', maxBuffer: 1 << 24 });
  if (r.status !== 0) throw new Error(`multus-driver ${command}: exit ${r.status}: ${r.error?.message ?? r.stderr}`);
  const [wall, ...pods] = r.stdout.trim().split('\n');
  const podMs = new Array<number>(size.pods).fill(0);
  for (const l of pods) {
    const [p, ms] = l.split(' ').map(Number);
    podMs[p!] = ms!;
  }
  const answers = Array.from({ length: size.pods }, () => new Array<string>(size.networks));
  const failures: string[] = [];
  const buf = readFileSync(answersFile);
  for (let at = 0; at < buf.length;) {
    const nl = buf.indexOf(10, at);
    const [pod, net, status, len] = buf.subarray(at, nl).toString().split(' ').map(Number) as [number, number, number, number];
    const out = buf.subarray(nl + 1, nl + 1 + len).toString('utf8');
    at = nl + 1 + len + 1;
    if (status === 0) answers[pod]![net] = out;
    else failures.push(`${command} pod ${pod} net-${net}: exit ${status}: ${out}`);
  }
  return { ms: Number(wall), podMs, answers, failures };
}
