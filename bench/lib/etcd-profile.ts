/**
 * Profiles of the etcd members during a scale run, read with go-profile.ts: where its CPU goes
 * (Go's garbage collector, allocation, etcd 3.4's read-buffer copies, applying txns, the key
 * index) and what its allocation is made of. The members must run with --enable-pprof; `urls`
 * are their client URLs (which serve /metrics and /debug/pprof/).
 */
import { readGoProfile, shareUnder } from './go-profile.js';

/** The parts of a member's CPU the bench reports, each the samples with a frame containing the function. */
export const ETCD_CPU_PARTS: readonly (readonly [label: string, fn: string])[] = [
  ['GC marking', 'runtime.gcBgMarkWorker'],
  ['allocating', 'runtime.mallocgc'],
  // etcd 3.4 copies the backend's buffer of uncommitted writes for every read and every txn's
  // compares (ConcurrentReadTx); 3.5 reuses one copy while the buffer is unchanged.
  ['read-buffer copies', 'backend.(*bucketBuffer).Copy'],
  ['applying txns', 'etcdserver.(*applierV3backend).Txn'],
  ['key index', 'mvcc.(*treeIndex)'],
];

const pct = (part: number, total: number): string => `${total > 0 ? ((100 * part) / total).toFixed(1) : '-'} %`;

async function get(url: string, timeoutMs: number): Promise<Buffer> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return Buffer.from(await res.arrayBuffer());
}

/** Whether the member at `url` says it leads (etcd_server_is_leader 1); undefined when it does not answer. */
async function leads(url: string): Promise<boolean | undefined> {
  try {
    return /^etcd_server_is_leader 1$/m.test((await get(`${url}/metrics`, 5_000)).toString('utf8'));
  } catch {
    return undefined;
  }
}

const role = (l: boolean | undefined): string => (l === undefined ? 'role unknown' : l ? 'leader' : 'follower');

/** One line per member, in order: `line` of its name (index, URL, role) and URL, or what failed. */
function perMember(urls: readonly string[], what: string, line: (name: string, url: string) => Promise<string>): Promise<string[]> {
  return Promise.all(
    urls.map(async (u, i) => {
      const name = `m${i} (${u}, ${role(await leads(u))})`;
      try {
        return await line(name, u);
      } catch (e) {
        return `  etcd ${name} ${what}: failed (${(e as Error).message})`;
      }
    }),
  );
}

/**
 * CPU profiles of `seconds` of every member at once (the leader, and the member the clients
 * talk to, are not always the same), a line each: its CPU per second and the share of each
 * ETCD_CPU_PARTS.
 */
export function etcdCpuProfiles(urls: readonly string[], seconds: number, label: string): Promise<string[]> {
  return perMember(urls, `CPU profile ${label}`, async (name, u) => {
    const p = readGoProfile(await get(`${u}/debug/pprof/profile?seconds=${seconds}`, (seconds + 30) * 1000));
    const total = shareUnder(p, '', 'cpu').total;
    const parts = ETCD_CPU_PARTS.map(([l, fn]) => `${l} ${pct(shareUnder(p, fn, 'cpu').under, total)}`);
    return `  etcd ${name} CPU profile ${label}, ${seconds} s: ${(total / 1e9 / seconds).toFixed(2)} CPU s/s; ${parts.join(', ')}`;
  });
}

/** Each member's allocation since it started, a line each: bytes, and the share and size of etcd 3.4's read-buffer copies. */
export function etcdAllocProfiles(urls: readonly string[]): Promise<string[]> {
  return perMember(urls, 'allocation', async (name, u) => {
    const p = readGoProfile(await get(`${u}/debug/pprof/allocs`, 30_000));
    const copies = shareUnder(p, 'backend.(*bucketBuffer).Copy', 'alloc_space', 'alloc_objects');
    const gib = (b: number): string => (b / 2 ** 30).toFixed(1);
    return `  etcd ${name} allocation since its start: ${gib(copies.total)} GiB, of which read-buffer copies ${pct(copies.under, copies.total)} (${copies.count} copies of ${(copies.under / Math.max(1, copies.count) / 1024).toFixed(0)} KiB on average)`;
  });
}
