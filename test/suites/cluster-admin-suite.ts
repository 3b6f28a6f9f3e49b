/**
 * The cluster service suite, part 2 (release, pools, ipam check, crash safety, random
 * operations), run against every store back end by cluster-ipam.test.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type Addr, formatAddr, parseAddr, parsePrefix, prefixContains } from '../../src/ip/index.js';
import type { Store } from '../../src/store/index.js';
import { nodeKey } from '../../src/model/node-record.js';
import { encodeNodeTombstone, nodeTombstoneKey } from '../../src/model/node-tombstone.js';
import { PoolConflictError, PoolExhaustedError, PoolInUseError } from '../../src/cluster/records/errors.js';
import { encodeAffinity } from '../../src/cluster/records/affinity-record.js';
import { encodeBlock } from '../../src/cluster/records/block-record.js';
import { encodeHandle } from '../../src/cluster/records/handle-record.js';
import { AFFINITY_PREFIX, BLOCK_PREFIX, affinityKey, blockKey, handleKey } from '../../src/cluster/records/keys.js';
import { T0, crashAfter, formatPrefixOf, ipam, prng, twoPools, withStoreOf } from './cluster-suite-helpers.js';

export function clusterAdminSuite(kind: string, open: () => Promise<Store>): void {
  const withStore = withStoreOf(open);

  describe(`ClusterIpam on ${kind}: release`, () => {
    it(
      'releases by handle idempotently and by address, keeping handle counts right',
      withStore(async (s) => {
        const c = ipam(s);
        await twoPools(c);
        const got = await c.assign({ node: 'n', handle: 'h', auto: { 4: 2, 6: 1 } });
        assert.equal(got.length, 3);
        const r1 = await c.releaseAddresses([got[0]!.addr, parseAddr('10.10.200.1')]);
        assert.deepEqual(
          r1.map((r) => [formatAddr(r.addr), r.handle]),
          [[formatAddr(got[0]!.addr), 'h']],
        );
        const h = JSON.parse((await s.get(handleKey('h')))!.value);
        assert.deepEqual(Object.values(h.blocks).sort(), [1, 1]);
        assert.deepEqual(await c.check(), { leaks: [], problems: [] });
        const r2 = await c.releaseHandle('h', 'n');
        assert.equal(r2.length, 2);
        assert.deepEqual(await c.releaseHandle('h', 'n'), []);
        assert.deepEqual(await ipam(s).releaseHandle('h'), []);
        assert.equal(await s.get(handleKey('h')), undefined);
        assert.deepEqual(
          (await c.usage()).pools.map((p) => p.allocated),
          [0, 0],
        );
      }),
    );

    it(
      'releases addresses only while the named handle holds them (heldBy): an address released and handed to another pod meanwhile stays its',
      withStore(async (s) => {
        const c = ipam(s);
        await twoPools(c);
        const [a] = await c.assign({ node: 'n', handle: 'warm', auto: { 4: 1 } });
        // Someone else frees it (an operator, a GC) and a pod gets the same address.
        await ipam(s).releaseHandle('warm');
        await ipam(s).assign({ node: 'm', handle: 'pod', ips: [a!.addr] });
        // The first holder, unaware, returns "its" address: nothing is freed.
        assert.deepEqual(await c.releaseAddresses([a!.addr], new Set(['warm'])), []);
        assert.deepEqual(
          (await c.addressesOf('pod'))?.map((x) => formatAddr(x.addr)),
          [formatAddr(a!.addr)],
        );
        assert.deepEqual(await c.check(), { leaks: [], problems: [] });
        // Held by the named handle: freed.
        assert.deepEqual(
          (await c.releaseAddresses([a!.addr], new Set(['pod']))).map((r) => r.handle),
          ['pod'],
        );
        assert.equal(await c.addressesOf('pod'), undefined);
      }),
    );

    it(
      'releases by handle even when the handle record is corrupt (DEL must not fail forever)',
      withStore(async (s) => {
        const c = ipam(s);
        await twoPools(c);
        await c.assign({ node: 'n', handle: 'h', auto: 'each-family' });
        await c.assign({ node: 'n', handle: 'other', auto: 'each-family' });
        await s.txn([], [{ type: 'put', key: handleKey('h'), value: '{"node":' }]);
        const r = await ipam(s).releaseHandle('h', 'n');
        assert.equal(r.length, 2);
        assert.equal(await s.get(handleKey('h')), undefined);
        assert.deepEqual(
          (await c.usage()).pools.map((p) => p.allocated),
          [1, 1],
        );
        assert.deepEqual(await c.check(), { leaks: [], problems: [] });
      }),
    );

    it(
      'releases addresses an older version handed out at excluded ordinals; their block hands out nothing new until its gateway is free',
      withStore(async (s) => {
        const c = ipam(s);
        await twoPools(c);
        // As the older version wrote them: the block's network address and gateway given to pods.
        const cidr = parsePrefix('10.10.0.0/26');
        await s.txn(
          [],
          [
            {
              type: 'put',
              key: blockKey(cidr),
              value: encodeBlock({
                cidr,
                affinity: 'n',
                allocations: new Map([
                  [0, 'old0'],
                  [1, 'old1'],
                ]),
                next: 2,
              }),
            },
            { type: 'put', key: affinityKey('n', cidr), value: encodeAffinity({ state: 'confirmed', claimedAt: T0.toISOString() }) },
            { type: 'put', key: handleKey('old0'), value: encodeHandle({ node: 'n', blocks: new Map([['10.10.0.0/26', 1]]) }) },
            { type: 'put', key: handleKey('old1'), value: encodeHandle({ node: 'n', blocks: new Map([['10.10.0.0/26', 1]]) }) },
          ],
        );
        assert.deepEqual(await c.check(), { leaks: [], problems: [] });
        const [fresh] = await c.assign({ node: 'n', handle: 'new', auto: { 4: 1 } });
        assert.ok(!prefixContains(cidr, fresh!.addr), `${formatAddr(fresh!.addr)} came from the block whose gateway a pod holds`);
        assert.deepEqual(
          (await c.addressesOf('old1'))!.map((a) => formatAddr(a.addr)),
          ['10.10.0.1'],
        );
        assert.deepEqual(
          (await c.releaseHandle('old0', 'n')).map((r) => formatAddr(r.addr)),
          ['10.10.0.0'],
        );
        assert.deepEqual(
          (await ipam(s).releaseAddresses([parseAddr('10.10.0.1')])).map((r) => r.handle),
          ['old1'],
        );
        assert.equal(await s.get(handleKey('old1')), undefined);
        const [after] = await c.assign({ node: 'n', handle: 'ip', ips: [parseAddr('10.10.0.2')] });
        assert.equal(formatAddr(after!.addr), '10.10.0.2', 'once its gateway is free the block is usable again');
        assert.deepEqual(await c.check(), { leaks: [], problems: [] });
      }),
    );

    it(
      'deletes a handle when releasing its last address by address',
      withStore(async (s) => {
        const c = ipam(s);
        await twoPools(c);
        const [a] = await c.assign({ node: 'n', handle: 'h', auto: { 4: 1 } });
        await c.releaseAddresses([a!.addr]);
        assert.equal(await s.get(handleKey('h')), undefined);
        assert.deepEqual(await c.check(), { leaks: [], problems: [] });
      }),
    );

    it(
      'releases an empty extra block when another block of the node has room, keeps the last one',
      withStore(async (s) => {
        const c = ipam(s);
        await c.createPool({ name: 'p', cidr: '10.90.0.0/24', blockSize: 29 });
        for (let i = 0; i < 6; i++) await c.assign({ node: 'n', handle: `h${i}`, auto: { 4: 1 } }); // 5 usable + 1: two blocks
        assert.equal((await s.list(BLOCK_PREFIX)).length, 2);
        await c.releaseHandle('h0', 'n'); // first block now has room
        await c.releaseHandle('h5', 'n'); // second block empty → released
        assert.equal((await s.list(BLOCK_PREFIX)).length, 1);
        assert.equal((await s.list(AFFINITY_PREFIX)).length, 1);
        for (const h of ['h1', 'h2', 'h3', 'h4']) await c.releaseHandle(h, 'n');
        assert.equal((await s.list(BLOCK_PREFIX)).length, 1, 'the last block stays with its node');
        assert.deepEqual(await c.check(), { leaks: [], problems: [] });
      }),
    );

    it(
      'GC releases only this node’s handles of this network that are not kept',
      withStore(async (s) => {
        const c = ipam(s);
        await twoPools(c);
        const mk = (node: string, net: string, id: string) =>
          c.assign({ node, handle: `${net}.${id}.eth0`, auto: { 4: 1 }, attrs: { network: net, containerId: id, ifname: 'eth0' } });
        await mk('n', 'net', 'keep');
        await mk('n', 'net', 'gone');
        await mk('n', 'other', 'gone');
        await mk('m', 'net', 'gone2');
        const r = await ipam(s).gcNode('n', 'net', new Set(['net.keep.eth0']));
        assert.deepEqual(
          r.released.map((x) => x.handle),
          ['net.gone.eth0'],
        );
        assert.deepEqual(r.failed, []);
        for (const h of ['net.keep.eth0', 'other.gone.eth0', 'net.gone2.eth0']) assert.ok(await s.get(handleKey(h)), h);
      }),
    );
  });

  describe(`ClusterIpam on ${kind}: pools`, () => {
    it(
      'validates and refuses duplicates and overlaps',
      withStore(async (s) => {
        const c = ipam(s);
        await twoPools(c);
        await assert.rejects(c.createPool({ name: 'v4', cidr: '10.99.0.0/16' }), PoolConflictError);
        await assert.rejects(c.createPool({ name: 'x', cidr: '10.10.128.0/17' }), /overlaps pool "v4" \(10\.10\.0\.0\/16\)/);
        await assert.rejects(c.createPool({ name: 'Bad_Name', cidr: '10.98.0.0/16' }), /invalid pool name "Bad_Name"/);
        await assert.rejects(c.createPool({ name: 'x', cidr: '10.98.0.1/16' }), /invalid pool cidr "10\.98\.0\.1\/16".*host bits/);
        await assert.rejects(c.createPool({ name: 'x', cidr: '10.98.0.0/16', blockSize: 19 }), /'blockSize' 19/);
        await assert.rejects(c.createPool({ name: 'x', cidr: '169.254.0.0/20' }), /link-local/);
        await assert.rejects(c.createPool({ name: 'x', cidr: '10.98.0.0/16', nodeSelector: 'zone' }), /invalid nodeSelector "zone"/);
        assert.deepEqual(
          (await c.listPools()).map((p) => p.name),
          ['v4', 'v6'],
        );
      }),
    );

    it(
      'refuses to delete a pool in use, then deletes it with its blocks once released',
      withStore(async (s) => {
        const c = ipam(s);
        await twoPools(c);
        for (let i = 0; i < 3; i++) await c.assign({ node: `n${i}`, handle: `h${i}`, auto: 'each-family' });
        await assert.rejects(c.deletePool('v4'), (e: unknown) => e instanceof PoolInUseError && e.allocated === 3);
        assert.equal((await c.listPools()).find((p) => p.name === 'v4')!.deleting, false);
        for (let i = 0; i < 3; i++) await c.releaseHandle(`h${i}`, `n${i}`);
        await c.deletePool('v4');
        assert.deepEqual(
          (await c.listPools()).map((p) => p.name),
          ['v6'],
        );
        const left = (await s.list(BLOCK_PREFIX)).map((e) => JSON.parse(e.value).cidr as string);
        assert.ok(
          left.every((cidr) => cidr.includes(':')),
          `only v6 blocks left: ${left}`,
        );
        assert.ok((await s.list(AFFINITY_PREFIX)).every((e) => e.key.includes(':')));
        assert.deepEqual(await c.check(), { leaks: [], problems: [] });
        await assert.rejects(c.deletePool('v4'), /pool "v4" does not exist/);
      }),
    );
  });

  describe(`ClusterIpam on ${kind}: ipam check`, () => {
    it(
      'reports leaks, dangling handles, count mismatches, missing affinities and nodes, corrupt records',
      withStore(async (s) => {
        const c = ipam(s);
        await twoPools(c);
        const [a] = await c.assign({ node: 'n1', handle: 'leaky', auto: { 4: 1 } });
        await c.assign({ node: 'n1', handle: 'counted', auto: { 4: 1 } });
        await c.assign({ node: 'n2', handle: 'fine', auto: { 4: 1 } });
        await c.assign({ node: 'n3', handle: 'on-deleted', auto: { 4: 1 } });
        assert.deepEqual(await c.check(), { leaks: [], problems: [] });
        await s.txn([], [{ type: 'delete', key: handleKey('leaky') }]);
        const counted = (await s.get(handleKey('counted')))!;
        const rec = JSON.parse(counted.value);
        for (const k of Object.keys(rec.blocks)) rec.blocks[k] = 5;
        rec.blocks['10.10.255.0/26'] = 1;
        await s.txn([], [{ type: 'put', key: handleKey('counted'), value: JSON.stringify(rec) }]);
        const n2aff = (await s.list(`${AFFINITY_PREFIX}n2/`))[0]!;
        await s.txn(
          [],
          [
            { type: 'delete', key: n2aff.key },
            { type: 'put', key: nodeKey('n1'), value: JSON.stringify({ name: 'n1', labels: {}, podCIDRs: [] }) },
            { type: 'put', key: handleKey('junk'), value: '{not json' },
            // n3's record was deleted (its tombstone says so); n2 never had one
            { type: 'put', key: nodeTombstoneKey('n3'), value: encodeNodeTombstone({ name: 'n3', deletedAt: '2026-01-01T00:00:00.000Z', by: 'cli' }) },
          ],
        );
        const report = await c.check();
        assert.deepEqual(report.leaks, [{ ip: formatAddr(a!.addr), block: formatPrefixOf(a!), handle: 'leaky' }]);
        const kinds = report.problems.map((p) => p.kind).sort();
        assert.deepEqual(kinds, [
          'block-affinity-missing',
          'block-node-deleted',
          'block-node-unregistered',
          'corrupt-record',
          'handle-block-missing',
          'handle-count-mismatch',
        ]);
        assert.match(
          report.problems.find((p) => p.kind === 'block-node-deleted')!.message,
          /node "n3", whose record was deleted \(by cli at 2026-01-01T00:00:00\.000Z\): cluster GC releases/,
        );
        assert.match(
          report.problems.find((p) => p.kind === 'block-node-unregistered')!.message,
          /node "n2", which has no record and no proof of deletion: cluster GC will not free it.*podipam node add n2.*podipam node delete n2 --gone/,
        );
        const msg = report.problems.find((p) => p.kind === 'handle-count-mismatch')!.message;
        assert.match(msg, /handle "counted" counts 5 address\(es\) in block 10\.10\.\d+\.\d+\/26, the block holds 1/);
        // Repair: releasing the leaked address by address clears the leak.
        await c.releaseAddresses([a!.addr]);
        assert.deepEqual((await c.check()).leaks, []);
      }),
    );
  });

  describe(`ClusterIpam on ${kind}: crash safety`, () => {
    it(
      'recovers from a crash at every round trip of an ADD (before or after the write lands)',
      withStore(async (s) => {
        await twoPools(ipam(s));
        await ipam(s).assign({ node: 'n', handle: 'warm', auto: 'each-family' });
        for (const landed of [false, true]) {
          for (let k = 1; k <= 8; k++) {
            const crashing = crashAfter(s, k, landed);
            const h = `c${k}${landed ? 'L' : ''}`;
            await ipam(crashing)
              .assign({ node: 'n', handle: h, auto: 'each-family' })
              .catch(() => undefined);
            // The runtime retries ADD (idempotent) or DELs; both must leave a clean datastore.
            const again = await ipam(s).assign({ node: 'n', handle: h, auto: 'each-family' });
            assert.equal(again.length, 2);
            await ipam(s).releaseHandle(h, 'n');
            assert.deepEqual(await ipam(s).check(), { leaks: [], problems: [] }, `crash after ${k} (landed=${landed})`);
          }
        }
        const all = await ipam(s).usage();
        assert.deepEqual(
          all.pools.map((p) => p.allocated),
          [1, 1],
        );
      }),
    );
  });

  describe(`ClusterIpam on ${kind}: random operations keep every invariant (seeded)`, () => {
    it(
      'never hands one address to two handles and check stays clean',
      withStore(async (s) => {
        const rnd = prng(7);
        const c = ipam(s);
        await c.createPool({ name: 'p4', cidr: '10.120.0.0/26', blockSize: 29 });
        await c.createPool({ name: 'p6', cidr: 'fd00:120::/120', blockSize: 124 });
        const live = new Map<string, Addr[]>();
        const nodes = ['a', 'b', 'c'];
        const clients = nodes.map(() => ipam(s));
        for (let i = 0; i < 150; i++) {
          const n = Math.floor(rnd() * 3);
          const op = rnd();
          if (op < 0.55) {
            try {
              const got = await clients[n]!.assign({ node: nodes[n]!, handle: `h${i}`, auto: 'each-family' });
              live.set(
                `h${i}`,
                got.map((g) => g.addr),
              );
            } catch (e) {
              assert.ok(e instanceof PoolExhaustedError, String(e));
            }
          } else if (op < 0.85 && live.size > 0) {
            const h = [...live.keys()][Math.floor(rnd() * live.size)]!;
            await clients[n]!.releaseHandle(h, nodes[n]);
            live.delete(h);
          } else if (live.size > 0) {
            const h = [...live.keys()][Math.floor(rnd() * live.size)]!;
            const addrs = live.get(h)!;
            await clients[n]!.releaseAddresses([addrs[0]!]);
            if (addrs.length === 1) live.delete(h);
            else live.set(h, addrs.slice(1));
          }
          const texts = [...live.values()].flat().map(formatAddr);
          assert.equal(new Set(texts).size, texts.length, `step ${i}: duplicate address`);
        }
        assert.deepEqual(await c.check(), { leaks: [], problems: [] });
        const u = await c.usage();
        assert.equal(
          u.pools.reduce((n, p) => n + p.allocated, 0),
          [...live.values()].flat().length,
        );
      }),
    );
  });
}
