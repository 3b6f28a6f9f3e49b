/**
 * What etcd's watches cost etcd: its CPU per put (utime + stime from /proc, ms) while N
 * watchers, each a store of its own as an agent or a server is, follow the written prefix, for
 * the watch through etcd's JSON gateway (`POST /v3/watch`, the code in PODIPAM_BENCH_BASELINE_DIST,
 * a dist/ of main before the change) and as a gRPC stream (`/etcdserverpb.Watch/Watch`, this
 * dist/). One member (`--unsafe-no-fsync`); the puts (one txn of one 300-byte put each, one at
 * a time) come from this dist/'s store in both cases, so only the watches differ. A run counts
 * from the first put until every watcher has seen the last one. Variants alternate. A one-off
 * A/B tool (bench/tools/: not one of `npm run bench`'s modules, which need no baseline).
 *
 *   PODIPAM_BENCH_BASELINE_DIST=/path/to/main/dist node dist/bench/tools/watch-cpu.js [puts] [watchers,...] [rounds]
 */
import { setMaxListeners } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { startEtcd } from '../../test/helpers/etcd.js';
import { cpuMs } from '../lib/proc-cpu.js';

type Open = typeof openStore;

const puts = Number(process.argv[2] ?? 2000);
const counts = (process.argv[3] ?? '10,40').split(',').map(Number);
const rounds = Number(process.argv[4] ?? 2);
const baselineDist = process.env['PODIPAM_BENCH_BASELINE_DIST'];
if (baselineDist === undefined) throw new Error('set PODIPAM_BENCH_BASELINE_DIST to a dist/ built from main before the change');
const baselineOpen = ((await import(pathToFileURL(`${baselineDist}/src/store/open-store.js`).href)) as { openStore: Open }).openStore;

const etcd = await startEtcd({ members: 1, extraArgs: ['--unsafe-no-fsync'] });
const member = etcd.members[0]!;
const pid = Number(
  readdirSync('/proc').find(
    (p) =>
      /^\d+$/.test(p) &&
      (() => {
        try {
          const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8');
          return cmd.startsWith('etcd') || cmd.includes('/etcd\0') ? cmd.includes(member.dataDir) : false;
        } catch {
          return false;
        }
      })(),
  ),
);
if (!(pid > 0)) throw new Error('etcd pid not found');

const writer = await openStore(etcd.url);
const value = 'x'.repeat(300);

async function run(label: string, open: Open, watchers: number): Promise<{ label: string; watchers: number; etcdMs: number; wallMs: number }> {
  const stores: Store[] = [];
  for (let i = 0; i < watchers; i++) stores.push(await open(etcd.url));
  const from = (await writer.txn([], [{ type: 'put', key: 'w/warm', value }])).rev;
  const abort = new AbortController();
  setMaxListeners(0, abort.signal); // one signal stops every watcher of the run
  let last = Infinity;
  const done: Promise<void>[] = [];
  let ready = 0;
  const allReady = new Promise<void>((resolve) => {
    for (const s of stores)
      done.push(
        (async () => {
          let warm = false;
          for await (const batch of s.watch('w/', from, { signal: abort.signal })) {
            const rev = batch[batch.length - 1]!.modRevision;
            if (!warm) {
              warm = true;
              if (++ready === watchers) resolve();
            }
            if (rev >= last) return;
          }
        })(),
      );
    if (watchers === 0) resolve();
  });
  await allReady;
  const c0 = cpuMs(pid);
  const t0 = performance.now();
  let rev = 0;
  for (let i = 0; i < puts; i++) rev = (await writer.txn([], [{ type: 'put', key: `w/k${i % 64}`, value }])).rev;
  // One more put that every watcher sees after `last` is set (one that had already seen the
  // last put waits on its next batch).
  last = rev;
  await writer.txn([], [{ type: 'put', key: 'w/end', value }]);
  await Promise.all(done);
  const c1 = cpuMs(pid);
  const wall = performance.now() - t0;
  abort.abort();
  for (const s of stores) await s.close();
  return { label, watchers, etcdMs: (c1 - c0) / puts, wallMs: wall / puts };
}

const lines: string[] = [];
const results: { label: string; watchers: number; etcdMs: number }[] = [];
const load = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
lines.push(`etcd pid ${pid}; ${puts} puts per run; load at start ${load()}`);
lines.push('| watchers | watch | etcd CPU ms/put | wall ms/put | load |', '|---|---|---|---|---|');
await run('warm-up', openStore, 2);
for (let r = 0; r < rounds; r++)
  for (const n of counts)
    for (const [label, open] of [
      ['gateway (main)', baselineOpen],
      ['gRPC (branch)', openStore],
    ] as const) {
      const x = await run(label, open, n);
      results.push(x);
      lines.push(`| ${n} | ${x.label} | ${x.etcdMs.toFixed(3)} | ${x.wallMs.toFixed(3)} | ${load()} |`);
      console.log(lines[lines.length - 1]);
    }
const base = await run('no watcher', openStore, 0);
lines.push(`| 0 | no watcher | ${base.etcdMs.toFixed(3)} | ${base.wallMs.toFixed(3)} | ${load()} |`);
console.log(lines.join('\n'));
for (const n of counts) {
  const median = (label: string): number => {
    const xs = results
      .filter((x) => x.watchers === n && x.label === label)
      .map((x) => x.etcdMs)
      .sort((a, b) => a - b);
    return xs[Math.floor(xs.length / 2)] ?? NaN;
  };
  console.log(`${n} watchers: etcd CPU per put, gRPC / gateway = ${(median('gRPC (branch)') / median('gateway (main)')).toFixed(2)}×`);
}
await writer.close();
await etcd.stop();
