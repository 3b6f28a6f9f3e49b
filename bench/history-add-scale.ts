/**
 * The warm-scale run (bench/warm-scale.ts: NODES nodes' warm-pool agents simulated in PROCS processes
 * on a 3-member etcd, PODS dual-stack pods each; 5,000 x 30 = 150,000 by default) twice in one
 * run: `podipam serve` on the same etcd with `--no-history` and with the history kept — the ADD
 * rate with and without, and how far behind the follower was when
 * the last pod had started (the time it took after that to apply every revision, and the history's
 * holds and file size then). Each condition gets a fresh etcd; the order alternates over ROUNDS.
 *
 * Serve runs in both conditions, as it does in a cluster (its dashboard summary follows etcd
 * too); PODIPAM_BENCH_HISTORY_SCALE_BASELINE=none makes "without" run no serve at all.
 *
 * Knobs: PODIPAM_BENCH_WARM_NODES / _PODS / _IN_FLIGHT / _PROCS (as warm-scale: 2 processes since
 * 2026-12-06, so its rates are not comparable with earlier runs'), PODIPAM_BENCH_HISTORY_SCALE_ROUNDS (2:
 * off then on; 4: off, on, on, off), PODIPAM_BENCH_HISTORY_SCALE_SERVE_NICE (unset: serve at the bench's
 * priority; e.g. 19: serve takes only CPU the simulated agents and etcd leave, the closest this one
 * machine gets to serve running on a machine of its own, as in a cluster). Run alone: `node dist/bench/index.js history-add-scale`.
 */
import { defaultHistoryPath } from '../src/cli/history-path.js';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { openStore } from '../src/store/index.js';
import { startEtcd } from '../test/helpers/etcd.js';
import { makeTempDir } from '../test/helpers/tmp.js';
import { type ServeProcess, startServe } from '../test/e2e/serve-harness.js';
import { runWarmScaleChild } from './warm-scale.js';

const ROUNDS = Number(process.env.PODIPAM_BENCH_HISTORY_SCALE_ROUNDS ?? 2);
const SERVE_NICE = process.env.PODIPAM_BENCH_HISTORY_SCALE_SERVE_NICE;
const BASELINE = process.env.PODIPAM_BENCH_HISTORY_SCALE_BASELINE === 'none' ? 'none' : 'serve';

interface Outcome {
  readonly pods: number;
  readonly seconds: number;
  readonly rate: number;
  /** With history: ms from the last pod's start until the follower had applied every revision. */
  readonly catchUpMs?: number;
  readonly holds?: number;
  readonly bytes?: number;
}

async function once(history: boolean): Promise<Outcome> {
  const etcd = await startEtcd({ members: 3 });
  const dir = makeTempDir('bench-history-scale');
  let serve: ServeProcess | undefined;
  try {
    if (history || BASELINE === 'serve') {
      serve = await startServe({
        env: { PODIPAM_DATASTORE: etcd.url },
        dataDir: dir.path,
        args: ['--no-default-pools', '--no-controller', ...(history ? [] : ['--no-history'])],
      });
    }
    if (serve && SERVE_NICE !== undefined) {
      const r = spawnSync('renice', ['-n', SERVE_NICE, '-p', String(serve.child.pid)], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`renice ${SERVE_NICE} serve ${serve.child.pid}: ${r.stderr}`);
    }
    const x = await runWarmScaleChild(etcd.url);
    const out: Outcome = { pods: x.pods, seconds: x.seconds, rate: x.pods / x.seconds };
    if (!serve || !history) return out;
    // How far behind the follower is: until its position reaches etcd's revision.
    const t0 = performance.now();
    const store = await openStore(etcd.url);
    const { openHistoryDb } = await import('../src/history/sqlite-history-db.js');
    try {
      const target = await store.revision();
      for (;;) {
        const db = openHistoryDb(defaultHistoryPath(dir.path, etcd.url), { readonly: true }); // where serve keeps this datastore's history
        try {
          if ((db.position()?.revision ?? 0) >= target) {
            const s = db.stats();
            return { ...out, catchUpMs: performance.now() - t0, holds: s.holds, bytes: s.bytes };
          }
        } finally {
          db.close();
        }
        if (performance.now() - t0 > 1_800_000) throw new Error(`the follower did not reach revision ${target} within 30 min`);
        await new Promise((res) => setTimeout(res, 500));
      }
    } finally {
      await store.close();
    }
  } finally {
    await serve?.stop();
    await etcd.stop();
    dir.remove();
  }
}

export async function run(): Promise<string[]> {
  console.log(
    `history-add-scale: the warm-scale run without and with serve's history follower on the same 3-member etcd (without: ${BASELINE === 'serve' ? 'serve --no-history' : 'no serve'}), ${ROUNDS} rounds`,
  );
  const runs: { history: boolean; o: Outcome }[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const history = i % 4 === 1 || i % 4 === 2;
    const o = await once(history);
    runs.push({ history, o });
    console.log(
      `  ${history ? 'with history   ' : 'without history'}: ${o.pods} pods in ${o.seconds.toFixed(1)} s, ${o.rate.toFixed(0)} pods/s` +
        (o.catchUpMs === undefined
          ? ''
          : `; follower caught up ${(o.catchUpMs / 1000).toFixed(1)} s after the last pod, ${o.holds} holds, ${((o.bytes ?? 0) / 2 ** 20).toFixed(1)} MiB (${((o.bytes ?? 0) / Math.max(1, o.holds ?? 0)).toFixed(0)} bytes per hold)`),
    );
  }
  const rate = (h: boolean): number => {
    const xs = runs.filter((r) => r.history === h).map((r) => r.o);
    return xs.reduce((a, o) => a + o.pods, 0) / xs.reduce((a, o) => a + o.seconds, 0);
  };
  const lines = [
    `warm-scale ADD rate: ${rate(false).toFixed(0)} pods/s without history, ${rate(true).toFixed(0)} with (${(rate(true) / rate(false)).toFixed(3)}x)`,
    `  load average at the end: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
  ];
  for (const l of lines) console.log(l);
  return lines;
}
