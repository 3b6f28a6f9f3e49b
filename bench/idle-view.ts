/**
 * Bytes an idle warm agent writes to the datastore per minute: one agent (WarmService in-process,
 * real SQLite datastore file and resource DB, its clock moved by hand) serving PODS pods with
 * 64-hex container ids, then idle — nothing changes — for one simulated minute, the
 * write-behind flushed every writeDelayMs (1 s, as its loop does). Every put of every txn the
 * agent's store sends is counted (key + value bytes), by key prefix: the holder view
 * (`agent-views/`), its heartbeat (`agent-beats/`), the write fence and the history stamp that
 * ride in the same txn. The question: what re-publishing an unchanged view costs, with the
 * view interval as shipped (VIEW_INTERVAL_MS, refresh VIEW_REFRESH_FACTOR × that) or PODIPAM_BENCH_IDLE_VIEW_MS.
 * Run: `npm run build && node dist/bench/idle-view.js` (knobs PODIPAM_BENCH_IDLE_PODS, 110; PODIPAM_BENCH_IDLE_MINUTES, 1).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startWarmRig, stopWarmRig, warmConf } from '../test/helpers/warm-rig.js';
import { openStore, type Op, type Store } from '../src/store/index.js';
import { VIEW_INTERVAL_MS, WRITE_DELAY_MS } from '../src/warm/warm-options.js';

const PODS = Number(process.env.PODIPAM_BENCH_IDLE_PODS ?? 110);
const MINUTES = Number(process.env.PODIPAM_BENCH_IDLE_MINUTES ?? 1);
const VIEW_MS = Number(process.env.PODIPAM_BENCH_IDLE_VIEW_MS ?? VIEW_INTERVAL_MS);

interface Tally {
  txns: number;
  bytes: Map<string, { puts: number; bytes: number }>;
}

/** The real store, each txn's puts tallied by key prefix (up to the first '/'). */
function counting(inner: Store, t: Tally): Store {
  return new Proxy(inner, {
    get(target, p, recv) {
      if (p === 'txn')
        return async (c: Parameters<Store['txn']>[0], ops: readonly Op[]) => {
          t.txns++;
          for (const o of ops) {
            if (o.type !== 'put') continue;
            const prefix = o.key.includes('/') ? o.key.slice(0, o.key.indexOf('/') + 1) : o.key;
            const x = t.bytes.get(prefix) ?? { puts: 0, bytes: 0 };
            x.puts++;
            x.bytes += Buffer.byteLength(o.key) + Buffer.byteLength(o.value);
            t.bytes.set(prefix, x);
          }
          return target.txn(c, ops);
        };
      const v: unknown = Reflect.get(target, p, recv);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

const hex = (i: number): string => (i.toString(16).padStart(8, '0') + 'c0ffee').repeat(5).slice(0, 64);

/** The figures, one line each (`npm run bench` prints them in its summary). */
export async function run(): Promise<string[]> {
  let out: string[];
  const root = mkdtempSync(join(tmpdir(), 'podipam-bench-idle-view-'));
  const tally: Tally = { txns: 0, bytes: new Map() };
  try {
    const r = await startWarmRig(
      {
        root,
        n: 1,
        pools: [{ name: 'v4', cidr: '10.90.0.0/16' }],
        options: {
          node: 'bench-node-0001',
          minIdle: 8,
          maxIdle: 16,
          capacity: PODS + 64,
          cooldownMs: 1000,
          stickyForMs: 0,
          tickMs: 3_600_000,
          writeDelayMs: 3_600_000,
          viewIntervalMs: VIEW_MS,
        },
      },
      {},
      undefined,
      { openStore: async (url) => counting(await openStore(url), tally) },
    );
    try {
      for (let i = 0; i < PODS; i++) {
        await r.warm.add({
          containerId: hex(i),
          ifname: 'eth0',
          cniArgs: new Map([
            ['K8S_POD_NAMESPACE', 'team-payments-prod'],
            ['K8S_POD_NAME', `checkout-api-7d9f8b6c5d-${hex(i).slice(0, 5)}`],
          ]),
          conf: warmConf,
        });
      }
      // Settle: everything written, cooldowns over, the view published and unchanged since.
      for (let i = 0; i < 20; i++) {
        r.clock.t += WRITE_DELAY_MS;
        await r.warm.maintain();
        await r.warm.flushWrites();
      }
      const view = await r.admin.store.get('agent-views/bench-node-0001');
      tally.txns = 0;
      tally.bytes.clear();
      const steps = (MINUTES * 60_000) / WRITE_DELAY_MS;
      for (let i = 0; i < steps; i++) {
        r.clock.t += WRITE_DELAY_MS;
        await r.warm.flushWrites();
      }
      const total = [...tally.bytes.values()].reduce((n, x) => n + x.bytes, 0);
      const lines = [
        `pods ${PODS}, view ${view?.value.length ?? 0} bytes, viewIntervalMs ${VIEW_MS} (refresh ${6 * VIEW_MS} ms), ${MINUTES} simulated minute(s), flush every ${WRITE_DELAY_MS} ms`,
        `txns ${tally.txns}; bytes put per minute ${Math.round(total / MINUTES)}; the peer, the same view re-published whole every refresh: ${Math.round(((view?.value.length ?? 0) * 60_000) / (6 * VIEW_MS))} bytes/min of view alone`,
        ...[...tally.bytes].sort().map(([p, x]) => `  ${p.padEnd(16)} puts ${x.puts / MINUTES}/min, ${Math.round(x.bytes / MINUTES)} bytes/min`),
      ];
      out = lines;
    } finally {
      await stopWarmRig(r);
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) for (const l of await run()) console.log(l);
