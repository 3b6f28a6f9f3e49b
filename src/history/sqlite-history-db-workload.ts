/**
 * A synthetic history at scale, for bench/history.ts and the scale test beside this file: `pods`
 * addresses, each held in turn by several pods (each hold: a pod of one of 40 namespaces — a
 * third of them StatefulSet-like names that come back with a new uid — a 64-hex container id,
 * a handle `k8s-pod-network:<id>:eth0`, one of 1,000 nodes, its /26 block), durations from a
 * minute to 30 days log-uniformly, idle gaps of up to 10 minutes; holds still running at the end
 * of the span stay open. Events (starts, ends) are applied in time order, `batch` per
 * transaction; then point queries at random addresses and instants, each answer checked against
 * the generated holds.
 */
import { mulberry32 as prng } from '../util/mulberry32.js';
import type { HistoryDb, HoldStart } from './history-db.js';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
export const WORKLOAD_T0 = Date.UTC(2026, 8, 1);

export interface WorkloadOptions {
  readonly events: number;
  /** Distinct addresses (the cluster's pods at any one time, about). */
  readonly pods: number;
  readonly seed?: number;
  /** Events per apply() (one transaction). */
  readonly batch?: number;
}

interface GenHold {
  readonly start: HoldStart;
  readonly until: number | undefined;
}

export interface Workload {
  readonly holds: readonly GenHold[];
  /** Per address index, its holds in time order. */
  readonly byAddress: readonly (readonly GenHold[])[];
  readonly addresses: readonly string[];
  readonly podNames: readonly { readonly namespace: string; readonly name: string }[];
  readonly events: number;
  /** The last event's time. */
  readonly end: number;
}

function addressOf(i: number): string {
  return `10.${64 + (i >>> 16)}.${(i >>> 8) & 255}.${i & 255}`;
}

export function generateWorkload(o: WorkloadOptions): Workload {
  const rnd = prng(o.seed ?? 21);
  const hex = (n: number): string => {
    let s = '';
    while (s.length < n) s += ((rnd() * 2 ** 32) >>> 0).toString(16).padStart(8, '0');
    return s.slice(0, n);
  };
  const addresses = Array.from({ length: o.pods }, (_, i) => addressOf(i));
  const next = addresses.map(() => WORKLOAD_T0 + Math.floor(rnd() * DAY)); // when each address is next free
  const byAddress: GenHold[][] = addresses.map(() => []);
  const holds: GenHold[] = [];
  const stateful = Array.from({ length: Math.max(1, Math.floor(o.pods / 8)) }, (_, i) => ({ namespace: `ns-${i % 40}`, name: `db-${i}` }));
  const podNames = new Map<string, { namespace: string; name: string }>();
  let events = 0;
  let last = WORKLOAD_T0;
  const hold = (a: number, open: boolean): void => {
    const from = next[a]! + Math.floor(rnd() * 10 * MINUTE);
    const duration = Math.floor(Math.exp(Math.log(MINUTE) + rnd() * (Math.log(30 * DAY) - Math.log(MINUTE))));
    const pod = rnd() < 1 / 3 ? stateful[Math.floor(rnd() * stateful.length)]! : { namespace: `ns-${Math.floor(rnd() * 40)}`, name: `web-${hex(8)}-${hex(5)}` };
    podNames.set(`${pod.namespace}/${pod.name}`, pod);
    const containerId = hex(64);
    const h: GenHold = {
      start: {
        address: addresses[a]!,
        handle: `k8s-pod-network:${containerId}:eth0`,
        pod: { ...pod, uid: `${hex(8)}-${hex(4)}-${hex(4)}-${hex(4)}-${hex(12)}` },
        containerId,
        ifname: 'eth0',
        network: 'k8s-pod-network',
        node: `node-${Math.floor(rnd() * 1000)}`,
        pool: 'default',
        block: `${addresses[a]!.replace(/\.\d+$/, '')}.${a & 255 & ~63}/26`,
        from: { at: from },
      },
      until: open ? undefined : from + duration,
    };
    holds.push(h);
    byAddress[a]!.push(h);
    events += open ? 1 : 2;
    next[a] = from + duration;
    last = Math.max(last, open ? from : from + duration);
  };
  // Closed holds at random addresses, then every address's current pod (one event each).
  while (events + 2 <= o.events - o.pods) hold(Math.floor(rnd() * o.pods), false);
  for (let a = 0; a < o.pods && events < o.events; a++) hold(a, true);
  return { holds, byAddress, addresses, podNames: [...podNames.values()], events, end: last };
}

export interface FillResult {
  readonly events: number;
  /** apply() calls (batches are cut where a hold would start and end in one). */
  readonly transactions: number;
  readonly ms: number;
}

/** Applies the workload's events in time order, at most `batch` events per transaction. */
export function fillHistory(db: HistoryDb, w: Workload, batch = 20_000, source = 'sqlite:///bench/store.db'): FillResult {
  type Ev = { t: number; h: GenHold; end: boolean };
  const evs: Ev[] = [];
  for (const h of w.holds) {
    evs.push({ t: h.start.from.at, h, end: false });
    if (h.until !== undefined) evs.push({ t: h.until, h, end: true });
  }
  evs.sort((x, y) => x.t - y.t || Number(y.end) - Number(x.end));
  const t0 = performance.now();
  let rev = 0;
  let transactions = 0;
  // A batch applies its ends before its starts: a hold that starts and ends in one stretch of
  // events needs two batches (the follower cuts its batches alike).
  let cur: Ev[] = [];
  const startedHere = new Set<GenHold>();
  const flush = (): void => {
    if (cur.length === 0) return;
    db.apply({
      ends: cur.filter((e) => e.end).map((e) => ({ address: e.h.start.address, handle: e.h.start.handle, until: { at: e.t }, why: 'del' as const })),
      starts: cur.filter((e) => !e.end).map((e) => e.h.start),
      position: { source, revision: ++rev, at: cur[cur.length - 1]!.t },
    });
    transactions++;
    cur = [];
    startedHere.clear();
  };
  for (const e of evs) {
    if (cur.length >= batch || (e.end && startedHere.has(e.h))) flush();
    cur.push(e);
    if (!e.end) startedHere.add(e.h);
  }
  flush();
  return { events: evs.length, transactions, ms: performance.now() - t0 };
}

export interface Latency {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

function latency(samples: number[]): Latency {
  samples.sort((a, b) => a - b);
  const q = (f: number): number => samples[Math.min(samples.length - 1, Math.floor(f * samples.length))]!;
  return { p50: q(0.5), p99: q(0.99), max: samples[samples.length - 1]! };
}

export interface QueryResult {
  readonly holderAt: Latency;
  readonly holdsOfAddress: Latency;
  readonly holdsOfPod: Latency;
  /** Answers that disagreed with the generated holds (want 0), with the first few described. */
  readonly wrong: number;
  readonly examples: readonly string[];
}

/** `n` queries of each kind at random addresses (5% never used), instants and pods, checked against `w`. */
export function queryHistory(db: HistoryDb, w: Workload, n: number, seed = 7): QueryResult {
  const rnd = prng(seed);
  const wrong: string[] = [];
  let bad = 0;
  const fail = (m: string): void => {
    bad++;
    if (wrong.length < 5) wrong.push(m);
  };
  const pick = (): { a: number; address: string } => {
    const a = Math.floor(rnd() * w.addresses.length * 1.05);
    return { a, address: a < w.addresses.length ? w.addresses[a]! : `10.200.${(a >>> 8) & 255}.${a & 255}` };
  };
  const tAt: number[] = [];
  const tAddr: number[] = [];
  const tPod: number[] = [];
  for (let i = 0; i < n; i++) {
    const { a, address } = pick();
    const mine = w.byAddress[a] ?? [];
    // Half the instants inside a random hold of the address, half anywhere in the span.
    const h = mine.length > 0 && rnd() < 0.5 ? mine[Math.floor(rnd() * mine.length)]! : undefined;
    const at = h
      ? h.start.from.at + Math.floor(rnd() * ((h.until ?? h.start.from.at + DAY) - h.start.from.at))
      : WORKLOAD_T0 + Math.floor(rnd() * (w.end - WORKLOAD_T0));
    let t0 = performance.now();
    const got = db.holderAt(address, at);
    tAt.push(performance.now() - t0);
    const want = mine.find((x) => x.start.from.at <= at && (x.until === undefined || at < x.until));
    if (!got.known || got.hold?.handle !== want?.start.handle)
      fail(`holderAt(${address}, ${at}): got ${JSON.stringify(got)}, want ${want?.start.handle ?? 'none'}`);
    t0 = performance.now();
    const all = db.holdsOfAddress(address);
    tAddr.push(performance.now() - t0);
    if (all.length !== mine.length) fail(`holdsOfAddress(${address}): ${all.length} holds, want ${mine.length}`);
    const pod = w.podNames[Math.floor(rnd() * w.podNames.length)]!;
    t0 = performance.now();
    const ofPod = db.holdsOfPod(pod.namespace, pod.name);
    tPod.push(performance.now() - t0);
    if (ofPod.length === 0 || ofPod.some((x) => x.pod?.name !== pod.name || x.pod.namespace !== pod.namespace))
      fail(`holdsOfPod(${pod.namespace}/${pod.name}): ${ofPod.length} holds`);
  }
  return { holderAt: latency(tAt), holdsOfAddress: latency(tAddr), holdsOfPod: latency(tPod), wrong: bad, examples: wrong };
}
