/**
 * The cluster service suite, part 1 (assignment, limits and failures), run against every store
 * back end by cluster-ipam.test.ts. Each test opens a fresh, empty store.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { blockAt, blockProbeOrder } from '../../src/alloc/block-layout.js';
import { formatAddr, parseAddr, parsePrefix, prefixContains } from '../../src/ip/index.js';
import type { Store } from '../../src/store/index.js';
import { nodeKey } from '../../src/model/node-record.js';
import { ClusterIpam } from '../../src/cluster/service/cluster-ipam.js';
import { AddressUnavailableError, ContentionError, NoPoolError, PoolExhaustedError } from '../../src/cluster/records/errors.js';
import { AFFINITY_PREFIX, BLOCK_PREFIX, handleKey } from '../../src/cluster/records/keys.js';
import { ViewCache } from '../../src/cluster/views/view-cache.js';
import { MAX_CLAIM_MISSES } from '../../src/cluster/plan/plan-assign.js';
import { ipam, text, twoPools, withStoreOf } from './cluster-suite-helpers.js';

export function clusterServiceSuite(kind: string, open: () => Promise<Store>): void {
  const withStore = withStoreOf(open);

  describe(`ClusterIpam on ${kind}: assignment`, () => {
    it(
      'refuses only on fresh data: an address released by another instance can be assigned by name',
      withStore(async (s) => {
        const a = ipam(s);
        const b = ipam(s);
        await twoPools(a);
        const [first] = await a.assign({ node: 'n1', handle: 'h1', auto: { 4: 1 } });
        // Another process (the CLI, GC) releases it: a's hints still say "held by h1".
        await b.releaseAddresses([first!.addr]);
        const again = await a.assign({ node: 'n1', handle: 'h2', ips: [first!.addr] });
        assert.equal(formatAddr(again[0]!.addr), formatAddr(first!.addr));
        // The same instance releasing and re-assigning works too.
        await a.releaseAddresses([first!.addr]);
        assert.equal(formatAddr((await a.assign({ node: 'n1', handle: 'h3', ips: [first!.addr] }))[0]!.addr), formatAddr(first!.addr));
      }),
    );

    it(
      'gives one address per family from node-affine blocks, with the block prefix length and gateway',
      withStore(async (s) => {
        const c = ipam(s);
        await twoPools(c);
        const got = await c.assign({ node: 'n1', handle: 'net.c1.eth0', auto: 'each-family', attrs: { network: 'net' } });
        assert.deepEqual(
          text(got).map((t) => t.split('/')[1]),
          ['26', '122'],
        );
        assert.equal(got[0]!.addr.family, 4);
        assert.equal(got[1]!.addr.family, 6);
        assert.equal(got[0]!.block.len, 26);
        assert.equal(got[1]!.block.len, 122);
        for (const a of got) {
          assert.deepEqual(a.gateway, { family: a.block.family, value: a.block.base + 1n });
          assert.equal(a.addr.value - a.block.base, 2n, 'a fresh block hands out its ordinal 2 first');
        }
        const blocks = await s.list(BLOCK_PREFIX);
        assert.equal(blocks.length, 2);
        for (const b of blocks) assert.equal(JSON.parse(b.value).affinity, 'n1');
        const affs = await s.list(`${AFFINITY_PREFIX}n1/`);
        assert.deepEqual(
          affs.map((a) => JSON.parse(a.value).state),
          ['confirmed', 'confirmed'],
        );
        const h = JSON.parse((await s.get(handleKey('net.c1.eth0')))!.value);
        assert.equal(h.node, 'n1');
        assert.equal(h.network, 'net');
        assert.deepEqual(Object.values(h.blocks), [1, 1]);
      }),
    );

    it(
      'costs ONE round trip per assignment and per release in the steady state',
      withStore(async (s) => {
        const c = ipam(s);
        await twoPools(c);
        await c.assign({ node: 'n1', handle: 'h0', auto: 'each-family' });
        const per: number[] = [];
        for (let i = 1; i <= 20; i++) {
          const before = s.roundTrips;
          await c.assign({ node: 'n1', handle: `h${i}`, auto: 'each-family' });
          per.push(s.roundTrips - before);
        }
        assert.deepEqual(per, new Array(20).fill(1));
        const before = s.roundTrips;
        await c.releaseHandle('h5', 'n1');
        assert.equal(s.roundTrips - before, 1);
      }),
    );

    it(
      'keeps the steady state at one round trip across processes with saved hints',
      withStore(async (s) => {
        await twoPools(ipam(s));
        let saved = '';
        const per: number[] = [];
        for (let i = 0; i < 6; i++) {
          const cache = new ViewCache();
          if (saved) cache.restore('n1', saved);
          const c = new ClusterIpam(s, { cache });
          const before = s.roundTrips;
          await c.assign({ node: 'n1', handle: `h${i}`, auto: 'each-family' });
          per.push(s.roundTrips - before);
          saved = cache.save('n1');
        }
        assert.ok(per[0]! > 1, 'the first run reads pools and claims blocks');
        assert.deepEqual(per.slice(1), [1, 1, 1, 1, 1]);
      }),
    );

    it(
      'a release by handle on stale block hints (another process allocated there since) frees the address: no leak',
      withStore(async (s) => {
        const a = ipam(s);
        await twoPools(a);
        await a.assign({ node: 'n1', handle: 'h1', auto: 'each-family' }); // a's hints: n1's blocks as of now
        // Another plugin process on n1 (killed before it saved its hints) allocates in the same blocks.
        const b = ipam(s);
        const h2 = await b.assign({ node: 'n1', handle: 'h2', auto: 'each-family' });
        // The runtime's DEL lands on a process with a's older hints: they do not show h2's addresses.
        const released = await a.releaseHandle('h2', 'n1');
        assert.deepEqual(released.map((r) => formatAddr(r.addr)).sort(), h2.map((x) => formatAddr(x.addr)).sort());
        assert.deepEqual(await ipam(s).check(), { leaks: [], problems: [] });
        assert.equal(
          (await ipam(s).usage()).pools.reduce((n, p) => n + p.allocated, 0),
          2,
          'only h1 holds addresses',
        );
      }),
    );

    it(
      'returns what a handle holds when asked again, from a warm and from a cold instance',
      withStore(async (s) => {
        const c = ipam(s);
        await twoPools(c);
        const first = await c.assign({ node: 'n1', handle: 'h', auto: 'each-family' });
        assert.deepEqual(text(await c.assign({ node: 'n1', handle: 'h', auto: 'each-family' })), text(first));
        assert.deepEqual(text(await ipam(s).assign({ node: 'n1', handle: 'h', auto: 'each-family' })), text(first));
        assert.equal(
          (await c.usage()).pools.reduce((n, p) => n + p.allocated, 0),
          2,
        );
      }),
    );

    it(
      'hands out distinct addresses to concurrent requests on several nodes, each from its own blocks',
      withStore(async (s) => {
        await ipam(s).createPool({ name: 'v4', cidr: '10.20.0.0/16' });
        const nodes = ['a', 'b', 'c', 'd'];
        // Two clients per node, each with its own hints, so they race on the same blocks.
        const clients = [...nodes, ...nodes].map(() => ipam(s));
        const results = await Promise.all(
          Array.from({ length: 160 }, (_, i) =>
            clients[i % 8]!.assign({ node: nodes[i % 4]!, handle: `p${i}`, auto: { 4: 1 } }).then((r) => ({ node: nodes[i % 4]!, a: r[0]! })),
          ),
        );
        const all = results.map((r) => formatAddr(r.a.addr));
        assert.equal(new Set(all).size, 160);
        const blocks = new Map((await s.list(BLOCK_PREFIX)).map((e) => [JSON.parse(e.value).cidr as string, JSON.parse(e.value).affinity as string]));
        for (const r of results) {
          const owner = [...blocks].find(([cidr]) => prefixContains(parsePrefix(cidr), r.a.addr));
          assert.equal(owner?.[1], r.node, `${formatAddr(r.a.addr)} of node ${r.node}`);
        }
        const report = await ipam(s).check();
        assert.deepEqual(report, { leaks: [], problems: [] });
      }),
    );

    it(
      'after MAX_CLAIM_MISSES failed claims lists the claimed CIDRs once and claims a free block',
      withStore(async (s) => {
        const c = ipam(s);
        await c.createPool({ name: 'p', cidr: '10.40.0.0/24', blockSize: 28 });
        const order = [...blockProbeOrder(16n, 'x/p')].map((i) => blockAt(parsePrefix('10.40.0.0/24'), 28, i));
        // Other nodes hold the first MAX_CLAIM_MISSES + 2 blocks of x's probe order.
        const held = MAX_CLAIM_MISSES + 2;
        for (let i = 0; i < held; i++) await c.assign({ node: `o${i}`, handle: `o${i}`, ips: [{ family: 4, value: order[i]!.base + 2n }] });
        const fresh = ipam(s);
        const before = s.roundTrips;
        const [got] = await fresh.assign({ node: 'x', handle: 'hx', auto: { 4: 1 } });
        assert.ok(prefixContains(order[held]!, got!.addr), `claimed ${formatAddr(got!.addr)}, the first free block of the probe order`);
        // snapshot (config, then pools, reservations and ip-sets: 4) + x's affinities (1) + the failed claims + 1 list of affinities + the claim.
        assert.equal(s.roundTrips - before, 4 + 1 + MAX_CLAIM_MISSES + 1 + 1);
        // x's next block: its probe resumes past the block it holds, so neither the blocks it
        // failed on nor the two it learned only from the list (not kept) are tried again.
        const next = s.roundTrips;
        const more = await fresh.assign({ node: 'x', handle: 'hx2', auto: { 4: 16 } });
        assert.equal(s.roundTrips - next, 1, 'the claim alone, not misses on the blocks before it nor a list');
        assert.ok(
          more.some((a) => prefixContains(order[held + 1]!, a.addr)),
          'the next free block of the probe order',
        );
        assert.deepEqual(await c.check(), { leaks: [], problems: [] });
      }),
    );

    it(
      'does not reuse a just-released address for the next pod',
      withStore(async (s) => {
        const c = ipam(s);
        await c.createPool({ name: 'v4', cidr: '10.30.0.0/24' });
        const a = await c.assign({ node: 'n', handle: 'a', auto: { 4: 1 } });
        await c.releaseHandle('a', 'n');
        const b = await c.assign({ node: 'n', handle: 'b', auto: { 4: 1 } });
        assert.notEqual(formatAddr(b[0]!.addr), formatAddr(a[0]!.addr));
      }),
    );
  });

  describe(`ClusterIpam on ${kind}: limits and failures`, () => {
    it(
      'reports an exhausted pool with its data and writes nothing',
      withStore(async (s) => {
        const c = ipam(s);
        await c.createPool({ name: 'tiny', cidr: '10.40.0.0/28', blockSize: 30 });
        // Four /30 blocks, one usable address each (.2 of each block).
        const got: string[] = [];
        for (let i = 0; i < 4; i++) got.push(...text(await c.assign({ node: 'n', handle: `h${i}`, auto: { 4: 1 } })));
        assert.deepEqual(got.sort(), ['10.40.0.10/30', '10.40.0.14/30', '10.40.0.2/30', '10.40.0.6/30']);
        const rev = (await s.txn([], [])).rev;
        await assert.rejects(c.assign({ node: 'n', handle: 'x', auto: { 4: 1 } }), (e: unknown) => {
          assert.ok(e instanceof PoolExhaustedError);
          assert.equal(e.family, 4);
          assert.equal(e.node, 'n');
          assert.deepEqual(e.pools, ['tiny']);
          assert.equal(e.requested, 1);
          assert.equal(e.available, 0);
          return true;
        });
        assert.equal((await s.txn([], [])).rev, rev, 'nothing was written');
        assert.equal(await s.get(handleKey('x')), undefined);
      }),
    );

    it(
      'is all-or-nothing across families: a full IPv6 pool leaves no IPv4 address behind',
      withStore(async (s) => {
        const c = ipam(s);
        await c.createPool({ name: 'v4', cidr: '10.50.0.0/24' });
        await c.createPool({ name: 'v6', cidr: 'fd00:50::/126', blockSize: 126 });
        for (let i = 0; i < 2; i++) await c.assign({ node: 'n', handle: `h${i}`, auto: { 6: 1 } }); // ::2 and ::3
        await assert.rejects(c.assign({ node: 'n', handle: 'dual', auto: 'each-family' }), PoolExhaustedError);
        const u = await c.usage();
        assert.equal(u.pools.find((p) => p.name === 'v4')!.allocated, 0);
        assert.equal(await s.get(handleKey('dual')), undefined);
      }),
    );

    it(
      'borrows from another node only without strictAffinity, and honours maxBlocksPerHost',
      withStore(async (s) => {
        const c = ipam(s);
        await c.createPool({ name: 'p', cidr: '10.60.0.0/28', blockSize: 29 }); // two blocks of 5 usable
        await c.updateSettings({ maxBlocksPerHost: 1 });
        for (let i = 0; i < 5; i++) await c.assign({ node: 'a', handle: `a${i}`, auto: { 4: 1 } });
        await c.assign({ node: 'b', handle: 'b0', auto: { 4: 1 } });
        const borrowed = await c.assign({ node: 'a', handle: 'a5', auto: { 4: 1 } });
        const bBlock = (await s.list(BLOCK_PREFIX)).map((e) => JSON.parse(e.value)).find((b) => b.affinity === 'b');
        assert.ok(prefixContains(parsePrefix(bBlock.cidr), borrowed[0]!.addr), 'borrowed from b');
        await c.updateSettings({ strictAffinity: true });
        await assert.rejects(c.assign({ node: 'a', handle: 'a6', auto: { 4: 1 } }), (e: unknown) => {
          assert.ok(e instanceof PoolExhaustedError);
          assert.match(e.message, /per-host limit is 1/);
          return true;
        });
        assert.deepEqual(await c.check(), { leaks: [], problems: [] });
      }),
    );

    it(
      'assigns specific addresses and refuses taken, reserved, foreign, disabled and pool-less ones',
      withStore(async (s) => {
        const c = ipam(s);
        await twoPools(c);
        await c.createPool({ name: 'off', cidr: '10.11.0.0/16', disabled: true });
        await c.putReservation('gw', ['10.10.5.1', '10.10.6.0/30']);
        const got = await c.assign({ node: 'n', handle: 'h', ips: [parseAddr('10.10.7.7'), parseAddr('fd00:10::7')] });
        assert.deepEqual(text(got), ['10.10.7.7/26', 'fd00:10::7/122']);
        assert.deepEqual(text(await c.assign({ node: 'n', handle: 'h', ips: [parseAddr('10.10.7.7'), parseAddr('fd00:10::7')] })), text(got));
        const reason = (ip: string, handle = 'other', node = 'n') =>
          c.assign({ node, handle, ips: [parseAddr(ip)] }).then(
            () => 'ok',
            (e: unknown) => (e instanceof AddressUnavailableError ? e.reason : String(e)),
          );
        assert.equal(await reason('10.10.7.7'), 'taken');
        assert.equal(await reason('10.10.5.1'), 'reserved');
        assert.equal(await reason('10.10.6.2'), 'reserved');
        assert.equal(await reason('10.12.0.1'), 'no-pool');
        assert.equal(await reason('10.11.0.1'), 'pool-disabled');
        for (const ip of ['10.10.7.0', '10.10.7.1', '10.10.7.63', 'fd00:10::', 'fd00:10::1']) assert.equal(await reason(ip), 'unusable', ip);
        assert.equal(await reason('fd00:10::3f', 'v6-last'), 'ok', 'IPv6 has no broadcast address');
        // Adopting (import host-local) records an address a pod already uses, whatever it is in its block.
        assert.deepEqual(text(await c.assign({ node: 'n', handle: 'imported', ips: [parseAddr('10.10.7.63')], adopt: true })), ['10.10.7.63/26']);
        await c.updateSettings({ strictAffinity: true });
        assert.equal(await reason('10.10.7.8', 'o2', 'm'), 'foreign-block');
        assert.equal(await s.get(handleKey('other')), undefined);
      }),
    );

    it(
      'skips reserved addresses when auto-assigning',
      withStore(async (s) => {
        const c = ipam(s);
        await c.createPool({ name: 'p', cidr: '10.70.0.0/28', blockSize: 28 });
        await c.putReservation('r', ['10.70.0.0/30', '10.70.0.15']);
        const got: string[] = [];
        for (let i = 0; i < 11; i++) got.push(formatAddr((await c.assign({ node: 'n', handle: `h${i}`, auto: { 4: 1 } }))[0]!.addr));
        assert.ok(!got.some((a) => ['10.70.0.0', '10.70.0.1', '10.70.0.2', '10.70.0.3', '10.70.0.15'].includes(a)));
        await assert.rejects(c.assign({ node: 'n', handle: 'x', auto: { 4: 1 } }), PoolExhaustedError);
      }),
    );

    it(
      'selects pools by node labels and sees label changes on the next assignment',
      withStore(async (s) => {
        const c = ipam(s);
        await c.createPool({ name: 'zone-a', cidr: '10.80.0.0/16', nodeSelector: 'zone=a' });
        await s.txn([], [{ type: 'put', key: nodeKey('n1'), value: JSON.stringify({ name: 'n1', labels: { zone: 'a' }, podCIDRs: [], createdAt: '' }) }]);
        assert.equal((await c.assign({ node: 'n1', handle: 'h1', auto: 'each-family' }))[0]!.pool, 'zone-a');
        await assert.rejects(c.assign({ node: 'n2', handle: 'h2', auto: 'each-family' }), NoPoolError);
        await s.txn([], [{ type: 'put', key: nodeKey('n1'), value: JSON.stringify({ name: 'n1', labels: { zone: 'b' }, podCIDRs: [], createdAt: '' }) }]);
        await assert.rejects(c.assign({ node: 'n1', handle: 'h3', auto: 'each-family' }), /nodeSelector matches/);
      }),
    );

    it(
      'sees pool changes made by another client (the config generation guards cached settings)',
      withStore(async (s) => {
        const a = ipam(s);
        await twoPools(a);
        await a.assign({ node: 'n', handle: 'h1', auto: { 4: 1 } });
        await ipam(s).setPoolDisabled('v4', true);
        await assert.rejects(a.assign({ node: 'n', handle: 'h2', auto: { 4: 1 } }), (e: unknown) => e instanceof NoPoolError && /disabled/.test(e.message));
        await assert.rejects(a.assign({ node: 'n', handle: 'h3', auto: 'each-family', pools: ['nope'] }), /pool "nope" does not exist/);
      }),
    );

    it(
      'gives up with ContentionError when every attempt conflicts',
      withStore(async (s) => {
        await twoPools(ipam(s));
        const slow = ipam(s, 1);
        await slow.assign({ node: 'n', handle: 'h1', auto: { 4: 1 } });
        await ipam(s).assign({ node: 'n', handle: 'h2', auto: { 4: 1 } }); // changes n's block behind slow's back
        await assert.rejects(slow.assign({ node: 'n', handle: 'h3', auto: { 4: 1 } }), (e: unknown) => {
          assert.ok(e instanceof ContentionError);
          assert.equal(e.attempts, 1);
          assert.ok(e.lastConflict.some((k) => k.startsWith(BLOCK_PREFIX)));
          return true;
        });
        // With retries it recovers from the same stale view.
        assert.equal((await ipam(s).assign({ node: 'n', handle: 'h3', auto: { 4: 1 } })).length, 1);
      }),
    );

    it(
      'refuses bad requests naming the field',
      withStore(async (s) => {
        const c = ipam(s);
        await assert.rejects(c.assign({ node: 'bad/node', handle: 'h', auto: { 4: 1 } }), /invalid node name "bad\/node"/);
        await assert.rejects(c.assign({ node: 'n', handle: 'a b', auto: { 4: 1 } }), /invalid handle "a b"/);
        await assert.rejects(c.assign({ node: 'n', handle: 'h', auto: { 4: -1 } }), /'num4' must be an integer from 0 to 32: current value is -1/);
      }),
    );
  });
}
