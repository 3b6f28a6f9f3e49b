/**
 * The lean driver: bench/native/cni-driver.c (posix_spawn, as a runtime's exec does, ~0.1 ms of
 * harness per call, against ~1.5 ms for Node's child_process, which pulls every ratio towards 1)
 * and the physical floor bench/native/cni-floor.c (a static binary that reads the config and
 * prints a result), compiled into a bench's directory — the driver with the system's cc, the
 * floor with the compiler the shim is built with (scripts/shim-cc.mjs: musl's when installed),
 * so that the floor's exec costs what the shim's does, never more.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildNative } from './build-native.js';

const { staticCc } = (await import(new URL('../../../scripts/shim-cc.mjs', import.meta.url).href)) as typeof import('../../scripts/shim-cc.mjs');

export interface LeanDrivers {
  readonly driver: string;
  readonly floorBin: string;
  readonly dir: string;
}

/** A plugin the driver runs: its binary, its ipam section, the environment it gets. */
export interface LeanSubject {
  readonly name: string;
  readonly bin: string;
  readonly ipam: Record<string, unknown>;
  readonly env: Record<string, string>;
}

/** Compiles the driver and the floor (static, as the shim) into `dir`. */
export function buildLeanDrivers(dir: string): LeanDrivers {
  return {
    driver: buildNative('cni-driver.c', join(dir, 'cni-driver')),
    floorBin: buildNative('cni-floor.c', join(dir, 'cni-floor'), ['-static'], staticCc()),
    dir,
  };
}

/** The floor as a subject: the static binary, no ipam of its own. */
export function floorSubject(d: LeanDrivers): LeanSubject {
  return { name: 'floor', bin: d.floorBin, ipam: { type: 'floor' }, env: {} };
}

/** Runs `cni-driver MODE s.bin CONFIG ...rest` for subject `s` (config written beside the driver); its stdout. */
export function runLeanDriver(d: LeanDrivers, args: readonly string[], s: LeanSubject, net = 'bench-lean'): string {
  const conf = join(d.dir, `${s.name.replace(/[^a-z0-9-]/gi, '_')}.json`);
  writeFileSync(conf, JSON.stringify({ cniVersion: '1.0.0', name: net, ipam: s.ipam }));
  const r = spawnSync(d.driver, [args[0]!, s.bin, conf, ...args.slice(1)], { env: { PATH: process.env.PATH, ...s.env }, encoding: 'utf8', maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`cni-driver ${args.join(' ')} ${s.name}: ${r.stderr}`);
  return r.stdout;
}

/** `cni-driver burst` output: the ADDs' and the DELs' wall time in milliseconds. */
export function burstWalls(out: string): { add: number; del: number } {
  const [add, del] = out.trim().split(' ').map(Number);
  return { add: add!, del: del! };
}

/** `cni-driver seq` output: each pair's ADD and DEL in milliseconds. */
export function seqTimes(out: string): { add: number[]; del: number[] } {
  const add: number[] = [];
  const del: number[] = [];
  for (const line of out.trim().split('\n')) {
    const [a, d] = line.split(' ').map(Number);
    add.push(a! / 1000);
    del.push(d! / 1000);
  }
  return { add, del };
}
