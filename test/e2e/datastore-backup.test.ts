/**
 * `podipam datastore backup` and `restore` on SQLite and on real etcd, through the built
 * binaries: allocations made by the CNI plugin in cluster mode (two pools, blocks on two
 * nodes, handles, an ip-set), a backup, more changes, a new empty datastore, a restore — then
 * every key equals what the backup held, `ipam check` is clean, and new pods never get an
 * address the backup's pods hold. A backup restores across back ends too; a truncated or
 * garbled file is refused naming the file and the line, writing nothing; a non-empty target
 * is refused without --force. `--snapshot` writes etcd's own snapshot (its SHA-256 checked)
 * and SQLite's online backup (a database file with the same keys).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { openStore, StoreMissingError, type Store } from '../../src/store/index.js';
import { startEtcd, type EtcdCluster } from '../helpers/etcd.js';
import { clusterCall, PODIPAM_BIN, runCliSync, runPlugin, stdoutJson } from '../helpers/plugin.js';
import { makeTempDir, type TempDir } from '../helpers/tmp.js';

/** Every key and value of a datastore (read as the test's own client). */
async function contents(url: string): Promise<Map<string, string>> {
  let store: Store;
  try {
    store = await openStore(url, { create: false });
  } catch (e) {
    if (e instanceof StoreMissingError) return new Map(); // a SQLite file never created holds nothing
    throw e;
  }
  try {
    return new Map((await store.snapshot('')).entries.map((e) => [e.key, e.value]));
  } finally {
    await store.close();
  }
}

async function add(url: string, cache: string, id: string, node: string): Promise<string[]> {
  const r = await runPlugin(PODIPAM_BIN, clusterCall('bk-net', url, cache, 'ADD', id, node));
  assert.equal(r.code, 0, `ADD ${id}: ${r.stdout}${r.stderr}`);
  return (stdoutJson(r).ips as { address: string }[]).map((ip) => ip.address.split('/')[0]!);
}
async function del(url: string, cache: string, id: string, node: string): Promise<void> {
  const r = await runPlugin(PODIPAM_BIN, clusterCall('bk-net', url, cache, 'DEL', id, node));
  assert.equal(r.code, 0, `DEL ${id}: ${r.stdout}${r.stderr}`);
}
function cli(url: string, args: readonly string[]) {
  return runCliSync(url, args);
}

/** The scenario on one back end: `source` holds the allocations, `fresh()` gives a new empty datastore. */
async function backupAndRestore(tmp: TempDir, source: string, fresh: () => Promise<string>): Promise<string> {
  const cache = join(tmp.path, 'cache');
  for (const [name, cidr, size] of [
    ['bk-v4', '10.97.0.0/24', '28'],
    ['bk-v6', 'fd00:97::/120', '124'],
  ]) {
    const r = cli(source, ['pool', 'create', name!, '--cidr', cidr!, '--block-size', size!]);
    assert.equal(r.code, 0, r.stderr);
  }
  assert.equal(cli(source, ['ipset', 'create', 'fixed', '--pool', 'bk-v4', '--addresses', '10.97.0.200-10.97.0.203']).code, 0);
  const ipsOf = new Map<string, string[]>();
  for (let i = 0; i < 20; i++) ipsOf.set(`c-${i}`, await add(source, cache, `c-${i}`, i % 2 === 0 ? 'node-a' : 'node-b'));
  await del(source, cache, 'c-0', 'node-a'); // a released address: free in the backup too
  const freed = ipsOf.get('c-0')!.find((ip) => ip.startsWith('10.97.0.'))!;
  ipsOf.delete('c-0');
  // The addresses the pods hold at the backup: what their ADD answered (the store's keys are compared below).
  const held = new Set([...ipsOf.values()].flat());
  assert.equal(held.size, 19 * 2);

  const file = join(tmp.path, 'podipam.backup');
  const b = cli(source, ['datastore', 'backup', file, '-o', 'json']);
  assert.equal(b.code, 0, b.stderr);
  const atBackup = await contents(source);
  const report = JSON.parse(b.stdout) as { keys: number; rev: number; kind: string };
  assert.equal(report.kind, 'podipam-backup');
  assert.equal(report.keys, atBackup.size);
  assert.ok(atBackup.size > 20, `${atBackup.size} keys`);
  assert.ok(
    [...atBackup.keys()].some((k) => k.startsWith('blocks/')) && [...atBackup.keys()].some((k) => k.startsWith('handles/')),
    [...atBackup.keys()].join(' '),
  );

  // More changes after the backup: new pods (their addresses are lost with the old store) and a release.
  for (let i = 20; i < 26; i++) await add(source, cache, `c-${i}`, 'node-b');
  await del(source, cache, 'c-3', 'node-b');
  assert.notDeepEqual(await contents(source), atBackup);

  const target = await fresh();
  // Bad files first: refused naming the file and the line, nothing written.
  const text = readFileSync(file, 'utf8');
  const lines = text.split('\n');
  let cut = Math.floor(text.length / 2);
  if (text[cut - 1] === '\n') cut--;
  const bad: [string, string, RegExp][] = [
    [
      'truncated',
      text.slice(0, cut),
      new RegExp(`backup \\S+truncated\\.backup line ${text.slice(0, cut).split('\n').length}: the file does not end with a newline`),
    ],
    ['garbled', [...lines.slice(0, 5), `${lines[5]!.slice(0, 10)}#garbled#`, ...lines.slice(6)].join('\n'), /backup \S+garbled\.backup line 6: not JSON/],
    ['cut-at-line', `${lines.slice(0, 8).join('\n')}\n`, /backup \S+cut-at-line\.backup line 8: the header announces \d+ keys but the file ends after 7 lines/],
    [
      'edited',
      [...lines.slice(0, 2), lines[2]!.replace(/[0-9]/, (d) => (d === '1' ? '2' : '1')), ...lines.slice(3)].join('\n'),
      /backup \S+edited\.backup line \d+: the entries' SHA-256/,
    ],
  ];
  for (const [name, content, re] of bad) {
    assert.notEqual(content, text, name);
    const f = join(tmp.path, `${name}.backup`);
    writeFileSync(f, content);
    const r = cli(target, ['datastore', 'restore', f]);
    assert.equal(r.code, 1, `${name}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, re, name);
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
  }
  assert.equal((await contents(target)).size, 0, 'a bad file wrote nothing');

  const restored = cli(target, ['datastore', 'restore', file]);
  assert.equal(restored.code, 0, restored.stderr);
  assert.match(restored.stdout, new RegExp(`^${atBackup.size} keys restored into `));
  assert.deepEqual(await contents(target), atBackup, 'every key and value as the backup held them');

  const check = cli(target, ['ipam', 'check']);
  assert.equal(check.code, 0, check.stdout + check.stderr);
  const sets = JSON.parse(cli(target, ['ipset', 'list', '--json']).stdout) as { items: { name: string }[] };
  assert.deepEqual(
    sets.items.map((s) => s.name),
    ['fixed'],
  );

  // New pods, on both nodes and a third, never get an address the backup's pods hold (the hint
  // files in the cache still name blocks from after the backup: the store is what counts).
  let got = 0;
  for (let i = 0; i < 8; i++) {
    for (const ip of await add(target, cache, `new-${i}`, ['node-a', 'node-b', 'node-c'][i % 3]!)) {
      assert.ok(!held.has(ip), `new-${i} got ${ip}, which the backup's pods hold`);
      got++;
    }
  }
  assert.equal(got, 16);
  // The address released before the backup is free again after the restore; c-1 keeps its own.
  assert.ok(!held.has(freed));
  assert.deepEqual(await add(target, cache, 'c-1', 'node-b'), ipsOf.get('c-1'), 'a pod of the backup keeps its addresses');
  assert.equal(cli(target, ['ipam', 'check']).code, 0);

  // A non-empty datastore is refused without --force, replaced with it.
  const again = cli(target, ['datastore', 'restore', file]);
  assert.equal(again.code, 1, again.stdout);
  assert.match(again.stderr, /holds \d+ keys \(.*\): a restore goes into an empty datastore; give --force/);
  const forced = cli(target, ['datastore', 'restore', file, '--force', '-o', 'json']);
  assert.equal(forced.code, 0, forced.stderr);
  assert.ok((JSON.parse(forced.stdout) as { deleted: number }).deleted > atBackup.size);
  assert.deepEqual(await contents(target), atBackup);
  return file;
}

test('SQLite: backup, more changes, a new datastore, restore: the keys of the backup, check clean, no address given twice', { timeout: 240_000 }, async () => {
  const tmp = makeTempDir('datastore-backup-sqlite');
  try {
    const source = `sqlite:${join(tmp.path, 'a.db')}`;
    let n = 0;
    const file = await backupAndRestore(tmp, source, async () => `sqlite:${join(tmp.path, `restored-${n++}.db`)}`);

    // --snapshot: SQLite's online backup, a database file holding the same keys.
    const copy = join(tmp.path, 'copy.db');
    const before = await contents(source);
    const s = cli(source, ['datastore', 'backup', copy, '--snapshot']);
    assert.equal(s.code, 0, s.stderr);
    assert.match(s.stdout, /SQLite online backup of .* written to \S+copy\.db: \d+ bytes/);
    assert.deepEqual(await contents(`sqlite:${copy}`), before);
    const r = cli(`sqlite:${join(tmp.path, 'x.db')}`, ['datastore', 'restore', copy]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /this is a SQLite database file .*copying it in place/);
    // A backup of SQLite restores into etcd.
    const etcd = await startEtcd();
    try {
      assert.equal(cli(etcd.url, ['datastore', 'restore', file]).code, 0);
      assert.deepEqual(
        await contents(etcd.url),
        new Map(
          readFileSync(file, 'utf8')
            .trim()
            .split('\n')
            .slice(1, -1)
            .map((l) => JSON.parse(l) as { key: string; value: string })
            .map((e) => [e.key, e.value]),
        ),
      );
      assert.equal(cli(etcd.url, ['ipam', 'check']).code, 0);
    } finally {
      await etcd.stop();
    }
  } finally {
    tmp.remove();
  }
});

test(
  "etcd: backup, more changes, a new cluster, restore: the keys of the backup, check clean, no address given twice; --snapshot is etcd's own",
  { timeout: 240_000 },
  async () => {
    const tmp = makeTempDir('datastore-backup-etcd');
    const clusters: EtcdCluster[] = [];
    try {
      const a = await startEtcd({ members: 3 });
      clusters.push(a);
      const file = await backupAndRestore(tmp, a.url, async () => {
        const b = await startEtcd();
        clusters.push(b);
        return b.url;
      });
      // The etcd backup restores into SQLite as well.
      const sqlite = `sqlite:${join(tmp.path, 'from-etcd.db')}`;
      assert.equal(cli(sqlite, ['datastore', 'restore', file]).code, 0);
      assert.equal(cli(sqlite, ['ipam', 'check']).code, 0);

      // --snapshot: etcd's Maintenance Snapshot, the database followed by its SHA-256 (what etcdutl checks).
      const snap = join(tmp.path, 'etcd.snapshot');
      const s = cli(a.url, ['datastore', 'backup', snap, '--snapshot', '--json']);
      assert.equal(s.code, 0, s.stderr);
      const out = JSON.parse(s.stdout) as { kind: string; bytes: number };
      const bytes = readFileSync(snap);
      assert.equal(out.kind, 'etcd snapshot');
      assert.equal(out.bytes, bytes.length);
      assert.ok(bytes.length > 4096, `${bytes.length} bytes`);
      assert.deepEqual(
        createHash('sha256')
          .update(bytes.subarray(0, bytes.length - 32))
          .digest(),
        bytes.subarray(bytes.length - 32),
        'the trailing SHA-256 is of the database before it',
      );
      assert.equal(bytes.readUInt32LE(16), 0xed0cdaed, 'a bbolt database (its meta page magic)');
      const r = cli(`sqlite:${join(tmp.path, 'y.db')}`, ['datastore', 'restore', snap]);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /backup \S+etcd\.snapshot line 1: .*(not JSON|not a podipam backup)|does not end with a newline/);
    } finally {
      for (const c of clusters) await c.stop();
      tmp.remove();
    }
  },
);
