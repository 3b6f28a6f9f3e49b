/**
 * Pools changed while they serve (src/cluster/admin/pool-resize.ts, pool-drain.ts, pool-settings.ts,
 * the claim proof of src/alloc/overlapping-blocks.ts), run on every store back end: grow and
 * shrink, drain, block-size changes with instances whose views are stale racing fresh ones,
 * `ipam check`'s block-overlap. Invariants after every race: no two blocks overlap, no address
 * twice, no request failed, check clean.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { formatAddr, formatPrefix, parseAddr, parsePrefix, prefixContainsPrefix, prefixOverlaps } from '../../src/ip/index.js';
import { type Store, openStore } from '../../src/store/index.js';
import { decodeBlock, encodeBlock } from '../../src/cluster/records/block-record.js';
import { NoPoolError, PoolChangeRefusedError, PoolConflictError, PoolExhaustedError } from '../../src/cluster/records/errors.js';
import { encodePool, validatePoolSpec } from '../../src/cluster/records/pool-record.js';
import { AFFINITY_PREFIX, BLOCK_PREFIX, blockKey, poolKey } from '../../src/cluster/records/keys.js';
import { ClusterIpam } from '../../src/cluster/service/cluster-ipam.js';
import { backupText, restoreBackup } from '../../src/store/backup-store.js';
import { parseBackup } from '../../src/store/backup-file.js';
import { ipam, withStoreOf } from './cluster-suite-helpers.js';
import { addNode } from '../../src/controller/add-node.js';
import { deleteNode } from '../../src/controller/delete-node.js';
import { ClusterGc } from '../../src/server/gc/cluster-gc.js';
import { silentLog } from '../../src/log/logger.js';

async function blocks(s: Store): Promise<ReturnType<typeof decodeBlock>[]> {
  return (await s.list(BLOCK_PREFIX)).map(decodeBlock);
}

/** Every pair of overlapping blocks, as text. */
async function overlaps(s: Store): Promise<string[]> {
  const bs = await blocks(s);
  const out: string[] = [];
  for (let i = 0; i < bs.length; i++)
    for (let j = i + 1; j < bs.length; j++)
      if (prefixOverlaps(bs[i]!.cidr, bs[j]!.cidr)) out.push(`${formatPrefix(bs[i]!.cidr)} ~ ${formatPrefix(bs[j]!.cidr)}`);
  return out;
}

async function clean(c: ClusterIpam): Promise<void> {
  const r = await c.check();
  assert.deepEqual({ leaks: r.leaks, problems: r.problems }, { leaks: [], problems: [] });
}

/** Node `node` asks for one address per call, `n` calls in a row; every address (text) returned. */
async function adds(c: ClusterIpam, node: string, tag: string, n: number, got: string[]): Promise<void> {
  for (let i = 0; i < n; i++) {
    const a = await c.assign({ node, handle: `${tag}-${node}-${i}`, auto: { 4: 1 }, attrs: { namespace: 'ns', pod: `${tag}-${node}-${i}` } });
    got.push(...a.map((x) => formatAddr(x.addr)));
  }
}

export function clusterPoolLiveSuite(kind: string, open: () => Promise<Store>): void {
  const withStore = withStoreOf(open);

  describe(`ClusterIpam on ${kind}: pools that change live`, () => {
    it(
      'reuse quarantine: the release time lives in the block (through backup and restore); no node gets the address before reuseAfter; pool set turns it off',
      withStore(async (s) => {
        let t = Date.parse('2026-12-04T08:00:00.000Z');
        const at = (node: string) => new ClusterIpam(s, { now: () => new Date(t), writer: node });
        const admin = at('cli');
        await admin.createPool({ name: 'q', cidr: '10.26.0.0/28', blockSize: 28, reuseAfter: '30s' });
        const [a, b] = [at('na'), at('nb')];
        const got: string[] = [];
        await adds(a, 'na', 'x', 13, got); // the /28's 13 usable addresses
        const x = got[4]!;
        const rel = await a.releaseHandle('x-na-4', 'na');
        assert.deepEqual(
          rel.map((r) => formatAddr(r.addr)),
          [x],
        );
        const [entry] = await s.list(BLOCK_PREFIX);
        assert.deepEqual(
          [...(decodeBlock(entry!).released ?? [])],
          [[Number(parseAddr(x).value - parsePrefix('10.26.0.0/28').base), t]],
          'the release time is in the block record',
        );
        // The whole store through a backup into a fresh one: the record comes back as it was.
        const copy = await openStore('memory:');
        await restoreBackup(copy, parseBackup('b', (await backupText(s, new Date(t))).text));
        assert.equal((await copy.get(entry!.key))?.value, entry!.value);
        await copy.close();
        t += 29_000;
        await assert.rejects(
          b.assign({ node: 'nb', handle: 'y', auto: { 4: 1 } }),
          (e: unknown) => e instanceof PoolExhaustedError && e.quarantined?.count === 1 && e.quarantined.until === new Date(t - 29_000 + 31_000).toISOString(),
        );
        await assert.rejects(a.assign({ node: 'na', handle: 'y', auto: { 4: 1 } }), PoolExhaustedError);
        t += 2_000;
        assert.deepEqual(
          (await b.assign({ node: 'nb', handle: 'y', auto: { 4: 1 } })).map((g) => formatAddr(g.addr)),
          [x],
        );
        assert.equal(decodeBlock((await s.get(entry!.key))!).released, undefined, 'the spent entry went with that write');
        // Turned off: a released address is handed out again at once.
        assert.equal((await admin.setPoolSettings('q', { reuseAfter: '0' })).reuseAfterMs, 0);
        await b.releaseHandle('y', 'nb');
        assert.deepEqual(
          (await a.assign({ node: 'na', handle: 'z', auto: { 4: 1 } })).map((g) => formatAddr(g.addr)),
          [x],
        );
        await assert.rejects(admin.setPoolSettings('q', { reuseAfter: '2h' }), /invalid pool reuseAfter "2h": at most 1h/);
        await clean(admin);
      }),
    );

    it(
      'reuse quarantine: an orphan block emptied while it quarantines stays, then GC deletes it once the quarantine is over (through the gate, comparing the block)',
      withStore(async (s) => {
        let t = Date.parse('2026-12-04T08:00:00.000Z');
        const at = (node: string) => new ClusterIpam(s, { now: () => new Date(t), writer: node });
        const admin = at('cli');
        await admin.createPool({ name: 'o', cidr: '10.27.0.0/28', blockSize: 28, reuseAfter: '30s' });
        await addNode(s, { name: 'gone' });
        await addNode(s, { name: 'nb' });
        const [g] = await at('gone').assign({ node: 'gone', handle: 'g0', auto: { 4: 1 } });
        const key = blockKey(g!.block);
        const [x] = await at('nb').assign({ node: 'nb', handle: 'b0', auto: { 4: 1 } }); // borrowed: the pool's only block is gone's
        assert.equal(blockKey(x!.block), key);
        await deleteNode(s, 'gone', { by: 'cli' });
        const r = await admin.releaseDeletedNodeBlock(key);
        assert.deepEqual([r.handles, r.released, r.deleted, r.borrowed], [1, true, false, 1], 'kept without affinity for the borrowed address');
        await at('nb').releaseHandle('b0', 'nb');
        const kept = decodeBlock((await s.get(key))!);
        assert.deepEqual(
          [kept.affinity, kept.allocations.size, kept.released?.size],
          [null, 0, 2],
          'an empty orphan that still quarantines both freed addresses',
        );
        const gc = new ClusterGc({ ipam: admin, graceMs: 0, log: silentLog, now: () => t });
        assert.deepEqual((await admin.check()).emptyOrphans, [{ key, block: formatPrefix(g!.block), quarantinedUntil: new Date(t + 31_000).toISOString() }]);
        assert.equal((await gc.runOnce()).orphansDeleted, 0);
        assert.equal(await admin.releaseEmptyOrphanBlock(key), false, 'refused while it quarantines');
        assert.ok(await s.get(key));
        t += 31_000;
        assert.deepEqual((await admin.check()).emptyOrphans, [{ key, block: formatPrefix(g!.block) }]);
        assert.equal((await gc.runOnce()).orphansDeleted, 1);
        assert.equal(await s.get(key), undefined, 'GC deleted the orphan once its quarantine was over');
        assert.equal((await admin.check()).emptyOrphans, undefined);
        // The space serves again: a node claims a fresh block there.
        const [y] = await at('nb').assign({ node: 'nb', handle: 'b1', auto: { 4: 1 } });
        assert.equal(decodeBlock((await s.get(blockKey(y!.block)))!).affinity, 'nb');
        await clean(admin);
      }),
    );

    it(
      'reuse quarantine: an orphan block past its quarantine that an ADD borrowed from is not deleted',
      withStore(async (s) => {
        let t = Date.parse('2026-12-04T08:00:00.000Z');
        const admin = new ClusterIpam(s, { now: () => new Date(t), writer: 'cli' });
        await admin.createPool({ name: 'o2', cidr: '10.27.1.0/28', blockSize: 28, reuseAfter: '5s' });
        // An orphan block written as a release leaves it: no affinity, one quarantined ordinal.
        const cidr = parsePrefix('10.27.1.0/28');
        const key = blockKey(cidr);
        const orphan = { cidr, affinity: null, allocations: new Map<number, string>(), next: 3, released: new Map([[2, t]]) };
        await s.txn([{ key, rev: 0 }], [{ type: 'put', key, value: encodeBlock(orphan) }]);
        t += 6_001;
        assert.deepEqual((await admin.check()).emptyOrphans, [{ key, block: '10.27.1.0/28' }]);
        // A borrower takes the (now free) address before GC acts on that report.
        const [a] = await admin.assign({ node: 'nc', handle: 'c0', auto: { 4: 1 } });
        assert.equal(blockKey(a!.block), key, 'borrowed from the orphan');
        assert.equal(await admin.releaseEmptyOrphanBlock(key), false, 'not empty any more: kept');
        assert.equal(decodeBlock((await s.get(key))!).allocations.size, 1);
      }),
    );

    it(
      'grows in place: the old blocks stay, new blocks come from the new space, a stale instance re-plans instead of failing',
      withStore(async (s) => {
        const admin = ipam(s);
        await admin.createPool({ name: 'p', cidr: '10.20.0.0/27', blockSize: 28 });
        const node = ipam(s);
        const got: string[] = [];
        await adds(node, 'n1', 'a', 26, got); // the /27's two /28 blocks: 13 usable each
        await assert.rejects(node.assign({ node: 'n1', handle: 'x', auto: { 4: 1 } }), PoolExhaustedError);
        const before = (await blocks(s)).map((b) => formatPrefix(b.cidr)).sort();
        const r = await admin.resizePool('p', '10.20.0.0/25');
        assert.deepEqual([r.kind, formatPrefix(r.pool.cidr), r.removedBlocks], ['grow', '10.20.0.0/25', 0]);
        // `node` still has its snapshot of the /27: its next claim fails the config compare and re-plans.
        // 66 addresses need 6 blocks: at least 2 of them lie outside the /26 (refused below).
        await adds(node, 'n1', 'b', 40, got);
        assert.equal(new Set(got).size, got.length, 'no address twice');
        const after = (await blocks(s)).map((b) => formatPrefix(b.cidr)).sort();
        assert.ok(
          before.every((b) => after.includes(b)),
          'old blocks kept',
        );
        assert.ok(after.length > before.length);
        assert.ok((await blocks(s)).every((b) => prefixContainsPrefix(parsePrefix('10.20.0.0/25'), b.cidr)));
        await assert.rejects(
          admin.resizePool('p', '10.20.0.0/26'),
          (e: unknown) =>
            e instanceof PoolChangeRefusedError && /addresses are allocated outside cidr 10\.20\.0\.0\/26: 10\.20\.0\.\d+, .* and \d+ more/.test(e.message),
        );
        await clean(admin);
      }),
    );

    it(
      'shrinks: refused naming the addresses outside; empty blocks outside deleted with their affinities; a stale instance never claims outside',
      withStore(async (s) => {
        const admin = ipam(s);
        await admin.createPool({ name: 'p', cidr: '10.21.0.0/24', blockSize: 26 });
        const a = ipam(s);
        const b = ipam(s);
        await a.assign({ node: 'na', handle: 'out', ips: [parseAddr('10.21.0.200')] });
        await a.assign({ node: 'na', handle: 'in', ips: [parseAddr('10.21.0.10')] });
        await b.assign({ node: 'nb', handle: 'b-out', ips: [parseAddr('10.21.0.140')] });
        await assert.rejects(
          admin.resizePool('p', '10.21.0.0/25'),
          (e: unknown) =>
            e instanceof PoolChangeRefusedError &&
            e.message.includes('2 addresses are allocated outside cidr 10.21.0.0/25: 10.21.0.140, 10.21.0.200') &&
            e.addresses.length === 2,
        );
        assert.equal(formatPrefix((await admin.listPools())[0]!.cidr), '10.21.0.0/24', 'nothing changed');
        await a.releaseHandle('out');
        await b.releaseHandle('b-out');
        const r = await admin.resizePool('p', '10.21.0.0/25');
        assert.deepEqual([r.kind, formatPrefix(r.pool.cidr), r.removedBlocks, r.pool.shrinkingFrom], ['shrink', '10.21.0.0/25', 2, undefined]);
        assert.deepEqual(
          (await blocks(s)).map((x) => formatPrefix(x.cidr)),
          ['10.21.0.0/26'],
        );
        assert.deepEqual(
          (await s.list(AFFINITY_PREFIX)).map((e) => e.key),
          ['affinities/na/10.21.0.0-26'],
        );
        // b's snapshot still says /24: its requests land inside the /25 (a claim re-plans on the new config).
        const got: string[] = [];
        await adds(b, 'nb', 'c', 30, got);
        assert.ok(
          got.every((x) => prefixContainsPrefix(parsePrefix('10.21.0.0/25'), { family: 4, base: parseAddr(x).value, len: 32 })),
          got.join(' '),
        );
        await assert.rejects(b.assign({ node: 'nb', handle: 'o2', ips: [parseAddr('10.21.0.200')] }), /not in any pool/);
        await clean(admin);
      }),
    );

    it(
      'a shrink whose re-check finds an allocation that slipped in puts the old CIDR back and refuses',
      withStore(async (s) => {
        const admin = ipam(s);
        await admin.createPool({ name: 'p', cidr: '10.22.0.0/24', blockSize: 26 });
        const a = ipam(s);
        await a.assign({ node: 'na', handle: 'in', ips: [parseAddr('10.22.0.10')] });
        // The allocation lands between the first check and the mark: simulated by a store that
        // lets it in on the first txn the resize sends (its mark).
        let once = false;
        const txn: Store['txn'] = async (compares, ops) => {
          if (!once) {
            once = true;
            await a.assign({ node: 'na', handle: 'late', ips: [parseAddr('10.22.0.201')] });
          }
          return s.txn(compares, ops);
        };
        const racing = new Proxy(s, {
          get(target, key) {
            if (key === 'txn') return txn;
            const v: unknown = Reflect.get(target, key, target);
            return typeof v === 'function' ? (v as (...args: unknown[]) => unknown).bind(target) : v;
          },
        });
        await assert.rejects(
          ipam(racing).resizePool('p', '10.22.0.0/25'),
          (e: unknown) => e instanceof PoolChangeRefusedError && e.message.includes('10.22.0.201'),
        );
        const p = (await admin.listPools())[0]!;
        assert.deepEqual([formatPrefix(p.cidr), p.shrinkingFrom], ['10.22.0.0/24', undefined]);
        assert.equal((await a.addressesOf('late'))?.length, 1, 'the late allocation kept');
        await clean(admin);
      }),
    );

    it(
      "a shrink's rollback is checked as any pool write: never the old CIDR over a pool made meanwhile",
      withStore(async (s) => {
        const admin = ipam(s);
        await admin.createPool({ name: 'p', cidr: '10.24.0.0/24', blockSize: 26 });
        const a = ipam(s);
        // The first txn the resize sends (its mark) lets an allocation in outside the new CIDR, so
        // the resize's re-check will roll back; between the mark and that re-check, another writer
        // tries the space the shrink gives up: through the API (refused: the shrink still holds it),
        // and as a record written by a writer that knows no gate (planted), which the rollback meets.
        let txns = 0;
        let planted = false;
        const txn: Store['txn'] = async (compares, ops) => {
          if (++txns === 1) await a.assign({ node: 'na', handle: 'late', ips: [parseAddr('10.24.0.201')] });
          return s.txn(compares, ops);
        };
        const list: Store['list'] = async (prefix, options) => {
          if (txns === 1 && !planted && prefix === BLOCK_PREFIX) {
            planted = true;
            await assert.rejects(
              ipam(s).createPool({ name: 'q', cidr: '10.24.0.128/25', blockSize: 27 }),
              (e: unknown) => e instanceof PoolConflictError && /overlaps pool "p" \(10\.24\.0\.0\/25, still holding 10\.24\.0\.0\/24/.test(e.message),
            );
            const q = { ...validatePoolSpec({ name: 'q', cidr: '10.24.0.128/25', blockSize: 27 }) };
            assert.equal((await s.txn([{ key: poolKey('q'), rev: 0 }], [{ type: 'put', key: poolKey('q'), value: encodePool(q) }])).succeeded, true);
          }
          return s.list(prefix, options);
        };
        const racing = new Proxy(s, {
          get(target, key) {
            if (key === 'txn') return txn;
            if (key === 'list') return list;
            const v: unknown = Reflect.get(target, key, target);
            return typeof v === 'function' ? (v as (...args: unknown[]) => unknown).bind(target) : v;
          },
        });
        await assert.rejects(
          ipam(racing).resizePool('p', '10.24.0.0/25'),
          (e: unknown) => e instanceof PoolChangeRefusedError && /overlaps pool "q" \(10\.24\.0\.128\/25\)/.test(e.message),
        );
        assert.ok(planted);
        const p = (await admin.listPools()).find((x) => x.name === 'p')!;
        assert.deepEqual(
          [formatPrefix(p.cidr), p.shrinkingFrom && formatPrefix(p.shrinkingFrom)],
          ['10.24.0.0/25', '10.24.0.0/24'],
          'the rollback wrote the old cidr over pool q',
        );
        // Remove the planted pool and the late allocation: the same resize then finishes.
        await s.txn([], [{ type: 'delete', key: poolKey('q') }]);
        await a.releaseHandle('late');
        assert.equal((await admin.resizePool('p', '10.24.0.0/25')).kind, 'shrink');
        await clean(admin);
      }),
    );

    it(
      'drain: no new addresses nor blocks, existing kept; what is held listed by node and pod; undrain serves again',
      withStore(async (s) => {
        const admin = ipam(s);
        await admin.createPool({ name: 'p', cidr: '10.23.0.0/24', blockSize: 28 });
        const a = ipam(s);
        const got: string[] = [];
        await adds(a, 'na', 'd', 3, got);
        await admin.assign({ node: 'nb', handle: 'bare', auto: { 4: 1 } });
        const p = await admin.setPoolDraining('p', true);
        assert.deepEqual([p.draining, p.disabled], [true, false]);
        await assert.rejects(
          a.assign({ node: 'na', handle: 'new', auto: { 4: 1 } }),
          (e: unknown) => e instanceof NoPoolError && /disabled or draining/.test(e.message),
        );
        await assert.rejects(a.assign({ node: 'na', handle: 'new', ips: [parseAddr('10.23.0.100')] }), /pool "p" is draining/);
        assert.deepEqual(
          await a.assign({ node: 'na', handle: 'd-na-0', auto: { 4: 1 } }).then((x) => x.map((y) => formatAddr(y.addr))),
          [got[0]],
          'a repeated ADD still answers',
        );
        const held = await admin.poolHeld('p');
        assert.equal(held.allocated, 4);
        assert.deepEqual(
          held.nodes.map((n) => [n.node, n.pods.map((x) => x.pod ?? x.handle)]),
          [
            ['na', ['ns/d-na-0', 'ns/d-na-1', 'ns/d-na-2']],
            ['nb', ['bare']],
          ],
        );
        for (let i = 0; i < 3; i++) await a.releaseHandle(`d-na-${i}`);
        await admin.releaseHandle('bare');
        assert.equal((await admin.poolHeld('p')).allocated, 0);
        await admin.setPoolDraining('p', false);
        assert.equal((await a.assign({ node: 'na', handle: 'again', auto: { 4: 1 } })).length, 1);
        await admin.setPoolDraining('p', true);
        await admin.releaseHandle('again');
        await admin.deletePool('p');
        assert.deepEqual(await blocks(s), []);
      }),
    );

    it(
      "drain names what it lists: a node's warm pool's idle addresses apart from pods, a warm-pool pod by its own name",
      withStore(async (s) => {
        const admin = ipam(s);
        await admin.createPool({ name: 'p', cidr: '10.25.0.0/24', blockSize: 28 });
        const got: string[] = [];
        await adds(admin, 'na', 'd', 1, got);
        // Node nb's agent: a warm handle holding four addresses, one of them handed to a pod (its record, written behind).
        const warmHandle = 'podipam-warm:nb:r1';
        const warm = (await admin.assign({ node: 'nb', handle: warmHandle, auto: { 4: 4 } })).map((x) => formatAddr(x.addr));
        assert.equal(warm.length, 4);
        const record = {
          network: 'net',
          containerId: 'c1',
          ifname: 'eth0',
          addrs: [warm[2]],
          since: new Date().toISOString(),
          namespace: 'shop',
          name: 'web-0',
          uid: 'u1',
        };
        await s.txn([], [{ type: 'put', key: 'agent-pods/nb/net:c1:eth0', value: JSON.stringify(record) }]);
        await admin.setPoolDraining('p', true);
        const held = await admin.poolHeld('p');
        assert.deepEqual([held.allocated, held.inUse, held.idle], [5, 2, 3]);
        assert.deepEqual(held.nodes, [
          { node: 'na', pods: [{ pod: 'ns/d-na-0', handle: 'd-na-0', addresses: [got[0]] }] },
          {
            node: 'nb',
            pods: [{ pod: 'shop/web-0', handle: 'net:c1:eth0', addresses: [warm[2]] }],
            warm: { handles: [warmHandle], idle: [warm[0], warm[1], warm[3]] },
          },
        ]);
        assert.ok(
          held.nodes.every((n) => n.pods.every((p) => !p.handle.startsWith('podipam-warm:'))),
          'a warm handle is never listed as a pod',
        );
      }),
    );

    it(
      'block size changed: a new block never overlaps an older one of another size — the planner skips them and the guards prove it',
      withStore(async (s) => {
        const admin = ipam(s);
        await admin.createPool({ name: 'p', cidr: '10.24.0.0/24', blockSize: 26 });
        const a = ipam(s);
        await a.assign({ node: 'na', handle: 'a1', ips: [parseAddr('10.24.0.5')] });
        await a.assign({ node: 'na', handle: 'a2', ips: [parseAddr('10.24.0.130')] });
        const p = await admin.setPoolSettings('p', { blockSize: 25 });
        assert.deepEqual([p.blockSize, p.formerBlockSizes], [25, [26]]);
        // Node b, a fresh instance that knows no block, guesses /25s: both overlap a /26.
        const b = ipam(s);
        const got = await b.assign({ node: 'nb', handle: 'b1', auto: { 4: 1 } });
        assert.equal(got[0]!.block.len, 26, `borrowed from an existing /26, not a new /25: ${formatPrefix(got[0]!.block)}`);
        assert.deepEqual(await overlaps(s), []);
        // A specific address in an old /26 is served from that block; released by address from it too.
        const spec = await b.assign({ node: 'nb', handle: 'b2', ips: [parseAddr('10.24.0.6')] });
        assert.equal(formatPrefix(spec[0]!.block), '10.24.0.0/26');
        const rel = await admin.releaseAddresses([parseAddr('10.24.0.6')]);
        assert.deepEqual(
          rel.map((r) => r.handle),
          ['b2'],
        );
        // Once the /26 blocks are gone, /25s are claimed; setting the size again prunes former sizes.
        for (const h of ['a1', 'a2', 'b1']) await admin.releaseHandle(h);
        await admin.setPoolDraining('p', true);
        await admin.deletePool('p');
        await admin.createPool({ name: 'p', cidr: '10.24.0.0/24', blockSize: 26 });
        assert.deepEqual((await admin.setPoolSettings('p', { blockSize: 25 })).formerBlockSizes, [26], 'the size replaced is kept even with no block of it');
        assert.deepEqual((await admin.setPoolSettings('p', { blockSize: 25 })).formerBlockSizes, [], 'pruned once no block has it');
        await clean(admin);
      }),
    );

    it(
      'block size changes refused: more than 4 bits from a size still present, an ip-set on the pool, a bad value',
      withStore(async (s) => {
        const admin = ipam(s);
        await admin.createPool({ name: 'p', cidr: '10.25.0.0/20', blockSize: 26 });
        await admin.assign({ node: 'na', handle: 'a1', auto: { 4: 1 } });
        await assert.rejects(admin.setPoolSettings('p', { blockSize: 21 }), /Cannot use 'blockSize' 21 for pool "p": it still has \/26 blocks/);
        await assert.rejects(admin.setPoolSettings('p', { blockSize: 19 }), /Cannot use 'blockSize' 19 for 10\.25\.0\.0\/20/);
        await assert.rejects(admin.setPoolSettings('p', { blockSize: 31 }), /blockSize' 31/);
        await assert.rejects(admin.setPoolSettings('p', {}), /nothing to set/);
        await assert.rejects(admin.setPoolSettings('p', { nodeSelector: 'a==' }), /nodeSelector/);
        await admin.createIpSet('set', 'p', { ranges: ['10.25.1.5'] });
        await assert.rejects(
          admin.setPoolSettings('p', { blockSize: 27 }),
          (e: unknown) => e instanceof PoolChangeRefusedError && /ip-set "set" draw from it/.test(e.message),
        );
        const p = await admin.setPoolSettings('p', { nodeSelector: 'zone=a', disabled: true });
        assert.deepEqual([p.blockSize, p.nodeSelector.text, p.disabled], [26, 'zone=a', true]);
      }),
    );

    it(
      'racing claims across block-size changes and a grow (instances with stale views on the old size, fresh ones on the new): no overlap, no duplicate, no failure',
      withStore(async (s) => {
        const admin = ipam(s);
        await admin.createPool({ name: 'p', cidr: '10.26.0.0/22', blockSize: 27 });
        const nodes = ['n1', 'n2', 'n3', 'n4'];
        // Two instances per node (one warmed on each size), as two agents' or plugin processes' views.
        const inst = nodes.map(() => [ipam(s), ipam(s)] as const);
        const got: string[] = [];
        const round = async (tag: string, which: 0 | 1, n: number): Promise<void> => {
          await Promise.all(nodes.map((node, i) => adds(inst[i]![which], node, `${tag}${which}`, n, got)));
        };
        await round('w', 0, 2);
        const changes = (async () => {
          await admin.setPoolSettings('p', { blockSize: 26 });
          await admin.resizePool('p', '10.26.0.0/21');
          await admin.setPoolSettings('p', { blockSize: 28 });
        })();
        await Promise.all([round('r', 0, 10), round('r', 1, 10), changes]);
        await Promise.all([round('t', 0, 6), round('t', 1, 6)]);
        assert.equal(new Set(got).size, got.length, 'no address twice');
        assert.deepEqual(await overlaps(s), []);
        const sizes = new Set((await blocks(s)).map((b) => b.cidr.len));
        assert.ok(sizes.size >= 2, `blocks of several sizes: ${[...sizes].join(', ')}`);
        await clean(admin);
      }),
    );

    it(
      'ipam check names two overlapping blocks written around the claim proof',
      withStore(async (s) => {
        const admin = ipam(s);
        await admin.createPool({ name: 'p', cidr: '10.27.0.0/24', blockSize: 26 });
        await admin.assign({ node: 'na', handle: 'a1', ips: [parseAddr('10.27.0.5')] });
        const bad = { cidr: parsePrefix('10.27.0.0/25'), affinity: null, next: 0, allocations: new Map<number, string>() };
        await s.txn([], [{ type: 'put', key: blockKey(bad.cidr), value: encodeBlock(bad) }]);
        const r = await admin.check();
        const o = r.problems.filter((p) => p.kind === 'block-overlap');
        assert.equal(o.length, 1, JSON.stringify(r.problems));
        assert.match(o[0]!.message, /block 10\.27\.0\.0\/26 \(node "na", 1 allocated\) overlaps block 10\.27\.0\.0\/25 \(no node, 0 allocated\)/);
        assert.ok(await s.get(poolKey('p')));
      }),
    );
  });
}
