/**
 * What the CNI benches comparing subjects side by side share (bench/agent.ts, bench/warm.ts):
 * the knobs PODIPAM_BENCH_PAIRS (200) and PODIPAM_BENCH_BURST (256), the burst's 32 in flight,
 * a subject (a binary with its ipam section and environment), quantiles and formatting.
 */
import type { RunningAgent } from '../../test/helpers/agent.js';

export const PAIRS = Number(process.env.PODIPAM_BENCH_PAIRS ?? 200);
export const BURST = Number(process.env.PODIPAM_BENCH_BURST ?? 256);
export const IN_FLIGHT = 32;

export interface Subject {
  readonly name: string;
  readonly bin: string;
  /** ipam section for a call (type and data dir differ per subject). */
  readonly ipam: Record<string, unknown>;
  readonly env: Record<string, string>;
  /** The agent serving it (its CPU counts too). */
  readonly agent?: RunningAgent;
}

/** The `p` quantile of `xs` (NaN when empty). */
export const q = (xs: readonly number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? NaN;
export const ms = (x: number): string => `${x.toFixed(2)} ms`;
export const ratio = (a: number, b: number): string => `${(a / b).toFixed(2)}x`;

/** The CNI environment of one call of `s`. */
export function cniEnv(s: Subject, command: string, id: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    CNI_COMMAND: command,
    CNI_CONTAINERID: id,
    CNI_IFNAME: 'eth0',
    CNI_NETNS: '/var/run/netns/bench',
    CNI_PATH: '/usr/lib/cni',
    ...s.env,
  };
}
