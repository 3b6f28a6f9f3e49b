/**
 * Runtime reconciliation, the pure part: which of this node's allocations the container
 * runtime's own sandbox lists prove stale. An allocation is freed only when **all** hold:
 *   - two successful, complete `ListPodSandbox` answers, the later sent at least `spacingMs`
 *     after the earlier, both lack its container id (the CNI container id is the sandbox id);
 *   - the allocation was made at least `graceMs` before the earlier answer was asked for: a
 *     sandbox is listed only after its CNI ADD returned (containerd's CRI sandbox store), so
 *     "not listed" says something only about an allocation older than any sandbox creation;
 *   - no ADD or DEL for that container id is in flight;
 *   - no list in the window is implausible: empty while addresses are held, or shrunk to less
 *     than half of the list before it (by more than `maxPlainDrop`) — then nothing is freed and
 *     the plan says why (a real mass deletion is two consistent small lists a period later).
 * When the allocation was made is known only as an upper bound: the record's own time, or when
 * this process first saw the allocation (it existed by then), whichever is earlier; with
 * neither, its age is unknown and it is never freed. Everything not listed but not proven
 * gone is "suspected", with the reason. No I/O, no clock: `now` is given.
 */
import type { ReleaseEvidence } from '../model/history.js';

/** One allocation of this node, as a back end reports it. */
export interface NodeAllocation {
  /** Unique per allocation *and version* (a record rewritten is another allocation). */
  readonly id: string;
  readonly containerId: string;
  readonly ifname: string;
  /** When the record says it was made (ms since the epoch), when it says. */
  readonly since?: number;
  /** When this process first saw it (ms), when it has seen it before. */
  readonly firstSeen?: number;
}

/** One successful, complete answer of the runtime. */
export interface SandboxList {
  /** When the request was sent (ms): the answer describes the runtime at or after this time. */
  readonly at: number;
  readonly ids: ReadonlySet<string>;
}

export interface RuntimeReconcileInput<A extends NodeAllocation> {
  readonly allocations: readonly A[];
  /** Successful answers, oldest first (the caller keeps the last few; an error clears them). */
  readonly lists: readonly SandboxList[];
  /** Container ids with an ADD or DEL being served right now. */
  readonly inFlight: ReadonlySet<string>;
  readonly graceMs: number;
  /** Least time between the two answers that prove an absence. */
  readonly spacingMs: number;
  readonly now: number;
  /** A shrink by at most this many sandboxes is always plausible (default 3). */
  readonly maxPlainDrop?: number;
}

/** What a release rests on: logged, counted, kept in the status and in the history (model/history.ts). */
export type AbsenceEvidence = ReleaseEvidence;

export type SuspectReason = 'young' | 'one-answer' | 'in-flight' | 'age-unknown' | 'refused';

export interface RuntimeReconcilePlan<A extends NodeAllocation> {
  readonly free: readonly { readonly allocation: A; readonly evidence: AbsenceEvidence }[];
  /** Not listed by the latest answer, not (yet) proven gone. */
  readonly suspected: readonly { readonly allocation: A; readonly reason: SuspectReason }[];
  /** Why the lists were not trusted this time (nothing freed), if they were not. */
  readonly refused?: string;
}

/** The plan; see the module comment for the rules. */
export function planRuntimeReconcile<A extends NodeAllocation>(i: RuntimeReconcileInput<A>): RuntimeReconcilePlan<A> {
  const latest = i.lists[i.lists.length - 1];
  if (latest === undefined) return { free: [], suspected: [] };
  const absent = i.allocations.filter((a) => !latest.ids.has(a.containerId));
  const refused = implausible(i);
  const suspect = (reason: SuspectReason) => (allocation: A) => ({ allocation, reason });
  if (refused !== undefined) return { free: [], suspected: absent.map(suspect('refused')), refused };
  // The earlier answer: the latest one sent at least spacingMs before the latest.
  let earlier: SandboxList | undefined;
  for (let k = i.lists.length - 2; k >= 0; k--) {
    const l = i.lists[k]!;
    if (latest.at - l.at >= i.spacingMs) {
      earlier = l;
      break;
    }
  }
  const free: { allocation: A; evidence: AbsenceEvidence }[] = [];
  const suspected: { allocation: A; reason: SuspectReason }[] = [];
  for (const a of absent) {
    if (i.inFlight.has(a.containerId)) {
      suspected.push(suspect('in-flight')(a));
      continue;
    }
    const made = madeBy(a);
    if (made === undefined) {
      suspected.push(suspect('age-unknown')(a));
      continue;
    }
    if (earlier === undefined || earlier.ids.has(a.containerId)) {
      // Listed by the earlier answer: it was there then, and one answer alone proves nothing.
      suspected.push(suspect(earlier === undefined ? 'one-answer' : 'young')(a));
      continue;
    }
    const ageAtEarlier = earlier.at - made;
    if (ageAtEarlier < i.graceMs) {
      suspected.push(suspect('young')(a));
      continue;
    }
    free.push({ allocation: a, evidence: { containerId: a.containerId, lists: [earlier.at, latest.at], ageMs: ageAtEarlier } });
  }
  return { free, suspected };
}

/** The latest time by which the allocation surely existed, if any is known. */
function madeBy(a: NodeAllocation): number | undefined {
  if (a.since === undefined) return a.firstSeen;
  if (a.firstSeen === undefined) return a.since;
  return Math.min(a.since, a.firstSeen);
}

/** Why the lists are not trusted, or undefined. */
function implausible(i: RuntimeReconcileInput<NodeAllocation>): string | undefined {
  if (i.allocations.length === 0) return undefined;
  const maxDrop = i.maxPlainDrop ?? 3;
  for (let k = 0; k < i.lists.length; k++) {
    const l = i.lists[k]!;
    if (l.ids.size === 0) return `the runtime listed no sandbox while this node holds ${i.allocations.length} allocation(s)`;
    const before = k > 0 ? i.lists[k - 1]! : undefined;
    if (before && l.ids.size * 2 < before.ids.size && before.ids.size - l.ids.size > maxDrop) {
      return `the runtime's sandbox list shrank from ${before.ids.size} to ${l.ids.size} between two answers`;
    }
  }
  return undefined;
}
