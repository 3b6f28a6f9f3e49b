/**
 * The partition rig's checker of the whole history: every CNI call the rig made (ADD and DEL,
 * each with its start and end on this process's clock and its answer), the releases podipam
 * made on its own, the faults injected, and what the datastore holds at the end. Pure: the rig
 * collects, this judges.
 *
 * An attachment is one (container id, network, interface). Its successful ADD answered some
 * addresses; from that answer's end until the start of the first DEL (or CNI GC, or own release
 * by podipam) issued for it afterwards, the attachment certainly holds them (`held`). A DEL
 * that fails or times out may or may not have freed them, so the certain hold ends where the
 * first release attempt starts: no outcome the system may legally have produced is called a
 * violation, and any answer that hands an address out while another attachment certainly holds
 * it is one.
 *
 * Violations:
 *   double-hold       two attachments certainly held one address at one instant
 *   bad-answer        an ADD answer that names no address, one outside its network's pools, or
 *                     one address twice
 *   unreleased        an attachment whose DEL never succeeded by the end
 *   left-held         at the end, the datastore still holds an address for a pod (any handle
 *                     that is not a warm pool's stock, or a warm pool's pod record), or an
 *                     address of the run's own attachments outside the warm pools' stock
 *   check-disagrees   `ipam check` at the end reports leaks or problems
 *
 * Each violation carries its minimal trace: the calls of the attachments involved and the faults
 * that were active during its window.
 */
import { parseCniHandleId } from '../../src/model/handle-id.js';

export type CallKind = 'ADD' | 'DEL';

export interface CallRecord {
  readonly seq: number;
  readonly node: string;
  readonly network: string;
  readonly containerId: string;
  readonly ifname: string;
  readonly kind: CallKind;
  /** ms, this process's clock (Date.now()). */
  readonly start: number;
  readonly end: number;
  readonly ok: boolean;
  /** Bare addresses of a successful ADD's answer. */
  readonly addresses: readonly string[];
  /** Exit code and message of a failed call (or "timed out"). */
  readonly error?: string;
}

/** A release podipam made without a call of the runtime (GC, reconcile), as far as the rig saw it. */
export interface OwnRelease {
  readonly containerId: string;
  readonly network: string;
  readonly ifname: string;
  readonly start: number;
  readonly end: number;
  readonly why: string;
}

export interface FaultRecord {
  readonly kind: string;
  readonly target: string;
  readonly start: number;
  /** When healed (undefined: never healed, the run ended with it). */
  readonly end?: number;
}

export interface FinalState {
  /** Every handle the datastore holds with its addresses, and whether it is a warm pool's idle stock. */
  readonly handles: readonly { readonly handle: string; readonly addresses: readonly string[]; readonly warmStock: boolean }[];
  /** The warm pools' pod records left (keys): a pod's record outlives its DEL only until the write-behind flush. */
  readonly podRecords: readonly string[];
  /** `ipam check --json`: its leaks and problems. */
  readonly check: { readonly leaks: readonly unknown[]; readonly problems: readonly unknown[] };
}

export type ViolationKind = 'double-hold' | 'bad-answer' | 'unreleased' | 'left-held' | 'check-disagrees';

export interface Violation {
  readonly kind: ViolationKind;
  readonly what: string;
  /** The calls that show it, in order, and the faults active meanwhile. */
  readonly trace: readonly CallRecord[];
  readonly faults: readonly FaultRecord[];
}

export interface CheckReport {
  readonly violations: readonly Violation[];
  readonly calls: { readonly add: number; readonly addOk: number; readonly del: number; readonly delOk: number };
  /** Certain holds checked (successful ADDs), distinct addresses seen. */
  readonly holds: number;
  readonly addresses: number;
}

interface Hold {
  readonly key: string;
  readonly address: string;
  readonly from: number;
  readonly until: number;
  readonly calls: CallRecord[];
}

const keyOf = (x: { containerId: string; network: string; ifname: string }): string => `${x.containerId}/${x.network}/${x.ifname}`;

/**
 * Judges the run. `inPools(network, address)`: whether an address may be answered on that
 * network (its pools' CIDRs).
 */
export function checkHistory(
  calls: readonly CallRecord[],
  own: readonly OwnRelease[],
  faults: readonly FaultRecord[],
  final: FinalState,
  inPools: (network: string, address: string) => boolean,
): CheckReport {
  const violations: Violation[] = [];
  const byKey = new Map<string, CallRecord[]>();
  for (const c of [...calls].sort((a, b) => a.start - b.start || a.seq - b.seq)) {
    const list = byKey.get(keyOf(c)) ?? [];
    list.push(c);
    byKey.set(keyOf(c), list);
  }
  const releasesOf = new Map<string, OwnRelease[]>();
  for (const r of own) releasesOf.set(keyOf(r), [...(releasesOf.get(keyOf(r)) ?? []), r]);
  const during = (from: number, until: number): FaultRecord[] => faults.filter((f) => f.start <= until && (f.end ?? Infinity) >= from);

  const holds: Hold[] = [];
  for (const [key, list] of byKey) {
    for (const [i, c] of list.entries()) {
      if (c.kind !== 'ADD' || !c.ok) continue;
      const seen = new Set<string>();
      if (c.addresses.length === 0) violations.push({ kind: 'bad-answer', what: `ADD ${key} answered no address`, trace: [c], faults: [] });
      for (const a of c.addresses) {
        if (seen.has(a)) violations.push({ kind: 'bad-answer', what: `ADD ${key} answered ${a} twice`, trace: [c], faults: [] });
        seen.add(a);
        if (!inPools(c.network, a))
          violations.push({ kind: 'bad-answer', what: `ADD ${key} answered ${a}, outside the pools of network ${c.network}`, trace: [c], faults: [] });
      }
      const nextDel = list.slice(i + 1).find((d) => d.kind === 'DEL');
      const nextOwn = (releasesOf.get(key) ?? []).filter((r) => r.start >= c.start).sort((a, b) => a.start - b.start)[0];
      const until = Math.min(nextDel?.start ?? Infinity, nextOwn?.start ?? Infinity);
      const trace = list.slice(i, nextDel ? list.indexOf(nextDel) + 1 : i + 1);
      for (const a of seen) holds.push({ key, address: a, from: c.end, until, calls: trace });
    }
    // Every attachment the runtime started must end with a successful DEL (the runtime retries).
    const last = list[list.length - 1]!;
    if (!(last.kind === 'DEL' && last.ok)) {
      violations.push({
        kind: 'unreleased',
        what: `${key}: its last call is ${last.kind} ${last.ok ? 'ok' : 'failed'}, no successful DEL after it`,
        trace: list,
        faults: during(list[0]!.start, last.end),
      });
    }
  }

  const byAddress = new Map<string, Hold[]>();
  for (const h of holds) byAddress.set(h.address, [...(byAddress.get(h.address) ?? []), h]);
  for (const [address, list] of byAddress) {
    list.sort((a, b) => a.from - b.from);
    for (let i = 0; i < list.length; i++) {
      const a = list[i]!;
      for (let j = i + 1; j < list.length && list[j]!.from < a.until; j++) {
        const b = list[j]!;
        if (b.key === a.key) continue;
        const from = Math.max(a.from, b.from);
        const until = Math.min(a.until, b.until);
        if (from < until) {
          const trace = [...a.calls, ...b.calls].sort((x, y) => x.start - y.start || x.seq - y.seq);
          violations.push({
            kind: 'double-hold',
            what: `${address} certainly held by ${a.key} and ${b.key} at once, from ${iso(from)} for ${until === Infinity ? 'ever' : `${until - from} ms`}`,
            trace,
            faults: during(Math.min(a.from, b.from), until === Infinity ? Infinity : until),
          });
        }
      }
    }
  }

  // At the end: nothing held for a pod, and none of the run's addresses outside the warm stock.
  const stock = new Set(final.handles.filter((h) => h.warmStock).flatMap((h) => h.addresses));
  const answered = new Set(holds.map((h) => h.address));
  // The calls of an attachment and the faults during them: what a left-held violation shows.
  const story = (list: readonly CallRecord[]): { trace: CallRecord[]; faults: FaultRecord[] } =>
    list.length === 0 ? { trace: [], faults: [] } : { trace: [...list], faults: during(list[0]!.start, Math.max(...list.map((c) => c.end))) };
  for (const h of final.handles) {
    if (h.warmStock) continue;
    const parts = parseCniHandleId(h.handle);
    violations.push({
      kind: 'left-held',
      what: `handle ${h.handle} still holds ${h.addresses.join(', ') || 'nothing'} after every attachment's DEL`,
      ...story(parts ? (byKey.get(keyOf(parts)) ?? []) : []),
    });
  }
  for (const k of final.podRecords)
    violations.push({ kind: 'left-held', what: `warm pod record ${k} is left after every attachment's DEL`, trace: [], faults: [] });
  const heldAtEnd = new Set(final.handles.flatMap((h) => h.addresses));
  for (const a of answered)
    if (heldAtEnd.has(a) && !stock.has(a))
      violations.push({
        kind: 'left-held',
        what: `${a} (answered during the run) is held at the end outside any warm pool's stock`,
        ...story(
          holds
            .filter((h) => h.address === a)
            .flatMap((h) => h.calls)
            .sort((x, y) => x.start - y.start || x.seq - y.seq),
        ),
      });
  if (final.check.leaks.length > 0 || final.check.problems.length > 0) {
    violations.push({
      kind: 'check-disagrees',
      what: `ipam check at the end: ${JSON.stringify({ leaks: final.check.leaks, problems: final.check.problems }).slice(0, 2000)}`,
      trace: [],
      faults: [],
    });
  }

  const count = (k: CallKind, ok?: boolean): number => calls.filter((c) => c.kind === k && (ok === undefined || c.ok === ok)).length;
  return {
    violations,
    calls: { add: count('ADD'), addOk: count('ADD', true), del: count('DEL'), delOk: count('DEL', true) },
    holds: holds.length,
    addresses: byAddress.size,
  };
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** A violation as lines for a failure message: what, then its trace and faults, one per line. */
export function formatViolation(v: Violation): string {
  const lines = [`${v.kind}: ${v.what}`];
  for (const c of v.trace) {
    lines.push(
      `  #${c.seq} ${iso(c.start)} +${c.end - c.start}ms ${c.kind} ${c.node} ${c.network} ${c.containerId.slice(0, 12)} ${c.ifname} → ${c.ok ? `ok ${c.addresses.join(',')}` : `failed: ${(c.error ?? '').slice(0, 200)}`}`,
    );
  }
  for (const f of v.faults) lines.push(`  fault ${f.kind} ${f.target} ${iso(f.start)} → ${f.end === undefined ? 'not healed' : iso(f.end)}`);
  return lines.join('\n');
}
