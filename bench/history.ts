/**
 * The history store at scale (src/history/sqlite-history-db.ts): a history file filled with
 * PODIPAM_BENCH_HISTORY_EVENTS (1,000,000) events — holds of PODIPAM_BENCH_HISTORY_PODS (150,000)
 * addresses, each reused by several pods in turn (src/history/sqlite-history-db-workload.ts) —
 * applied in time order, PODIPAM_BENCH_HISTORY_BATCH (20,000) events per transaction, as serve's
 * follower would after a long outage; then PODIPAM_BENCH_HISTORY_QUERIES (10,000) point queries of
 * each kind through a read-only connection (as `podipam ipam history` opens serve's live file):
 * holderAt and holdsOfAddress at random addresses (5% never used) and instants, holdsOfPod of
 * random pods. Every answer is checked against the generated holds. Prints the fill rate, the
 * file's size per event, and p50/p99/max per query kind. Run alone: `node dist/bench/index.js history`.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { openHistoryDb } from '../src/history/sqlite-history-db.js';
import { fillHistory, generateWorkload, queryHistory } from '../src/history/sqlite-history-db-workload.js';
import { makeTempDir } from '../test/helpers/tmp.js';

const EVENTS = Number(process.env.PODIPAM_BENCH_HISTORY_EVENTS ?? 1_000_000);
const PODS = Number(process.env.PODIPAM_BENCH_HISTORY_PODS ?? 150_000);
const BATCH = Number(process.env.PODIPAM_BENCH_HISTORY_BATCH ?? 20_000);
const QUERIES = Number(process.env.PODIPAM_BENCH_HISTORY_QUERIES ?? 10_000);
const TARGET_P99_MS = 50;

const f2 = (n: number): string => `${n.toFixed(2)} ms`;

export async function run(): Promise<string[]> {
  const dir = makeTempDir('bench-history');
  try {
    const path = join(dir.path, 'history.db');
    let t0 = performance.now();
    const w = generateWorkload({ events: EVENTS, pods: PODS });
    console.log(
      `generated ${w.events} events (${w.holds.length} holds of ${PODS} addresses, ${w.podNames.length} pod names) in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
    const db = openHistoryDb(path);
    const fill = fillHistory(db, w, BATCH);
    const stats = db.stats();
    t0 = performance.now();
    db.close(); // checkpoints the WAL into the file
    const closeMs = performance.now() - t0;
    const bytes = statSync(path).size;
    const ro = openHistoryDb(path, { readonly: true });
    let r;
    try {
      r = queryHistory(ro, w, QUERIES);
    } finally {
      ro.close();
    }
    const rate = fill.events / (fill.ms / 1000);
    const lines = [
      `fill: ${fill.events} events in ${(fill.ms / 1000).toFixed(1)} s = ${Math.round(rate)} events/s (${fill.transactions} transactions of at most ${BATCH} events; close/checkpoint ${closeMs.toFixed(0)} ms)`,
      `file: ${(bytes / 1e6).toFixed(1)} MB = ${(bytes / fill.events).toFixed(0)} bytes per event (${stats.holds} holds, ${stats.openHolds} open)`,
      `holderAt        p50 ${f2(r.holderAt.p50)}  p99 ${f2(r.holderAt.p99)}  max ${f2(r.holderAt.max)}  (${QUERIES} queries)`,
      `holdsOfAddress  p50 ${f2(r.holdsOfAddress.p50)}  p99 ${f2(r.holdsOfAddress.p99)}  max ${f2(r.holdsOfAddress.max)}`,
      `holdsOfPod      p50 ${f2(r.holdsOfPod.p50)}  p99 ${f2(r.holdsOfPod.p99)}  max ${f2(r.holdsOfPod.max)}`,
      `answers checked against the generated holds: ${r.wrong === 0 ? 'all right' : `${r.wrong} WRONG: ${r.examples.join('; ')}`}`,
    ];
    for (const l of lines) console.log(l);
    const worst = Math.max(r.holderAt.p99, r.holdsOfAddress.p99, r.holdsOfPod.p99);
    if (r.wrong > 0) throw new Error(`${r.wrong} wrong answers: ${r.examples.join('; ')}`);
    if (worst >= TARGET_P99_MS) lines.push(`p99 ${f2(worst)} is over the ${TARGET_P99_MS} ms target`);
    return lines;
  } finally {
    dir.remove();
  }
}
