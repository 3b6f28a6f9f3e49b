// The agent's scan cache against the truth: after any change another process could make to a
// network directory between two locked scans, a cached scan lists exactly what a full read of
// the directory lists. Replay a failure: SCAN_CACHE_SEED=<seed> node scripts/test.mjs scan-cache
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { parseAddr } from '../ip/index.js';
import { DiskStore, type StoreFile } from './disk-store.js';
import { ScanCache } from './scan-cache.js';

function withDir(fn: (dir: string) => void) {
  const root = mkdtempSync(join(tmpdir(), 'podipam-scan-cache-'));
  try {
    fn(join(root, 'net'));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** A locked scan through the cache and a full read, compared (refusals by message). */
function scanBoth(dir: string, cache: ScanCache): StoreFile[] {
  const flat = (fs: StoreFile[]) => fs.map((f) => ({ name: f.name, content: f.content, refused: f.refused?.message }));
  const s = DiskStore.open(dir, cache);
  s.lock();
  try {
    const cached = s.scan();
    assert.deepEqual(flat(cached), flat(s.scanAll()));
    return cached;
  } finally {
    s.close();
  }
}

test('a cached scan reads only the names that changed, and sees every kind of change another writer makes', () => {
  withDir((dir) => {
    const cache = new ScanCache();
    const store = DiskStore.open(dir, cache);
    store.lock();
    assert.equal(store.reserve('c1', 'eth0', parseAddr('10.0.0.2'), 0), true);
    store.close();
    scanBoth(dir, cache);
    assert.equal(cache.stats.full, 1, 'the first scan reads the whole directory');
    // Another writer: a new reservation, a changed one, a removed one, a planted link, a FIFO-less
    // subdirectory (skipped), a rename.
    writeFileSync(join(dir, '10.0.0.3'), 'c2\r\neth0');
    writeFileSync(join(dir, '10.0.0.2'), 'c9\r\neth1');
    symlinkSync(join(dir, '..', 'outside'), join(dir, '10.0.0.4'));
    mkdirSync(join(dir, 'sub'));
    writeFileSync(join(dir, '10.0.0.5'), 'c5\r\neth0');
    renameSync(join(dir, '10.0.0.5'), join(dir, '10.0.0.6'));
    const names = scanBoth(dir, cache).map((f) => f.name);
    assert.deepEqual(names, ['10.0.0.2', '10.0.0.3', '10.0.0.4', '10.0.0.6', 'last_reserved_ip.0']);
    assert.deepEqual(cache.stats.full, 1);
    assert.equal(cache.stats.incremental, 1);
    assert.ok(cache.stats.reread >= 4 && cache.stats.reread <= 8, `read again only what changed, not everything: ${cache.stats.reread}`);
    unlinkSync(join(dir, '10.0.0.3'));
    unlinkSync(join(dir, '10.0.0.4'));
    scanBoth(dir, cache);
    const before = cache.stats.reread;
    scanBoth(dir, cache);
    assert.equal(cache.stats.reread, before, 'nothing changed: nothing read');
    cache.close();
  });
});

test('a directory replaced under the same path, or a lost watch, makes the next scan read everything', () => {
  withDir((dir) => {
    const cache = new ScanCache();
    mkdirSync(dir);
    writeFileSync(join(dir, '10.0.0.2'), 'a\r\neth0');
    scanBoth(dir, cache);
    rmSync(dir, { recursive: true });
    mkdirSync(dir);
    writeFileSync(join(dir, '10.0.0.9'), 'b\r\neth0');
    assert.deepEqual(
      scanBoth(dir, cache).map((f) => f.name),
      ['10.0.0.9'],
    );
    assert.equal(cache.stats.full, 2);
    // Renamed away and another directory put in its place.
    renameSync(dir, `${dir}.old`);
    mkdirSync(dir);
    writeFileSync(join(dir, '10.0.0.7'), 'c\r\neth0');
    assert.deepEqual(
      scanBoth(dir, cache).map((f) => f.name),
      ['10.0.0.7'],
    );
    assert.equal(cache.stats.full, 3);
    cache.close();
  });
});

test('an overflowed event queue makes the next scan read everything (no change is lost)', () => {
  withDir((dir) => {
    const cache = new ScanCache();
    mkdirSync(dir);
    scanBoth(dir, cache);
    // More events than inotify queues by default (16384): create and remove 9000 files.
    for (let i = 0; i < 9000; i++) writeFileSync(join(dir, `x${i}`), '');
    for (let i = 0; i < 9000; i++) if (i !== 4321) unlinkSync(join(dir, `x${i}`));
    assert.deepEqual(
      scanBoth(dir, cache).map((f) => f.name),
      ['x4321'],
    );
    assert.equal(cache.stats.full, 2, 'the overflow forced a full read');
    cache.close();
  });
});

test('without the addon every scan reads the whole directory; more directories than it keeps evict the oldest', () => {
  withDir((root) => {
    const none = new ScanCache(null);
    mkdirSync(root);
    writeFileSync(join(root, '10.0.0.2'), 'a\r\neth0');
    scanBoth(root, none);
    scanBoth(root, none);
    assert.deepEqual(none.stats, { full: 2, incremental: 0, reread: 0, absorbed: 0 });
    const cache = new ScanCache();
    const dirs = Array.from({ length: 33 }, (_, i) => join(root, `n${i}`));
    for (const d of dirs) scanBoth(d, cache);
    scanBoth(dirs[32]!, cache);
    assert.equal(cache.stats.incremental, 1, 'the newest is still watched');
    scanBoth(dirs[0]!, cache);
    assert.equal(cache.stats.full, 34, 'the oldest was evicted');
    cache.close();
  });
});

test('property: random writers between locked scans never make the cache differ from the directory', () => {
  const seed = Number(process.env.SCAN_CACHE_SEED ?? Date.now() % 2 ** 31);
  console.log(`scan-cache property seed ${seed}`);
  const name = fc.constantFrom('10.0.0.1', '10.0.0.2', '10.0.0.3', 'fd00::1', 'last_reserved_ip.0', '.podipam-reserve.tmp', 'junk');
  const op = fc.oneof(
    fc.record({ k: fc.constant('write' as const), name, content: fc.constantFrom('c1\r\neth0', 'c2\r\neth0', '', 'x'.repeat(300)) }),
    fc.record({ k: fc.constant('unlink' as const), name }),
    fc.record({ k: fc.constant('rename' as const), name, to: name }),
    fc.record({ k: fc.constant('symlink' as const), name }),
    fc.record({ k: fc.constant('mkdir' as const), name }),
    fc.record({ k: fc.constant('reserve' as const), n: fc.integer({ min: 1, max: 3 }) }),
    fc.record({ k: fc.constant('scan' as const) }),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
      withDir((dir) => {
        mkdirSync(dir);
        const cache = new ScanCache();
        try {
          for (const o of ops) {
            const p = (n: string) => join(dir, n);
            try {
              if (o.k === 'write') writeFileSync(p(o.name), o.content);
              else if (o.k === 'unlink') rmSync(p(o.name), { recursive: true, force: true });
              else if (o.k === 'rename') renameSync(p(o.name), p(o.to));
              else if (o.k === 'symlink')
                symlinkSync(join(dir, '..', 'outside'), p(o.name)); // a write through it lands in the test's own root
              else if (o.k === 'mkdir') mkdirSync(p(o.name));
              else if (o.k === 'reserve') {
                const s = DiskStore.open(dir, cache);
                s.lock();
                try {
                  s.scan();
                  s.reserve(`c${o.n}`, 'eth0', parseAddr(`10.0.0.${o.n}`), 0);
                } catch {
                  // a planted entry in the way: refused, as without the cache
                } finally {
                  s.close();
                }
              } else scanBoth(dir, cache);
            } catch (e) {
              if (e instanceof assert.AssertionError) throw e;
              // the random writer's own failures (EEXIST, ENOENT, EISDIR…) are not under test
            }
          }
          scanBoth(dir, cache);
        } finally {
          cache.close();
        }
      });
    }),
    { seed, numRuns: 300 },
  );
});
