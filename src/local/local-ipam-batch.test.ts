/**
 * The agent's batched ADDs (LocalIpam with asyncLockWait): concurrent ADDs on one directory are
 * served under one lock acquisition and one scan, each with its own result or error, the same
 * results as one after another, every reservation on disk before any answer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Addr, formatAddr, parseAddr, parsePrefix } from '../ip/index.js';
import { LocalIpam } from './local-ipam.js';
import type { LocalConfig } from './local-config.js';
import { ScanCache } from './scan-cache.js';
import { DiskStore, type StoreFile } from './disk-store.js';
import { FileLock } from './file-lock.js';
import { AllocationError, LockTimeoutError } from './errors.js';
import type { AllocRangeSet } from './range-allocator.js';

function rangeSet(subnet: string): AllocRangeSet {
  const p = parsePrefix(subnet);
  const last = p.family === 4 ? p.base + (1n << BigInt(32 - p.len)) - 2n : p.base + (1n << BigInt(128 - p.len)) - 1n;
  return [
    {
      subnet: p,
      rangeStart: { family: p.family, value: p.base + 2n },
      rangeEnd: { family: p.family, value: last },
      gateway: { family: p.family, value: p.base + 1n },
    },
  ];
}

function config(dataDir: string, subnets: readonly string[], extra: Partial<LocalConfig> = {}): LocalConfig {
  return {
    name: 'net',
    cniVersion: '1.0.0',
    dataDir,
    dir: join(dataDir, 'net'),
    rangeSets: subnets.map(rangeSet),
    routes: [],
    requested: [],
    lockTimeoutMs: 10_000,
    ...extra,
  };
}

async function withDir(fn: (dataDir: string) => Promise<void>): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'podipam-batch-'));
  try {
    await fn(root);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** The address files of `dir` → content. */
function reservations(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const n of readdirSync(dir).sort()) if (n !== 'lock' && !n.startsWith('last_reserved_ip.')) out.set(n, readFileSync(join(dir, n), 'utf8'));
  return out;
}

const who = (i: number) => ({ containerId: `c${i}`, ifname: 'eth0' });
const addrs = (a: readonly { addr: Addr }[]) => a.map((x) => formatAddr(x.addr));

test('32 concurrent ADDs: 32 distinct addresses in arrival order, one lock and one scan, every file on disk before the first answer', async () => {
  await withDir(async (dataDir) => {
    const cfg = config(dataDir, ['10.5.0.0/24', 'fd05::/120']);
    const cache = new ScanCache();
    // One LocalIpam per call, as the agent builds them.
    const onDisk: Map<string, string>[] = [];
    const calls = Array.from({ length: 32 }, (_, i) =>
      new LocalIpam({ asyncLockWait: true, scanCache: cache }).add(cfg, who(i)).then((r) => {
        onDisk.push(reservations(cfg.dir));
        return r;
      }),
    );
    const got = await Promise.all(calls);
    const v4 = got.map((r) => formatAddr(r.allocations[0]!.addr));
    const v6 = got.map((r) => formatAddr(r.allocations[1]!.addr));
    assert.deepEqual(
      v4,
      Array.from({ length: 32 }, (_, i) => `10.5.0.${i + 2}`),
      'round robin in arrival order, as one after another',
    );
    assert.deepEqual(
      v6,
      Array.from({ length: 32 }, (_, i) => `fd05::${(i + 2).toString(16)}`),
    );
    // When the first answer is given, all 64 reservations are already there, host-local's format.
    assert.equal(onDisk[0]!.size, 64);
    for (let i = 0; i < 32; i++) {
      assert.equal(onDisk[0]!.get(v4[i]!), `c${i}\r\neth0`);
      assert.equal(onDisk[0]!.get(v6[i]!), `c${i}\r\neth0`);
    }
    assert.equal(readFileSync(join(cfg.dir, 'last_reserved_ip.0'), 'utf8'), '10.5.0.33');
    assert.equal(readFileSync(join(cfg.dir, 'last_reserved_ip.1'), 'utf8'), 'fd05::21');
    assert.deepEqual(
      readdirSync(cfg.dir).filter((n) => n.startsWith('.')),
      [],
      'no temporary file left',
    );
    assert.equal(cache.stats.full + cache.stats.incremental, 1, 'the batch scanned the directory once');
    // The cache took the batch's writes from the batch (nothing read again), and lists what is on disk.
    assert.equal(cache.stats.absorbed, 64 + 2 + 1, 'every address file, both hints and the temporary file');
    assert.equal(cache.stats.reread, 0);
    const flat = (fs: readonly StoreFile[]) => fs.map((f) => ({ name: f.name, content: f.content }));
    const s = DiskStore.open(cfg.dir, cache);
    s.lock();
    assert.deepEqual(flat(s.scan()), flat(s.scanAll()));
    s.close();
    // A later lone ADD sees the batch's files.
    const next = await new LocalIpam({ asyncLockWait: true, scanCache: cache }).add(cfg, who(99));
    assert.deepEqual(addrs(next.allocations), ['10.5.0.34', 'fd05::22']);
    assert.equal(cache.stats.reread, 0);
    // Another writer between two batches: read again, as before.
    writeFileSync(join(cfg.dir, '10.5.0.35'), 'other\r\neth0');
    const after = await new LocalIpam({ asyncLockWait: true, scanCache: cache }).add(cfg, who(100));
    assert.deepEqual(addrs(after.allocations), ['10.5.0.36', 'fd05::23']);
    assert.equal(cache.stats.reread, 1);
    cache.close();
  });
});

test('a batch gives the results ADDs one after another give (the per-pod path), errors per call', async () => {
  await withDir(async (dataDir) => {
    const batched = config(join(dataDir, 'a'), ['10.6.0.0/28']);
    const serial = config(join(dataDir, 'b'), ['10.6.0.0/28']);
    // A /28 has 13 addresses (.2–.14): 16 ADDs, one a duplicate of c0, one asking for c1's address.
    const reqs = [
      ...Array.from({ length: 14 }, (_, i) => ({ who: who(i), requested: [] as Addr[] })),
      { who: who(0), requested: [] as Addr[] },
      { who: who(40), requested: [parseAddr('10.6.0.3')] },
    ];
    const outcome = (p: Promise<{ allocations: readonly { addr: Addr }[] }>) =>
      p.then(
        (r) => addrs(r.allocations).join(','),
        (e: unknown) => (e instanceof AllocationError ? `${e.failure}: ${e.message}` : `other: ${String(e)}`),
      );
    const cache = new ScanCache();
    const a = await Promise.all(
      reqs.map((r) => outcome(new LocalIpam({ asyncLockWait: true, scanCache: cache }).add({ ...batched, requested: r.requested }, r.who))),
    );
    const b: string[] = [];
    for (const r of reqs) b.push(await outcome(new LocalIpam().add({ ...serial, requested: r.requested }, r.who)));
    assert.deepEqual(a, b);
    assert.equal(a[12], '10.6.0.14');
    assert.match(a[13]!, /^exhausted: .*no IP addresses available in range set: 10\.6\.0\.2-10\.6\.0\.14$/);
    assert.match(a[14]!, /^address-unavailable: .*10\.6\.0\.2 has been allocated to c0, duplicate allocation is not allowed$/);
    assert.match(a[15]!, /^address-unavailable: .*requested IP address 10\.6\.0\.3 is not available/);
    assert.deepEqual([...reservations(batched.dir)], [...reservations(serial.dir)], 'the same files');
    assert.equal(readFileSync(join(batched.dir, 'last_reserved_ip.0'), 'utf8'), readFileSync(join(serial.dir, 'last_reserved_ip.0'), 'utf8'));
    cache.close();
  });
});

test('ADDs arriving while another process holds the lock join the waiting batch; a lock never freed fails them all with code 11', async () => {
  await withDir(async (dataDir) => {
    const cfg = config(dataDir, ['10.7.0.0/24']);
    const cache = new ScanCache();
    new LocalIpam({ asyncLockWait: true, scanCache: cache }).status(cfg); // nothing: directory not even created
    await new LocalIpam({ asyncLockWait: true, scanCache: cache }).add(cfg, who(100)); // creates it
    const other = FileLock.open(join(cfg.dir, 'lock')); // another open file description: flock conflicts as with another process
    other.lock();
    const before = cache.stats.full + cache.stats.incremental;
    const first = Array.from({ length: 8 }, (_, i) => new LocalIpam({ asyncLockWait: true, scanCache: cache }).add(cfg, who(i)));
    await new Promise((r) => setTimeout(r, 30));
    const later = Array.from({ length: 8 }, (_, i) => new LocalIpam({ asyncLockWait: true, scanCache: cache }).add(cfg, who(8 + i)));
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(reservations(cfg.dir).size, 1, 'nothing written while the other holder has the lock');
    other.unlock();
    const got = (await Promise.all([...first, ...later])).map((r) => formatAddr(r.allocations[0]!.addr));
    assert.equal(new Set(got).size, 16);
    assert.equal(cache.stats.full + cache.stats.incremental - before, 1, 'one batch, one scan');

    // Held for good: every waiting ADD times out (LockTimeoutError: code 11), and nothing is written.
    other.lock();
    const short = { ...cfg, lockTimeoutMs: 80 };
    const timedOut = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        new LocalIpam({ asyncLockWait: true, scanCache: cache }).add(short, who(50 + i)).then(
          () => 'ok',
          (e: unknown) => e,
        ),
      ),
    );
    for (const e of timedOut) assert.ok(e instanceof LockTimeoutError, String(e));
    other.close();
    assert.equal(reservations(cfg.dir).size, 17);
    // The lock free again: the next ADD goes through.
    const after = await new LocalIpam({ asyncLockWait: true, scanCache: cache }).add(cfg, who(60));
    assert.equal(after.allocations.length, 1);
    cache.close();
  });
});

test('a batch sees files another writer left (a full rescan), and a junk last_reserved_ip restarts at rangeStart as host-local', async () => {
  await withDir(async (dataDir) => {
    const cfg = config(dataDir, ['10.8.0.0/24']);
    await new LocalIpam({ asyncLockWait: true }).add(cfg, who(0)); // 10.8.0.2
    writeFileSync(join(cfg.dir, '10.8.0.3'), 'other\r\neth0'); // a host-local reservation
    writeFileSync(join(cfg.dir, 'last_reserved_ip.0'), 'junk');
    const got = await Promise.all(Array.from({ length: 3 }, (_, i) => new LocalIpam({ asyncLockWait: true }).add(cfg, who(1 + i))));
    assert.deepEqual(
      got.map((r) => formatAddr(r.allocations[0]!.addr)),
      ['10.8.0.4', '10.8.0.5', '10.8.0.6'],
    );
  });
});

test('a lone ADD (alone() true) runs in the turn it arrives in; with company it waits one turn and the ADDs of that turn share its batch', async () => {
  await withDir(async (dataDir) => {
    const cfg = config(dataDir, ['10.9.0.0/24']);
    const cache = new ScanCache();
    await new LocalIpam({ asyncLockWait: true, scanCache: cache }).add(cfg, who(0)); // creates the directory: 10.9.0.2
    // A callback queued before the ADD: a batch started after a turn of the event loop runs after it.
    let turned = false;
    setImmediate(() => (turned = true));
    const lone = new LocalIpam({ asyncLockWait: true, scanCache: cache, alone: () => true }).add(cfg, who(1));
    assert.equal(readFileSync(join(cfg.dir, '10.9.0.3'), 'utf8'), 'c1\r\neth0', 'reserved before add() returned');
    assert.deepEqual(addrs((await lone).allocations), ['10.9.0.3']);
    assert.equal(turned, false, 'answered without waiting for a turn of the event loop');
    // Not alone: the first ADD waits a turn, the two after it (same turn) join its batch: one scan.
    const before = cache.stats.full + cache.stats.incremental;
    const company = [2, 3, 4].map((i) => new LocalIpam({ asyncLockWait: true, scanCache: cache, alone: () => false }).add(cfg, who(i)));
    assert.equal(reservations(cfg.dir).size, 2, 'nothing written in the turn the batch began');
    assert.deepEqual(
      (await Promise.all(company)).map((r) => addrs(r.allocations)[0]),
      ['10.9.0.4', '10.9.0.5', '10.9.0.6'],
    );
    assert.equal(cache.stats.full + cache.stats.incremental - before, 1, 'one batch, one scan');
    cache.close();
  });
});
