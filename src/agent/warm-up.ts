/**
 * Runs the agent's call handler once through an ADD and a DEL before the socket listens, so that
 * the first pods after a start do not pay for loading and compiling the plugin's code. Measured
 * under containerd (BENCHMARKS.md, "Pod starts under containerd"): without it the first burst of
 * 16 ADDs after a start took 200-800 ms each inside the agent (every module loaded, every
 * function compiled, while all 16 wait), against about 1 ms once warm — and `agent status`'s
 * p99 was that first burst.
 *
 * The calls go through `call`, a handler like the agent's but with none of its long-lived
 * services (HostedServices.warmUp: no datastore of the agent's opened, no scan cache, no counter
 * touched — the host records only the runtime's calls): the local back end on a private
 * directory made for the purpose (mkdtemp, 0700, removed after), and the cluster back end on a
 * process-private memory store holding one pool of TEST-NET-1 addresses (no hint file). A
 * warm-up that fails is ignored: it only costs the first pods their cold start, as before.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CallHandler } from '../wire/call-answer.js';

/** The warm-up's cluster datastore: process-wide, in memory, never seen by the runtime's calls. */
const WARM_UP_DATASTORE = 'memory:podipam-agent-warm-up';

/**
 * ADD+DEL rounds: at least MIN_ROUNDS (the hot functions leave the interpreter's first tier),
 * then more up to ROUNDS while the warm-up has taken less than BUDGET_MS. Measured in process
 * (one ADD on a warm scan cache): ~1.2 ms of CPU for each of the first 16 ADDs, ~0.75 ms for
 * ADDs 16-48, ~0.4 ms after 48, ~0.27 ms after 200 — and under a real runtime an ADD that needs
 * more CPU than one scheduler slice waits for the runtime's processes to run theirs (tens of ms
 * on a busy node), so without the warm-up a 16-pod burst right after a start pays for the cold code.
 */
const MIN_ROUNDS = 8;
const ROUNDS = 64;
const BUDGET_MS = 600;

export async function warmUp(call: CallHandler, node: string): Promise<void> {
  // Crash points (src/util/crash-point.ts) count steps from the process's start: the warm-up's
  // steps must not fire or shift them — a crash test's agent starts cold, as before.
  if (process.env.PODIPAM_CRASH_AT) return;
  let dir: string | undefined;
  try {
    dir = mkdtempSync(join(tmpdir(), 'podipam-agent-warm-up-'));
    const conf = (ipam: Record<string, unknown>): string =>
      JSON.stringify({ cniVersion: '1.0.0', name: 'podipam-agent-warm-up', ipam: { type: 'podipam', ...ipam } });
    const local = conf({ dataDir: dir, ranges: [[{ subnet: '192.0.2.0/28' }]] }); // TEST-NET-1: routed nowhere
    const cluster = conf({ datastore: WARM_UP_DATASTORE, nodeName: node, cacheDir: '' });
    const [{ openStore }, { ClusterIpam }] = await Promise.all([import('../store/open-store.js'), import('../cluster/service/index.js')]);
    const store = await openStore(WARM_UP_DATASTORE);
    try {
      await new ClusterIpam(store).createPool({ name: 'warm-up', cidr: '192.0.2.64/26', blockSize: 28 });
    } finally {
      await store.close();
    }
    const t0 = performance.now();
    for (let i = 0; i < ROUNDS && (i < MIN_ROUNDS || performance.now() - t0 < BUDGET_MS); i++) {
      const env = { CNI_CONTAINERID: `podipam-agent-warm-up-${i}`, CNI_IFNAME: 'eth0', CNI_NETNS: '/dev/null', CNI_PATH: '/nonexistent', NODENAME: node };
      for (const stdin of [local, cluster]) {
        await call({ ...env, CNI_COMMAND: 'ADD' }, () => stdin);
        await call({ ...env, CNI_COMMAND: 'DEL' }, () => stdin);
      }
    }
  } catch {
    // only the first pods' latency is at stake
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}
