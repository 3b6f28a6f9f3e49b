/**
 * The load generator behind `podipam simulate`: drives a running `podipam serve` through its
 * HTTP API as a cluster would — nodes join, pods are added and deleted through the same
 * allocation path the CNI plugin takes — so a newcomer can watch the dashboard move and the
 * scale benchmark has a driver. Bounded: N + M + 2·round(R·M) calls (N + M more with
 * cleanup), at most `concurrency` in flight, each retried at most 5 times on 503 (contention).
 */
import { randomBytes } from 'node:crypto';
import { mulberry32 } from '../util/mulberry32.js';

export interface SimulateOptions {
  readonly server: string;
  readonly token?: string;
  /** Where the token came from (findAdminToken), for messages. */
  readonly tokenSource?: string;
  readonly nodes: number;
  readonly pods: number;
  /** Fraction of pods deleted and replaced after the initial fill (0 = none, 1 = as many as pods). */
  readonly churn: number;
  readonly concurrency: number;
  /** Calls per second at most (0 = unlimited), to slow a demo down to watching speed. */
  readonly rate: number;
  readonly network: string;
  readonly nodePrefix: string;
  /** Delete the pods, nodes and blocks this run created at the end. */
  readonly cleanup: boolean;
  /** Told the number of calls to come; ticked once per call made, finished at the end. */
  readonly progress?: (total: number) => SimulateProgress;
  /** Seeded for repeatable churn choices. */
  readonly seed?: number;
}

export interface SimulateResult {
  readonly nodes: number;
  readonly added: number;
  readonly deleted: number;
  readonly failed: number;
  readonly errors: readonly string[];
  readonly seconds: number;
  /** Pods alive at the end: handle → node. */
  readonly live: number;
}

export interface SimulateProgress {
  tick(): void;
  finish(): void;
}

/** Why the server cannot be driven at all: its token refused, a read-only role, or no pool to allocate from. */
export class SimulateSetupError extends Error {
  override readonly name = 'SimulateSetupError';
  constructor(
    readonly reason: 'token-refused' | 'read-only' | 'no-pools',
    message: string,
  ) {
    super(message);
  }
}

const MAX_ATTEMPTS = 5;

class ApiClient {
  constructor(
    readonly base: string,
    readonly token?: string,
  ) {}

  async call(method: string, path: string, body?: unknown): Promise<{ status: number; data: any }> {
    for (let attempt = 1; ; attempt++) {
      const headers: Record<string, string> = { accept: 'application/json' };
      if (this.token) headers.authorization = `Bearer ${this.token}`;
      if (body !== undefined) headers['content-type'] = 'application/json';
      let res: Response;
      try {
        res = await fetch(`${this.base}/api/v1${path}`, {
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(30_000),
        });
      } catch (e) {
        throw new Error(`cannot reach ${this.base}: ${(e as Error).cause instanceof Error ? ((e as Error).cause as Error).message : (e as Error).message}`, {
          cause: e,
        });
      }
      const text = await res.text();
      const data = text ? JSON.parse(text) : undefined;
      if (res.status === 503 && attempt < MAX_ATTEMPTS) {
        await sleep(50 * 2 ** attempt);
        continue;
      }
      return { status: res.status, data };
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function errorText(r: { status: number; data: any }): string {
  return `HTTP ${r.status}: ${r.data?.error?.message ?? JSON.stringify(r.data)}`;
}

/** Runs the simulation against `o.server`; throws only when the server cannot be used at all. */
export async function simulate(o: SimulateOptions): Promise<SimulateResult> {
  const api = new ApiClient(o.server.replace(/\/+$/, ''), o.token);
  const started = Date.now();
  const first = await api.call('GET', '/overview');
  if (first.status === 401 || first.status === 403)
    throw new SimulateSetupError('token-refused', `${o.server} refused the token from ${o.tokenSource ?? 'nowhere'} (${errorText(first)})`);
  if (first.status !== 200) throw new Error(`${o.server} answered GET /api/v1/overview with ${errorText(first)}`);
  if (!first.data.pools?.length) throw new SimulateSetupError('no-pools', `${o.server} has no pools`);
  const who = await api.call('GET', '/whoami');
  if (who.status === 200 && who.data.role !== 'admin') {
    throw new SimulateSetupError('read-only', `${o.server} lets this client only read (role "${who.data.role}", token from ${o.tokenSource ?? 'nowhere'})`);
  }

  const churnOps = Math.round(o.churn * o.pods);
  const total = o.nodes + o.pods + 2 * churnOps + (o.cleanup ? o.pods + o.nodes : 0);
  const progress = o.progress?.(total) ?? { tick: () => {}, finish: () => {} };
  const random = mulberry32(o.seed ?? Date.now());
  const runId = randomBytes(4).toString('hex');
  const nodes = Array.from({ length: o.nodes }, (_, i) => `${o.nodePrefix}-${String(i + 1).padStart(String(o.nodes).length, '0')}`);
  const live = new Map<string, string>(); // handle → node
  // Cleanup deletes only the node records this run created: one that existed (409) is someone's.
  const created = new Set<string>();
  const errors: string[] = [];
  let added = 0;
  let deleted = 0;
  let failed = 0;
  let podSeq = 0;
  let nextSlot = Date.now();
  const pace = async (): Promise<void> => {
    if (o.rate <= 0) return;
    const now = Date.now();
    const at = Math.max(now, nextSlot);
    nextSlot = at + 1000 / o.rate;
    if (at > now) await sleep(at - now);
  };
  const fail = (what: string): void => {
    failed++;
    if (errors.length < 20) errors.push(what);
  };

  /** Runs `jobs` with at most o.concurrency in flight. */
  const runAll = async (jobs: (() => Promise<void>)[]): Promise<void> => {
    let i = 0;
    const worker = async (): Promise<void> => {
      while (i < jobs.length) {
        const job = jobs[i++] as () => Promise<void>;
        await pace();
        await job();
        progress.tick();
      }
    };
    await Promise.all(Array.from({ length: Math.min(o.concurrency, jobs.length) }, worker));
  };
  const addPod = async (node: string): Promise<void> => {
    const containerId = `sim${runId}${(podSeq++).toString(16).padStart(6, '0')}`;
    const r = await api.call('POST', '/allocations', { node, network: o.network, containerId, ifname: 'eth0' });
    if (r.status === 201 || r.status === 200) {
      live.set(r.data.handle, node);
      added++;
    } else fail(`add ${containerId} on ${node}: ${errorText(r)}`);
  };
  const delPod = async (handle: string, node: string): Promise<void> => {
    const r = await api.call('DELETE', `/allocations/${encodeURIComponent(handle)}?node=${encodeURIComponent(node)}`);
    if (r.status === 200) deleted++;
    else fail(`delete ${handle}: ${errorText(r)}`);
  };

  try {
    await runAll(
      nodes.map((name) => async () => {
        const r = await api.call('POST', '/nodes', { name });
        if (r.status === 201) created.add(name);
        if (r.status !== 201 && !(r.status === 409 && r.data?.error?.code === 'node_exists')) fail(`join ${name}: ${errorText(r)}`);
      }),
    );
    await runAll(Array.from({ length: o.pods }, (_, p) => () => addPod(nodes[p % nodes.length] as string)));
    // Churn: each step deletes a random live pod, then adds one on a random node.
    const churnJobs: (() => Promise<void>)[] = [];
    for (let k = 0; k < churnOps; k++) {
      churnJobs.push(async () => {
        const handles = [...live.keys()];
        if (handles.length === 0) return;
        const h = handles[Math.floor(random() * handles.length)] as string;
        const node = live.get(h) as string;
        live.delete(h);
        await delPod(h, node);
      });
      churnJobs.push(() => addPod(nodes[Math.floor(random() * nodes.length)] as string));
    }
    // Serial pairs keep "delete then add" in order while still using the worker pool.
    await runAll(churnJobs);
    if (o.cleanup) {
      const pods = [...live];
      live.clear();
      await runAll(
        pods.map(
          ([h, node]) =>
            () =>
              delPod(h, node),
        ),
      );
      // Deleting a node writes the proof it is gone; `release=now` then releases its blocks at
      // once (not after GC's grace period), so nothing of this run is left for `ipam check`.
      await runAll(
        nodes
          .filter((name) => created.has(name))
          .map((name) => async () => {
            const r = await api.call('DELETE', `/nodes/${encodeURIComponent(name)}?release=now`);
            if (r.status !== 200 && r.status !== 404) fail(`remove ${name}: ${errorText(r)}`);
          }),
      );
    }
  } finally {
    progress.finish();
  }
  return { nodes: nodes.length, added, deleted, failed, errors, seconds: (Date.now() - started) / 1000, live: live.size };
}
