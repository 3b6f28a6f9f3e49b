/**
 * History after the datastore is restored from a backup, through the built binaries, on a SQLite
 * file and on a real etcd: `podipam serve` follows while the plugin ADDs and DELs pods, `datastore
 * backup` is taken, more pods come and go, serve is stopped, the datastore is replaced by a new
 * one (SQLite: the file removed; etcd: the member wiped) and `datastore restore` writes the backup
 * into it, serve starts again. The history records a gap; `ipam history ADDRESS --at T` for T
 * inside it exits 4 ("unknown"), never 3 ("none"), the API answers `known: false`; after it the
 * restored holder is known; the default history file is found by the CLI as serve chose it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { startEtcd, type EtcdCluster } from '../helpers/etcd.js';
import { clusterCall, PODIPAM_BIN, runCliSync, runPlugin, stdoutJson } from '../helpers/plugin.js';
import { makeTempDir, type TempDir } from '../helpers/tmp.js';
import { api, runCli, startServe } from './serve-harness.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const iso = (t: number): string => new Date(t).toISOString();

interface Backend {
  readonly name: string;
  open(tmp: TempDir): Promise<{ url: string; replace(): Promise<void>; stop(): Promise<void> }>;
}

const backends: Backend[] = [
  {
    name: 'SQLite',
    async open(tmp) {
      const file = join(tmp.path, 'ds.db');
      return {
        url: `sqlite:${file}`,
        async replace() {
          for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
        },
        stop: () => Promise.resolve(),
      };
    },
  },
  {
    name: 'etcd',
    async open() {
      const cluster: EtcdCluster = await startEtcd({ members: 1 });
      return {
        url: cluster.url,
        async replace() {
          const m = cluster.members[0]!;
          await m.kill();
          rmSync(m.dataDir, { recursive: true, force: true });
          await m.restart();
        },
        stop: () => cluster.stop(),
      };
    },
  },
];

for (const b of backends) {
  test(`history on ${b.name} restored from a backup: a gap, --at inside it exits 4 (unknown), the API says known: false`, { timeout: 180_000 }, async () => {
    const tmp = makeTempDir('history-restore');
    const ds = await b.open(tmp);
    const dataDir = join(tmp.path, 'data');
    const env = { PODIPAM_DATASTORE: ds.url, PODIPAM_DATA_DIR: dataDir };
    const cache = join(tmp.path, 'cache');
    const cli = (args: readonly string[]) => runCliSync(ds.url, args);
    const history = (...args: string[]) => runCli(['ipam', 'history', ...args], env);
    const call = async (command: string, id: string): Promise<string | undefined> => {
      const r = await runPlugin(PODIPAM_BIN, clusterCall('hr-net', ds.url, cache, command, id, 'node-a'));
      assert.equal(r.code, 0, `${command} ${id}: ${r.stdout}${r.stderr}`);
      return command === 'ADD' ? (stdoutJson(r).ips as { address: string }[])[0]!.address.split('/')[0] : undefined;
    };
    const serveArgs = { dataDir, env, args: ['--no-controller', '--no-default-pools'] };
    let serve = await startServe(serveArgs);
    try {
      assert.equal(cli(['pool', 'create', 'hr-v4', '--cidr', '10.98.0.0/24', '--block-size', '28']).code, 0);
      const a = (await call('ADD', 'c-1'))!;
      const file = join(tmp.path, 'ds.backup');
      const backup = cli(['datastore', 'backup', file]);
      assert.equal(backup.code, 0, backup.stderr);
      await call('DEL', 'c-1');
      const tFree = Date.now();
      // What the history knows ends with its last event (c-2's ADD below), not when serve stops:
      // a pause keeps tFree + 25 inside the known stretch however fast the next ADD is.
      await sleep(50);
      await call('ADD', 'c-2'); // another address: a stays free until the restore
      await sleep(300);
      await serve.stop();
      const before = await history(a, '--at', iso(tFree + 25));
      assert.equal(before.code, 3, `before the restore: nobody holds ${a}: ${before.stdout}${before.stderr}`);

      await sleep(300);
      const tAway = Date.now(); // serve is away; the datastore is replaced and restored
      await sleep(300);
      await ds.replace();
      const restore = cli(['datastore', 'restore', file]);
      assert.equal(restore.code, 0, restore.stderr);
      await sleep(300);
      serve = await startServe(serveArgs);

      const inside = await history(a, '--at', iso(tAway));
      assert.equal(inside.code, 4, `inside the gap: unknown (exit 4), never "none": ${inside.stdout}${inside.stderr}`);
      assert.match(inside.stdout, /: unknown \(between /);
      const gaps = await history(a, '-o', 'json');
      assert.equal(gaps.code, 0, gaps.stderr);
      const body = JSON.parse(gaps.stdout) as { items: { containerId?: string; stillHeld: boolean }[]; gaps: { from: string; until: string; cause: string }[] };
      assert.equal(body.gaps.length, 2, JSON.stringify(body.gaps)); // before history began; the restore
      assert.match(body.gaps[1]!.cause, /the datastore was (restored or replaced|replaced or restored)/);
      assert.ok(Date.parse(body.gaps[1]!.from) < tAway && tAway < Date.parse(body.gaps[1]!.until), JSON.stringify(body.gaps[1]));
      const now = await history(a, '--at', 'now');
      assert.equal(now.code, 0, `after the restore the backup's pod holds ${a} again: ${now.stdout}${now.stderr}`);
      assert.match(now.stdout, /c-1/);
      const still = await history(a, '--at', iso(tFree + 25));
      assert.equal(still.code, 3, `before the gap: still known, nobody: ${still.stdout}${still.stderr}`);

      const q = await api(serve.url, 'GET', `/api/v1/history?address=${a}&at=${encodeURIComponent(iso(tAway))}`);
      assert.equal(q.status, 200, JSON.stringify(q.body));
      assert.equal(q.body.known, false, JSON.stringify(q.body));
    } finally {
      await serve.stop();
      await ds.stop();
      tmp.remove();
    }
  });
}

test(
  "history on SQLite while `datastore restore --force` writes a backup back into the same datastore: the restored holds are not timed by the backup's old stamps",
  { timeout: 120_000 },
  async () => {
    const tmp = makeTempDir('history-restore-force');
    const url = `sqlite:${join(tmp.path, 'ds.db')}`;
    const dataDir = join(tmp.path, 'data');
    const env = { PODIPAM_DATASTORE: url, PODIPAM_DATA_DIR: dataDir };
    const cache = join(tmp.path, 'cache');
    const cli = (args: readonly string[]) => runCliSync(url, args);
    const history = (...args: string[]) => runCli(['ipam', 'history', ...args], env);
    const call = async (command: string, id: string): Promise<string | undefined> => {
      const r = await runPlugin(PODIPAM_BIN, clusterCall('hr-net', url, cache, command, id, 'node-a'));
      assert.equal(r.code, 0, `${command} ${id}: ${r.stdout}${r.stderr}`);
      return command === 'ADD' ? (stdoutJson(r).ips as { address: string }[])[0]!.address.split('/')[0] : undefined;
    };
    const serve = await startServe({ dataDir, env, args: ['--no-controller', '--no-default-pools'] });
    try {
      assert.equal(cli(['pool', 'create', 'hr-v4', '--cidr', '10.98.0.0/24', '--block-size', '28']).code, 0);
      const a = (await call('ADD', 'c-1'))!;
      const file = join(tmp.path, 'ds.backup');
      assert.equal(cli(['datastore', 'backup', file]).code, 0);
      await call('DEL', 'c-1');
      await sleep(300);
      const tFree = Date.now(); // c-1 is gone, a is free
      await sleep(300);
      const restore = cli(['datastore', 'restore', file, '--force']);
      assert.equal(restore.code, 0, restore.stderr);
      const now = await waitForExit(() => history(a, '--at', 'now'), 0);
      // The follower stamps a restored hold when its watch sees it: by the time history shows it.
      const tSeen = Date.now();
      assert.match(now.stdout, /c-1/, "the backup's pod holds a again");
      const free = await history(a, '--at', iso(tFree));
      assert.equal(free.code, 3, `before the restore a was free (c-1 was deleted), not held since the backup's stamp: ${free.stdout}`);
      const j = JSON.parse((await history(a, '-o', 'json')).stdout) as { items: { from: { at: string } }[] };
      assert.ok(
        Date.parse(j.items.at(-1)!.from.at) > tFree && Date.parse(j.items.at(-1)!.from.at) <= tSeen,
        `the restored hold begins at the restore: ${JSON.stringify(j.items.at(-1))}`,
      );
    } finally {
      await serve.stop();
      tmp.remove();
    }
  },
);

/** Runs `run` every 100 ms until it exits with `code` (at most 20 s); returns that run. */
async function waitForExit(run: () => ReturnType<typeof runCli>, code: number): Promise<Awaited<ReturnType<typeof runCli>>> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const r = await run();
    if (r.code === code || Date.now() > deadline) return r;
    await sleep(100);
  }
}
