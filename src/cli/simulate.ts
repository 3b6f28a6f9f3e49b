/**
 * `podipam simulate [--server URL] --nodes N --pods M [--churn R]`: drives a running
 * `podipam serve` through its HTTP API as a cluster would — nodes join, pods are added and
 * deleted through the same allocation path the CNI plugin takes — so a newcomer can watch the
 * dashboard move and the scale benchmark has a driver. Bounded: N + M + 2·round(R·M) calls,
 * at most `--concurrency` in flight, each retried at most 5 times on 503 (contention).
 */
import { CNI_NAME } from '../model/cni-name.js';
import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import { createProgress } from './progress.js';
import { UsageError } from './usage-error.js';
import { commandLineTokenWarning, findAdminToken } from './admin-token.js';
import { defaultDataDir } from './datastore-url.js';
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
  readonly progress?: boolean;
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
        res = await fetch(`${this.base}/api/v1${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(30_000) });
      } catch (e) {
        throw new Error(`cannot reach ${this.base}: ${(e as Error).cause instanceof Error ? ((e as Error).cause as Error).message : (e as Error).message}`);
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
  if (first.status === 401 || first.status === 403) throw new Error(`${o.server} refused the token from ${o.tokenSource ?? 'nowhere'} (${errorText(first)}): set $PODIPAM_ADMIN_TOKEN, or give --data-dir of that server`);
  if (first.status !== 200) throw new Error(`${o.server} answered GET /api/v1/overview with ${errorText(first)}`);
  if (!first.data.pools?.length) throw new Error(`${o.server} has no pools: create one first (podipam pool create NAME --cidr CIDR)`);
  const who = await api.call('GET', '/whoami');
  if (who.status === 200 && who.data.role !== 'admin') {
    throw new Error(`${o.server} lets this client only read (role "${who.data.role}", token from ${o.tokenSource ?? 'nowhere'}): set $PODIPAM_ADMIN_TOKEN, or give --data-dir of that server (its serve.token)`);
  }

  const churnOps = Math.round(o.churn * o.pods);
  const total = o.nodes + o.pods + 2 * churnOps + (o.cleanup ? o.pods + o.nodes : 0);
  const progress = createProgress({ total, label: 'simulate', force: o.progress });
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
      await runAll(pods.map(([h, node]) => () => delPod(h, node)));
      // Deleting a node writes the proof it is gone; `release=now` then releases its blocks at
      // once (not after GC's grace period), so nothing of this run is left for `ipam check`.
      await runAll(
        nodes.filter((name) => created.has(name)).map((name) => async () => {
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

function intOption(flag: string, text: string, min: number, max: number): number {
  if (!/^[0-9]+$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new UsageError(`invalid ${flag} ${JSON.stringify(text)}: must be an integer from ${min} to ${max}`);
  }
  return Number(text);
}

export function registerSimulate(program: Command): void {
  program
    .command('simulate')
    .description('drive a running `podipam serve` through its API: nodes join, pods are added and deleted')
    .option('--server <url>', 'the server to drive', 'http://127.0.0.1:7420')
    .option('--data-dir <dir>', 'the server\'s data directory, whose serve.token is sent for writes (default: as serve\'s)')
    .requiredOption('--nodes <n>', 'nodes to join (1-100000)')
    .requiredOption('--pods <m>', 'pods to add, spread round robin over the nodes (0-1000000)')
    .option('--churn <r>', 'then delete and re-add this fraction of the pods (0-10)', '0')
    .option('--concurrency <c>', 'API calls in flight (1-256)', '8')
    .option('--rate <n>', 'at most this many API calls per second (0 = unlimited)', '0')
    .option('--network <name>', 'network name in the pods\' handles', 'sim')
    .option('--node-prefix <p>', 'node names are <p>-1 … <p>-N (numbers zero-padded to the width of N)', 'sim')
    .option('--token <token>', 'admin or install bearer token (visible in /proc: prefer $PODIPAM_ADMIN_TOKEN or --data-dir)')
    .option('--seed <n>', 'seed for the churn choices')
    .option('--cleanup', 'delete the pods, nodes and blocks this run created at the end (a node that existed before is left alone)')
    .option('--progress', 'draw a progress bar even when stderr is not a terminal')
    .option('--json', 'print the result as JSON')
    .action(async (opts: Record<string, string | boolean | undefined>) => {
      let server: string;
      // A URL with ?token= (the dashboard URL serve prints) still works, with a warning (see below).
      let urlToken: string | undefined;
      try {
        const u = new URL(String(opts.server));
        urlToken = u.searchParams.get('token') ?? undefined;
        u.search = '';
        u.hash = '';
        server = u.toString().replace(/\/+$/, '');
      } catch {
        throw new UsageError(`invalid --server ${JSON.stringify(opts.server)}: expected a URL such as http://127.0.0.1:7420`);
      }
      const churn = Number(opts.churn);
      if (!Number.isFinite(churn) || churn < 0 || churn > 10 || String(opts.churn).trim() === '') {
        throw new UsageError(`invalid --churn ${JSON.stringify(opts.churn)}: must be a number from 0 to 10 (a fraction of --pods)`);
      }
      const prefix = String(opts.nodePrefix);
      if (!/^[a-z0-9]([-a-z0-9]{0,40}[a-z0-9])?$/.test(prefix)) throw new UsageError(`invalid --node-prefix ${JSON.stringify(prefix)}: use lower-case letters, digits and "-"`);
      const network = String(opts.network);
      if (!CNI_NAME.test(network)) throw new UsageError(`invalid --network ${JSON.stringify(network)}: not a CNI network name`);
      const nodes = intOption('--nodes', String(opts.nodes), 1, 100_000);
      // A token on the command line is readable by every local user: warn, and find it ourselves by default.
      const dataDir = (opts.dataDir as string | undefined) ?? defaultDataDir();
      if (opts.token !== undefined) process.stderr.write(commandLineTokenWarning('--token', dataDir));
      else if (urlToken !== undefined) process.stderr.write(commandLineTokenWarning('--server URL?token=', dataDir));
      const found = findAdminToken((opts.token as string | undefined) ?? urlToken, dataDir);
      const result = await simulate({
        server,
        token: found.token,
        tokenSource: found.source,
        nodes,
        pods: intOption('--pods', String(opts.pods), 0, 1_000_000),
        churn,
        concurrency: intOption('--concurrency', String(opts.concurrency), 1, 256),
        rate: intOption('--rate', String(opts.rate), 0, 1_000_000),
        network,
        nodePrefix: prefix,
        cleanup: opts.cleanup === true,
        progress: opts.progress === true,
        seed: opts.seed === undefined ? undefined : intOption('--seed', String(opts.seed), 0, 2 ** 32 - 1),
      });
      if (opts.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      else {
        const ops = result.nodes + result.added + result.deleted + result.failed;
        process.stdout.write(
          `simulate: ${result.nodes} nodes joined, ${result.added} pods added, ${result.deleted} deleted, ${result.failed} failed ` +
            `in ${result.seconds.toFixed(1)} s (${(ops / Math.max(result.seconds, 0.001)).toFixed(0)} calls/s); ${result.live} pods alive\n`,
        );
        for (const e of result.errors) process.stderr.write(`podipam: ${e}\n`);
      }
      if (result.failed > 0) throw new Error(`${result.failed} API call(s) failed (the first are listed above)`);
    });
}
