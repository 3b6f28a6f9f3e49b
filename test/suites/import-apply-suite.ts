/**
 * The import applier (src/import/apply-import-plan.ts) on one store back end: written as the
 * plan says (pools, blocks with and without affinity, a dual-stack handle spanning two blocks,
 * a node-held address), `ipam check` clean, a re-run writes nothing (the revision does not
 * move), a dry run reports what the real run does and writes nothing, conflicts against the
 * store (address held, block size, overlap, outside every pool) refuse the whole plan unless
 * skipConflicts, a race on a block between check and write is caught by the compares, new
 * ADDs never get an imported address, and a node's GC frees its node-held address only on
 * proof the node is gone. src/import/apply-import-plan.test.ts runs it on memory: and SQLite,
 * test/e2e/import-apply-etcd.test.ts on etcd.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterIpam } from '../../src/cluster/index.js';
import { blockKey } from '../../src/cluster/records/keys.js';
import { applyImportPlan } from '../../src/import/apply-import-plan.js';
import type { ImportPlan, ImportedAddress, ImportedHolder } from '../../src/import/import-plan.js';
import { formatAddr, parseAddr, parsePrefix } from '../../src/ip/index.js';
import { cniHandleId } from '../../src/model/handle-id.js';
import { encodeNodeTombstone, nodeTombstoneKey } from '../../src/model/node-tombstone.js';
import type { Store } from '../../src/store/index.js';

const NET = 'podnet';

function pod(containerId: string, ns: string, name: string, node?: string): ImportedHolder {
  return {
    kind: 'pod',
    handle: cniHandleId(NET, containerId, 'eth0'),
    network: NET,
    containerId,
    ifname: 'eth0',
    namespace: ns,
    pod: name,
    sourceHandle: containerId,
    ...(node ? { node } : {}),
  };
}

function at(ip: string, pool: string, block: string, holder: ImportedHolder): ImportedAddress {
  return { ip, pool, block, holder };
}

const web = pod('c-web', 'default', 'web', 'node-a');
const db = pod('c-db', 'prod', 'db', 'node-b');
const job = pod('c-job', 'batch', 'job');
const tunnel: ImportedHolder = { kind: 'node', handle: 'ipip-tunnel-addr-node-a', node: 'node-a', sourceHandle: 'ipip-tunnel-addr-node-a' };

/** Two pools; web dual-stack in node-a's blocks, db in node-b's, job in an unaffine block, node-a's tunnel address. */
export function samplePlan(): ImportPlan {
  return {
    source: 'calico-kdd',
    pools: [
      { name: 'v4', cidr: '10.20.0.0/24', blockSize: 26, nodeSelector: 'all()', disabled: false, source: 'test v4' },
      { name: 'v6', cidr: 'fd20::/120', blockSize: 122, nodeSelector: 'all()', disabled: false, source: 'test v6' },
    ],
    blocks: [
      { cidr: '10.20.0.0/26', pool: 'v4', affinity: 'node-a' },
      { cidr: '10.20.0.64/26', pool: 'v4', affinity: 'node-b' },
      { cidr: '10.20.0.128/26', pool: 'v4', affinity: null },
      { cidr: 'fd20::/122', pool: 'v6', affinity: 'node-a' },
    ],
    addresses: [
      at('10.20.0.5', 'v4', '10.20.0.0/26', web),
      at('fd20::5', 'v6', 'fd20::/122', web),
      at('10.20.0.1', 'v4', '10.20.0.0/26', tunnel),
      at('10.20.0.70', 'v4', '10.20.0.64/26', db),
      at('10.20.0.130', 'v4', '10.20.0.128/26', job),
    ],
    conflicts: [],
  };
}

/** Release results as text (their cidr is a Prefix with a bigint). */
function show(rs: readonly { readonly node?: string; readonly released: boolean; readonly unproven: boolean }[]): string {
  return JSON.stringify(rs.map((r) => [r.node, r.released, r.unproven]));
}

async function snapshot(store: Store): Promise<string> {
  const { listAll } = await import('../../src/store/index.js');
  return JSON.stringify((await listAll(store, '')).filter((e) => !e.key.startsWith('stamps/')).map((e) => [e.key, e.value]));
}

export function importApplySuite(name: string, open: () => Promise<Store>): void {
  const withStore = async (fn: (store: Store, ipam: ClusterIpam) => Promise<void>): Promise<void> => {
    const store = await open();
    try {
      await fn(store, new ClusterIpam(store, { writer: 'test' }));
    } finally {
      await store.close();
    }
  };

  test(`${name}: import writes the plan; check clean; re-run writes nothing`, () =>
    withStore(async (store, ipam) => {
      const o = await applyImportPlan(store, samplePlan());
      assert.deepEqual(o.conflicts, []);
      assert.deepEqual(o.poolsCreated, ['v4', 'v6']);
      assert.deepEqual(o.blocksWritten, ['10.20.0.0/26', '10.20.0.64/26', '10.20.0.128/26', 'fd20::/122']);
      assert.equal(o.adopted, 5);
      assert.equal(o.already, 0);
      assert.equal(o.wroteNothing, false);
      const report = await ipam.check();
      assert.deepEqual(report.leaks, []);
      assert.deepEqual(report.problems, []);
      // The dual-stack handle holds both, listing both blocks.
      const held = await ipam.addressesOf(web.handle);
      assert.deepEqual(held?.map((a) => formatAddr(a.addr)).sort(), ['10.20.0.5', 'fd20::5']);
      const rec = JSON.parse((await store.get(`handles/${web.handle}`))!.value) as Record<string, unknown>;
      assert.deepEqual(rec, {
        node: 'node-a',
        network: NET,
        containerId: 'c-web',
        ifname: 'eth0',
        namespace: 'default',
        pod: 'web',
        blocks: { '10.20.0.0/26': 1, 'fd20::/122': 1 },
      });
      // The node-held address: its node, no pod.
      const t = JSON.parse((await store.get(`handles/${tunnel.handle}`))!.value) as Record<string, unknown>;
      assert.deepEqual(t, { node: 'node-a', blocks: { '10.20.0.0/26': 1 } });
      // Affinities as planned; the unaffine block has none and no affinity key.
      const blocks = await Promise.all(
        ['10.20.0.0/26', '10.20.0.64/26', '10.20.0.128/26'].map(
          async (c) => JSON.parse((await store.get(blockKey(parsePrefix(c))))!.value) as { affinity: string | null },
        ),
      );
      assert.deepEqual(
        blocks.map((b) => b.affinity),
        ['node-a', 'node-b', null],
      );
      assert.ok(await store.get('affinities/node-a/10.20.0.0-26'));
      assert.ok(await store.get('affinities/node-b/10.20.0.64-26'));
      assert.equal((await store.list('affinities/')).length, 3);
      // Stamped as the CLI's, for an import.
      const stamp = JSON.parse((await store.get('stamps/cli'))!.value) as { why?: string };
      assert.equal(stamp.why, 'import');

      const rev = await store.revision();
      const again = await applyImportPlan(store, samplePlan());
      assert.deepEqual(again, { conflicts: [], poolsCreated: [], blocksWritten: [], adopted: 0, already: 5, skipped: 0, wroteNothing: true });
      assert.equal(await store.revision(), rev, 're-run wrote something');
    }));

  test(`${name}: a dry run reports what the real run does and writes nothing`, () =>
    withStore(async (store, ipam) => {
      await ipam.createPool({ name: 'v4', cidr: '10.20.0.0/24', blockSize: 26 });
      const before = await snapshot(store);
      const rev = await store.revision();
      const dry = await applyImportPlan(store, samplePlan(), { dryRun: true });
      assert.equal(await store.revision(), rev);
      assert.equal(await snapshot(store), before);
      assert.equal(dry.wroteNothing, true);
      const real = await applyImportPlan(store, samplePlan());
      assert.deepEqual({ ...dry, wroteNothing: false }, real);
      assert.deepEqual(real.poolsCreated, ['v6']);
    }));

  test(`${name}: conflicts against the store refuse the plan; --skip-conflicts writes the rest`, () =>
    withStore(async (store, ipam) => {
      await ipam.createPool({ name: 'v4', cidr: '10.20.0.0/24', blockSize: 26 });
      await ipam.createPool({ name: 'other', cidr: '10.30.0.0/24', blockSize: 26 });
      // Another pod already holds db's address in podipam.
      const squatter = cniHandleId(NET, 'c-other', 'eth0');
      await ipam.assign({ node: 'node-c', handle: squatter, attrs: { namespace: 'ns1', pod: 'other' }, ips: [parseAddr('10.20.0.70')] });
      const plan: ImportPlan = {
        ...samplePlan(),
        pools: [
          ...samplePlan().pools,
          { name: 'wide', cidr: '10.30.0.0/16', blockSize: 26, nodeSelector: 'all()', disabled: false, source: 'test overlap' },
          { name: 'small-blocks', cidr: '10.20.0.0/24', blockSize: 28, nodeSelector: 'all()', disabled: false, source: 'test size' },
        ],
        addresses: [...samplePlan().addresses, at('10.99.0.1', 'v4', '10.99.0.0/26', pod('c-lost', 'default', 'lost'))],
      };
      const rev = await store.revision();
      const refused = await applyImportPlan(store, plan);
      assert.equal(await store.revision(), rev, 'a refused import wrote');
      assert.equal(refused.wroteNothing, true);
      assert.deepEqual(
        refused.conflicts.map((c) => [c.kind, c.subject]),
        [
          ['pool-overlap', 'wide'],
          ['block-size', 'small-blocks'],
          ['address-held', '10.20.0.70'],
          ['invalid', '10.99.0.1'],
        ],
      );
      const held = refused.conflicts.find((c) => c.kind === 'address-held')!;
      assert.match(held.detail, /pod ns1\/other/);
      assert.match(held.detail, /prod\/db/);
      assert.equal(refused.skipped, 6);

      const o = await applyImportPlan(store, plan, { skipConflicts: true });
      assert.equal(o.conflicts.length, 4);
      assert.equal(o.adopted, 4);
      assert.equal(o.skipped, 2);
      assert.deepEqual(o.poolsCreated, ['v6']);
      const holder = await ipam.holderOfAddress(parseAddr('10.20.0.70'));
      assert.equal(holder?.handle, squatter, 'the held address changed hands');
      assert.equal(await ipam.addressesOf(db.handle), undefined);
      const report = await ipam.check();
      assert.deepEqual([report.leaks, report.problems], [[], []]);
    }));

  test(`${name}: an address podipam released within its pool's reuseAfter is not given to an imported holder (a 'quarantined' conflict)`, () =>
    withStore(async (store, ipam) => {
      await ipam.createPool({ name: 'v4', cidr: '10.20.0.0/24', blockSize: 26, reuseAfter: '5m' });
      const before = cniHandleId(NET, 'c-before', 'eth0');
      await ipam.assign({ node: 'node-b', handle: before, ips: [parseAddr('10.20.0.70')] });
      await ipam.releaseHandle(before, 'node-b');
      const o = await applyImportPlan(store, samplePlan(), { skipConflicts: true });
      const q = o.conflicts.filter((c) => c.kind === 'quarantined');
      assert.deepEqual(
        q.map((c) => c.subject),
        ['10.20.0.70'],
      );
      assert.match(q[0]!.detail, /released in podipam recently and is quarantined until \d{4}-.*\(pool "v4" reuseAfter\)/);
      assert.equal(await ipam.holderOfAddress(parseAddr('10.20.0.70')), undefined, 'not held by the import');
      assert.equal((await ipam.holderOfAddress(parseAddr('10.20.0.5')))?.handle, web.handle, 'the rest is imported');
      const report = await ipam.check();
      assert.deepEqual([report.leaks, report.problems], [[], []]);
    }));

  test(`${name}: a dry run reports a quarantined address with the real run's message; the real run without --skip-conflicts then refuses and writes nothing`, () =>
    withStore(async (store, ipam) => {
      await ipam.createPool({ name: 'v4', cidr: '10.20.0.0/24', blockSize: 26, reuseAfter: '5m' });
      const before = cniHandleId(NET, 'c-before', 'eth0');
      await ipam.assign({ node: 'node-b', handle: before, ips: [parseAddr('10.20.0.70')] });
      await ipam.releaseHandle(before, 'node-b');
      const rev = await store.revision();
      const dry = await applyImportPlan(store, samplePlan(), { dryRun: true });
      const real = await applyImportPlan(store, samplePlan());
      for (const o of [dry, real]) {
        assert.deepEqual(
          o.conflicts.filter((c) => c.kind === 'quarantined').map((c) => c.subject),
          ['10.20.0.70'],
        );
        assert.equal(o.wroteNothing, true);
        assert.deepEqual(o.blocksWritten, []);
      }
      assert.equal(
        dry.conflicts.find((c) => c.kind === 'quarantined')!.detail.replace(/until \S+/, 'until T'),
        real.conflicts.find((c) => c.kind === 'quarantined')!.detail.replace(/until \S+/, 'until T'),
      );
      assert.match(
        dry.conflicts.find((c) => c.kind === 'quarantined')!.detail,
        /released in podipam recently and is quarantined until \d{4}-.*\(pool "v4" reuseAfter\)/,
      );
      assert.equal(await store.revision(), rev, 'nothing written');
      assert.equal(await ipam.holderOfAddress(parseAddr('10.20.0.5')), undefined, 'the refused run imported nothing');
    }));

  test(`${name}: a block changed between check and write is re-read (compare-and-swap), never overwritten`, () =>
    withStore(async (store) => {
      const ipam = new ClusterIpam(store, { writer: 'test' });
      let raced = false;
      // Before the import's first txn on block 10.20.0.64/26, another writer takes db's address.
      const racing: Store = new Proxy(store, {
        get(target, prop, receiver) {
          if (prop === 'txn') {
            return async (compares: Parameters<Store['txn']>[0], ops: Parameters<Store['txn']>[1]) => {
              if (!raced && compares.some((c) => c.key === 'blocks/10.20.0.64-26')) {
                raced = true;
                await ipam.assign({ node: 'node-c', handle: 'racer', attrs: { namespace: 'ns1', pod: 'racer' }, ips: [parseAddr('10.20.0.70')] });
              }
              return target.txn(compares, ops);
            };
          }
          const v = Reflect.get(target, prop, receiver) as unknown;
          return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        },
      });
      const o = await applyImportPlan(racing, samplePlan());
      assert.ok(raced);
      assert.deepEqual(
        o.conflicts.map((c) => [c.kind, c.subject]),
        [['address-held', '10.20.0.70']],
      );
      assert.match(o.conflicts[0]!.detail, /pod ns1\/racer/);
      assert.equal(o.adopted, 4);
      assert.equal((await ipam.holderOfAddress(parseAddr('10.20.0.70')))?.handle, 'racer');
      const report = await ipam.check();
      assert.deepEqual([report.leaks, report.problems], [[], []]);
    }));

  test(`${name}: new ADDs never get an imported address; nodes do not claim the unaffine block`, () =>
    withStore(async (store, ipam) => {
      // A pool of four /28 blocks: node-a's (imported), an unaffine one (imported), two free.
      const plan: ImportPlan = {
        source: 'whereabouts',
        pools: [{ name: 'tiny', cidr: '10.40.0.0/26', blockSize: 28, nodeSelector: 'all()', disabled: false, source: 'test' }],
        blocks: [
          { cidr: '10.40.0.0/28', pool: 'tiny', affinity: 'node-a' },
          { cidr: '10.40.0.16/28', pool: 'tiny', affinity: null },
        ],
        addresses: [
          at('10.40.0.2', 'tiny', '10.40.0.0/28', pod('c1', 'd', 'p1', 'node-a')),
          at('10.40.0.3', 'tiny', '10.40.0.0/28', pod('c2', 'd', 'p2', 'node-a')),
          at('10.40.0.17', 'tiny', '10.40.0.16/28', pod('c3', 'd', 'p3')),
          at('10.40.0.20', 'tiny', '10.40.0.16/28', pod('c4', 'd', 'p4')),
        ],
        conflicts: [],
      };
      assert.equal((await applyImportPlan(store, plan)).adopted, 4);
      const imported = new Set(plan.addresses.map((a) => a.ip));
      const got: string[] = [];
      for (let i = 0; ; i++) {
        try {
          const a = await ipam.assign({ node: i % 2 ? 'node-a' : 'node-b', handle: `new-${i}`, auto: { 4: 1 } });
          got.push(formatAddr(a[0]!.addr));
        } catch (e) {
          assert.equal((e as Error).name, 'PoolExhaustedError', String(e));
          break;
        }
        assert.ok(i < 100, 'the pool never ran out');
      }
      assert.ok(got.length > 10, `only ${got.length} addresses handed out`);
      assert.deepEqual(
        got.filter((ip) => imported.has(ip)),
        [],
        'an imported address was handed out again',
      );
      assert.equal(new Set(got).size, got.length);
      // The unaffine block stayed unaffine (it may lend free addresses, never be claimed).
      const b = JSON.parse((await store.get('blocks/10.40.0.16-28'))!.value) as { affinity: string | null };
      assert.equal(b.affinity, null);
      const report = await ipam.check();
      assert.deepEqual([report.leaks, report.problems], [[], []]);
    }));

  test(`${name}: a node-held address is released by GC only once the node is proven gone`, () =>
    withStore(async (store, ipam) => {
      await applyImportPlan(store, samplePlan());
      const report = await ipam.check();
      assert.deepEqual([report.leaks, report.problems], [[], []], 'a node-held address counted as a leak or problem');
      // No tombstone: the node is not proven gone, nothing is released.
      const unproven = await ipam.releaseDeletedNode('node-a');
      assert.ok(unproven.length > 0 && unproven.every((r) => r.unproven && !r.released), show(unproven));
      assert.equal((await ipam.holderOfAddress(parseAddr('10.20.0.1')))?.handle, tunnel.handle);
      // Proven gone (its tombstone, no record): its tunnel address and its pods' go, other nodes' stay.
      await store.txn(
        [],
        [{ type: 'put', key: nodeTombstoneKey('node-a'), value: encodeNodeTombstone({ name: 'node-a', deletedAt: new Date().toISOString(), by: 'cli' }) }],
      );
      const released = await ipam.releaseDeletedNode('node-a');
      assert.ok(
        released.every((r) => r.released),
        show(released),
      );
      assert.equal(await ipam.holderOfAddress(parseAddr('10.20.0.1')), undefined);
      assert.equal(await ipam.addressesOf(tunnel.handle), undefined);
      assert.equal((await ipam.holderOfAddress(parseAddr('10.20.0.70')))?.handle, db.handle);
    }));
}
