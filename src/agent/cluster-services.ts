/**
 * The agent's ClusterHost (src/cluster/service/cluster-host.ts): one open store and one ClusterIpam per
 * datastore URL for the agent's life (the hints stay in memory), and per node a queue that runs
 * one call at a time — as the node lock does between plugin processes — except that the ADDs
 * waiting in it when it becomes free are taken together and written as one transaction
 * (group commit: no added latency when idle, fewer transactions under a burst), and so are the
 * DELs (releases by handle, src/cluster/txn/release-group.ts).
 *
 * `close` (the agent shutting down) refuses new calls and the ones still queued with code 11 (the
 * runtime retries them on the next agent), waits for the calls already running to end, and only
 * then closes the stores: no call ever runs on a closed store, and no store is opened after.
 */
import type { ClusterHost, ClusterIpam } from '../cluster/service/index.js';
import type { AssignRequest, Assignment } from '../cluster/records/index.js';
import type { Released } from '../cluster/txn/index.js';
import type { Store } from '../store/index.js';
import { CniCode, CniError } from '../cni/errors.js';
import { TRACING, addPhase, currentSpan, schedMs, traceSched } from '../util/call-trace.js';

/** Most ADDs (or DELs) combined into one transaction. */
export const MAX_GROUP = 32;

/**
 * A node in a burst — its previous transaction carried several calls and ended less than
 * BURST_WINDOW_MS ago — does not write a lone ADD or DEL at once: it waits up to LINGER_MS for
 * the calls of the burst still on their way (the runtime's next execs) to join it, so a burst
 * costs fewer, larger transactions (less datastore and agent CPU per call). A node that is
 * not in a burst (idle, or one caller's calls in turn: every transaction carries one call)
 * never waits.
 */
export const LINGER_MS = 2;
export const BURST_WINDOW_MS = 50;

interface Queue {
  jobs: Job[];
  busy: boolean;
  /** When the last transaction carrying several calls ended (performance.now); 0: none. */
  lastGroupEnd: number;
}

/**
 * A queued call. The three kinds are objects of one shape (every field, in one order, the
 * others' undefined): with kinds of three shapes, the drain loop's optimised code, made for the
 * kinds it had seen, was thrown away at the first of another (V8's "wrong map") — and with V8
 * optimising during the warm-up only, left in its baseline tiers for the agent's life.
 */
type Job =
  | {
      readonly kind: 'assign';
      readonly req: AssignRequest;
      readonly handle: undefined;
      readonly fn: undefined;
      readonly resolve: (a: Assignment[]) => void;
      readonly reject: (e: unknown) => void;
      readonly trace: Trace | undefined;
    }
  | {
      readonly kind: 'release';
      readonly req: undefined;
      readonly handle: string;
      readonly fn: undefined;
      readonly resolve: (r: Released[]) => void;
      readonly reject: (e: unknown) => void;
      readonly trace: Trace | undefined;
    }
  | {
      readonly kind: 'run';
      readonly req: undefined;
      readonly handle: undefined;
      readonly fn: (ipam: ClusterIpam) => Promise<unknown>;
      readonly resolve: (v: unknown) => void;
      readonly reject: (e: unknown) => void;
      readonly trace: Trace | undefined;
    };

/** PODIPAM_TRACE=1: the job's caller's span and when it was queued. */
interface Trace {
  readonly span: Record<string, number> | undefined;
  readonly queued: number;
}
const traceNow = (): Trace | undefined => (TRACING ? { span: currentSpan(), queued: performance.now() } : undefined);
let sched = { cpu: 0, runq: 0 };
const traceStart = (jobs: readonly Job[]): number => {
  const now = TRACING ? performance.now() : 0;
  for (const j of jobs) if (j.trace) addPhase(j.trace.span, 'queue', now - j.trace.queued);
  if (TRACING) sched = schedMs();
  return now;
};
const traceEnd = (jobs: readonly Job[], start: number, phase: string): void => {
  if (!TRACING) return;
  const ms = performance.now() - start;
  for (const j of jobs) if (j.trace) addPhase(j.trace.span, phase, ms);
  for (const j of jobs) if (j.trace) traceSched(j.trace.span, phase, sched, start);
};

interface Datastore {
  readonly store: Store;
  readonly ipam: ClusterIpam;
  /** The same service per node served, stamped as that node's in the history (src/cluster/records/history-stamp.ts). */
  readonly byNode: Map<string, ClusterIpam>;
}

function ipamOf(d: Datastore, node: string): ClusterIpam {
  let ipam = d.byNode.get(node);
  if (!ipam) d.byNode.set(node, (ipam = d.ipam.withWriter(node)));
  return ipam;
}

export interface ClusterServiceStats {
  /** Datastore round trips (reads, lists, transactions) of every open store. */
  roundTrips(): number;
  /** Group commits: batches written and ADDs they carried. */
  readonly groups: { batches: number; adds: number };
  /** Group releases: batches written and DELs they carried. */
  readonly releaseGroups: { batches: number; dels: number };
}

export interface ClusterServicesOptions {
  /** Opens a datastore URL (default: openStore). Tests wrap a real store here, e.g. to lose a txn's answer after it committed. */
  readonly openStore?: (url: string) => Promise<Store>;
  /** How long after a group a node counts as in a burst (default BURST_WINDOW_MS; the agent's warm-up: shorter, its rounds being ms apart). */
  readonly burstWindowMs?: number;
}

export class ClusterServices implements ClusterHost, ClusterServiceStats {
  readonly #openStore: ((url: string) => Promise<Store>) | undefined;
  readonly #burstWindowMs: number;

  constructor(o: ClusterServicesOptions = {}) {
    this.#openStore = o.openStore;
    this.#burstWindowMs = o.burstWindowMs ?? BURST_WINDOW_MS;
  }

  readonly #stores = new Map<string, Promise<Datastore>>();
  readonly #queues = new Map<string, Queue>();
  readonly groups = { batches: 0, adds: 0 };
  readonly releaseGroups = { batches: 0, dels: 0 };
  #closedRoundTrips = 0;
  #closed = false;
  /** Queues being drained right now (their running call ends before the stores close). */
  readonly #draining = new Set<Promise<void>>();

  run<T>(datastore: string, node: string, fn: (ipam: ClusterIpam) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#enqueue(datastore, node, {
        kind: 'run',
        req: undefined,
        handle: undefined,
        fn,
        resolve: resolve as (v: unknown) => void,
        reject,
        trace: traceNow(),
      });
    });
  }

  assign(datastore: string, req: AssignRequest): Promise<Assignment[]> {
    return new Promise<Assignment[]>((resolve, reject) => {
      this.#enqueue(datastore, req.node, { kind: 'assign', req, handle: undefined, fn: undefined, resolve, reject, trace: traceNow() });
    });
  }

  release(datastore: string, node: string, handle: string): Promise<Released[]> {
    return new Promise<Released[]>((resolve, reject) => {
      this.#enqueue(datastore, node, { kind: 'release', req: undefined, handle, fn: undefined, resolve, reject, trace: traceNow() });
    });
  }

  /** The open store of `datastore` (opened now if need be), for reads outside the node queues (the headroom resync). */
  async storeOf(datastore: string): Promise<Store> {
    return (await this.#open(datastore)).store;
  }

  roundTrips(): number {
    let n = this.#closedRoundTrips;
    for (const d of this.#opened) n += d.store.roundTrips;
    return n;
  }

  /** Stores opened successfully (for their counters). */
  readonly #opened = new Set<Datastore>();

  /** Datastore URLs in use. */
  datastores(): string[] {
    return [...this.#stores.keys()];
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const q of this.#queues.values()) for (const j of q.jobs.splice(0)) j.reject(shuttingDown());
    while (this.#draining.size > 0) await Promise.allSettled([...this.#draining]);
    const all = [...this.#stores.values()];
    this.#stores.clear();
    for (const p of all) {
      try {
        const d = await p;
        this.#opened.delete(d);
        this.#closedRoundTrips += d.store.roundTrips;
        await d.store.close();
      } catch {
        /* never opened */
      }
    }
  }

  #enqueue(datastore: string, node: string, job: Job): void {
    if (this.#closed) return job.reject(shuttingDown());
    const key = `${datastore}\n${node}`;
    let q = this.#queues.get(key);
    if (!q) this.#queues.set(key, (q = { jobs: [], busy: false, lastGroupEnd: 0 }));
    q.jobs.push(job);
    if (q.busy) return;
    // Drain after the calls that arrived in this turn of the event loop have queued too: a
    // synchronous store (SQLite) never leaves a transaction in flight for them to wait behind.
    q.busy = true;
    this.#schedule(datastore, key, q);
  }

  #schedule(datastore: string, key: string, q: Queue): void {
    const running = new Promise<void>((resolve) => setImmediate(() => void this.#drain(datastore, key, q).finally(resolve)));
    this.#draining.add(running);
    void running.then(() => this.#draining.delete(running));
  }

  async #drain(datastore: string, key: string, q: Queue): Promise<void> {
    const node = key.slice(datastore.length + 1); // the queue's key: `${datastore}\n${node}`
    let lingered = false;
    try {
      while (q.jobs.length > 0) {
        let d: Datastore;
        try {
          d = await this.#open(datastore);
        } catch (e) {
          for (const j of q.jobs.splice(0)) j.reject(e);
          break;
        }
        const first = q.jobs[0];
        if (first === undefined) break; // close() refused them while the store was opening
        if (first.kind === 'run') {
          q.jobs.shift();
          const t = traceStart([first]);
          // A callback that throws synchronously settles its own job, never the loop.
          await Promise.resolve()
            .then(() => first.fn(ipamOf(d, node)))
            .then(first.resolve, first.reject);
          traceEnd([first], t, 'run');
          continue;
        }
        if (!lingered && this.#lone(q)) {
          lingered = true;
          await new Promise((r) => setTimeout(r, LINGER_MS));
          continue; // close() may have refused them meanwhile
        }
        lingered = false;
        if (first.kind === 'release') {
          await this.#releases(ipamOf(d, node), node, q);
          continue;
        }
        let n = 0;
        while (n < q.jobs.length && n < MAX_GROUP && q.jobs[n]!.kind === 'assign') n++;
        const group = q.jobs.splice(0, n) as Extract<Job, { kind: 'assign' }>[];
        const t = traceStart(group);
        if (group.length === 1) {
          await ipamOf(d, node).assign(group[0]!.req).then(group[0]!.resolve, group[0]!.reject);
          traceEnd(group, t, 'store');
          continue;
        }
        this.groups.batches++;
        this.groups.adds += group.length;
        try {
          const outcomes = await ipamOf(d, node).assignMany(
            group[0]!.req.node,
            group.map((j) => j.req),
          );
          outcomes.forEach((o, i) => (o.ok ? group[i]!.resolve(o.assignments) : group[i]!.reject(o.error)));
        } catch (e) {
          for (const j of group) j.reject(e);
        }
        q.lastGroupEnd = Math.max(performance.now(), 1e-3); // never 0 (0: none)
        traceEnd(group, t, 'store');
      }
    } finally {
      q.busy = false;
      // An idle queue is forgotten, unless it is in a burst (#lone reads when its last group ended).
      if (q.jobs.length === 0 && !(q.lastGroupEnd > 0 && performance.now() - q.lastGroupEnd < this.#burstWindowMs)) this.#queues.delete(key);
      else {
        // Jobs queued while an error unwound the loop: drain them too, never leave them waiting.
        q.busy = true;
        this.#schedule(datastore, key, q);
      }
    }
  }

  /** True when the head of `q` is a lone ADD or DEL (the next job is not of its kind) and the node is in a burst. */
  #lone(q: Queue): boolean {
    const [a, b] = q.jobs;
    if (a === undefined || (b !== undefined && b.kind === a.kind)) return false;
    return q.lastGroupEnd > 0 && performance.now() - q.lastGroupEnd < this.#burstWindowMs;
  }

  /** The releases at the head of `q` (up to MAX_GROUP): alone, or as one group release. */
  async #releases(ipam: ClusterIpam, node: string, q: Queue): Promise<void> {
    let n = 0;
    while (n < q.jobs.length && n < MAX_GROUP && q.jobs[n]!.kind === 'release') n++;
    const group = q.jobs.splice(0, n) as Extract<Job, { kind: 'release' }>[];
    const t = traceStart(group);
    if (group.length === 1) {
      await ipam.releaseHandle(group[0]!.handle, node).then(group[0]!.resolve, group[0]!.reject);
    } else {
      this.releaseGroups.batches++;
      this.releaseGroups.dels += group.length;
      try {
        const outcomes = await ipam.releaseMany(
          node,
          group.map((j) => j.handle),
        );
        outcomes.forEach((o, i) => (o.ok ? group[i]!.resolve(o.released) : group[i]!.reject(o.error)));
      } catch (e) {
        for (const j of group) j.reject(e);
      }
      q.lastGroupEnd = Math.max(performance.now(), 1e-3);
    }
    traceEnd(group, t, 'store');
  }

  #open(datastore: string): Promise<Datastore> {
    if (this.#closed) return Promise.reject(shuttingDown());
    let p = this.#stores.get(datastore);
    if (!p) {
      p = (async () => {
        const [{ openStore }, { ClusterIpam }] = await Promise.all([import('../store/open-store.js'), import('../cluster/service/index.js')]);
        const store = await (this.#openStore ?? openStore)(datastore);
        const d = { store, ipam: new ClusterIpam(store), byNode: new Map<string, ClusterIpam>() };
        this.#opened.add(d);
        return d;
      })();
      this.#stores.set(datastore, p);
      // An open that fails is forgotten, so the next call tries again (the datastore may be back).
      p.catch(() => this.#stores.get(datastore) === p && this.#stores.delete(datastore));
    }
    return p;
  }
}

function shuttingDown(): CniError {
  return new CniError(CniCode.TryAgainLater, 'podipam agent: shutting down; try again (the next agent serves it)');
}
