/**
 * The partition rig's seeded fault schedule (pure): which fault, on which host, for how long,
 * then how long healed before the next. The first faults are every kind once, in a seeded
 * order, so even a short run injects each kind; after that kinds are drawn at random. The same
 * seed gives the same schedule (the hosts' states and timings still vary with the machine).
 */

import { mulberry32 as seededRandom } from '../../src/util/mulberry32.js';

export { seededRandom };

export const FAULT_KINDS = [
  'member-link-down', // an etcd member's link down
  'member-drop', // every packet to and from a member lost
  'member-one-way-out', // what a member sends is lost, it still receives
  'member-one-way-in', // what a member should receive is lost, it still sends
  'member-slow', // a member's link rate-limited (tbf 256 kbit/s): raft traffic queues
  'member-pause', // SIGSTOP a member: connections stay open, nothing answers
  'leader-isolate', // the current raft leader cut off from everyone
  'node-link-down', // a node's link down: its agent cannot reach etcd
  'node-drop', // every packet to and from a node lost
  'node-one-way-out', // what a node sends is lost
  'node-slow', // a node's link rate-limited (tbf 256 kbit/s): its etcd traffic queues
  'node-agent-kill-while-cut', // a node cut off, its agent SIGKILLed, restarted while still cut off, then healed
] as const;

export type FaultKind = (typeof FAULT_KINDS)[number];

export interface ScheduledFault {
  readonly kind: FaultKind;
  /** Index of the member or node the fault hits (the leader's index is found when it is applied). */
  readonly target: number;
  readonly faultMs: number;
  readonly settleMs: number;
}

export interface ScheduleSpec {
  readonly seed: number;
  /** The schedule's length: faults are added while their sum of fault + settle time fits. */
  readonly totalMs: number;
  readonly faultMs: readonly [number, number];
  readonly settleMs: readonly [number, number];
  readonly members: number;
  readonly nodes: number;
  /** At most this many faults (the suite's short run: FAULT_KINDS.length, every kind once and no more). */
  readonly maxFaults?: number;
}

export function faultSchedule(s: ScheduleSpec): ScheduledFault[] {
  const random = seededRandom(s.seed);
  const between = ([lo, hi]: readonly [number, number]): number => Math.round(lo + random() * (hi - lo));
  const order: FaultKind[] = [...FAULT_KINDS];
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const out: ScheduledFault[] = [];
  let used = 0;
  for (let i = 0; i < (s.maxFaults ?? Infinity); i++) {
    const kind = i < order.length ? order[i]! : FAULT_KINDS[Math.floor(random() * FAULT_KINDS.length)]!;
    const target = Math.floor(random() * (kind.startsWith('node') ? s.nodes : s.members));
    const f: ScheduledFault = { kind, target, faultMs: between(s.faultMs), settleMs: between(s.settleMs) };
    if (used + f.faultMs + f.settleMs > s.totalMs) return out;
    used += f.faultMs + f.settleMs;
    out.push(f);
  }
  return out;
}
