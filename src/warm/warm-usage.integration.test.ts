/**
 * Idle vs in use per node: the pure counting on hand-made records, then a real warm pool — the
 * agent's WarmService in-process on a real SQLite datastore file, its addresses assigned to the
 * node's warm handles through ClusterIpam and its pod records written behind — read back
 * through GET /api/v1/nodes on a loopback socket and `podipam ipam show`, beside a node without a pool.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClusterServices } from '../agent/cluster-services.js';
import { warmHandleNode, warmHandlePrefix } from './warm-handle.js';
import { parseWarmPodRecordKey, warmPodRecordKey as podRecordKey } from '../model/warm-pod-record.js';

const podRecordNode = (key: string): string | undefined => parseWarmPodRecordKey(key)?.node;
import { WarmService } from './warm-service.js';
import { ClusterIpam } from '../cluster/service/cluster-ipam.js';
import { parsePrefix } from '../ip/index.js';
import { openStore } from '../store/index.js';
import { runCliSync } from '../../test/helpers/plugin.js';
import type { ApiDeps } from '../server/api/api-deps.js';
import { SummaryCache } from '../server/summary/cluster-summary.js';
import { createHttpServer, type HandlerSpec } from '../server/http/http-server.js';
import { hostPolicy } from '../server/http/request-guard.js';
import { Router } from '../server/http/router.js';
import { addReadRoutes } from '../server/api/routes-read.js';
import { idleInBlock, podAddresses } from './warm-usage.js';

describe('warm-usage (pure)', () => {
  it('warm handle and pod record names round-trip, escapes included; other keys are not theirs', () => {
    for (const node of ['n1', 'node-a.example', 'Ünï']) {
      assert.equal(warmHandleNode(`${warmHandlePrefix(node)}r1`), node);
      assert.equal(podRecordNode(podRecordKey(node, 'net:c1:eth0')), node);
    }
    assert.equal(warmHandleNode('net:c1:eth0'), undefined);
    assert.equal(warmHandleNode('podipam-warm:n1'), undefined, 'no refill part');
    assert.equal(warmHandleNode('podipam-warm:%ZZ:r1'), undefined);
    assert.equal(podRecordNode('agent-pods/'), undefined);
    assert.equal(podRecordNode('handles/x'), undefined);
  });

  it('an address is idle when a warm handle of its node holds it and no pod record of that node names it', () => {
    const pods = podAddresses([
      { key: podRecordKey('n1', 'net:a:eth0'), value: JSON.stringify({ addrs: ['10.0.0.2', 'fd00::2'] }), rev: 1 },
      { key: podRecordKey('n2', 'net:b:eth0'), value: JSON.stringify({ addrs: ['10.0.0.3'] }), rev: 2 },
      { key: podRecordKey('n1', 'net:bad:eth0'), value: '{not json', rev: 3 },
      { key: podRecordKey('n1', 'net:odd:eth0'), value: '{"addrs": "10.0.0.9"}', rev: 4 },
    ]);
    assert.deepEqual([...(pods.get('n1') ?? [])].sort(), ['10.0.0.2', 'fd00::2']);
    const block = parsePrefix('10.0.0.0/26');
    const w1 = `${warmHandlePrefix('n1')}r1`;
    const allocations = {
      '2': w1, // n1's pod holds it: in use
      '3': w1, // named by n2's pod record, not n1's: idle on n1
      '4': w1, // idle
      '5': 'net:c9:eth0', // a plain cluster-mode pod: in use
      '6': `${warmHandlePrefix('n2')}r7`, // idle in n2's pool
      '99': w1, // outside the block: skipped
    };
    assert.equal(idleInBlock(block, allocations, pods), 3);
    assert.equal(idleInBlock(block, {}, pods), 0);
    assert.equal(idleInBlock(block, allocations, new Map()), 4);
  });
});

describe('GET /api/v1/nodes with a real warm pool', () => {
  const root = mkdtempSync(join(tmpdir(), 'podipam-warm-usage-'));
  const url = `sqlite:${join(root, 'ds.db')}`;
  const clock = { t: 1_000_000 };
  let admin: ClusterIpam;
  let cluster: ClusterServices;
  let warm: WarmService;
  let server: Server;
  let base: string;
  let summary: SummaryCache;
  before(async () => {
    admin = new ClusterIpam(await openStore(url));
    await admin.createPool({ name: 'v4', cidr: '10.78.0.0/16' });
    await admin.createPool({ name: 'v6', cidr: 'fd00:78::/64' });
    cluster = new ClusterServices();
    warm = new WarmService(
      {
        datastore: url,
        node: 'wn',
        dataDir: join(root, 'agent'),
        minIdle: 4,
        maxIdle: 8,
        capacity: 64,
        cooldownMs: 30_000,
        stickyForMs: 0,
        tickMs: 3_600_000,
        writeDelayMs: 3_600_000,
        now: () => clock.t,
      },
      cluster,
    );
    await warm.start();
    const r = new Router<HandlerSpec>();
    summary = new SummaryCache(admin.store, 0);
    addReadRoutes(r, { summary } as unknown as ApiDeps);
    server = createHttpServer({ router: r, tokens: { install: 'install-0123456789abcdef' }, hostPolicy: hostPolicy('127.0.0.1', []) });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await warm.close();
    await cluster.close();
    await admin.store.close();
    rmSync(root, { recursive: true, force: true });
  });

  interface NodeJson {
    name: string;
    allocated: number;
    idle: number;
    inUse: number;
  }
  const nodes = async (): Promise<Map<string, NodeJson>> => {
    summary.invalidate(); // the cache would reuse a pass for 5 × its duration; the agent wrote behind its back
    const res = await fetch(`${base}/api/v1/nodes`);
    assert.equal(res.status, 200);
    return new Map(((await res.json()) as { items: NodeJson[] }).items.map((n) => [n.name, n]));
  };
  const conf = {
    cniVersion: '1.0.0',
    name: 'wnet',
    ipam: { type: 'podipam', agent: '/run/podipam/agent.sock' },
    raw: { cniVersion: '1.0.0', name: 'wnet', ipam: { type: 'podipam', agent: '/run/podipam/agent.sock' } },
  };
  const req = (id: string) => ({ network: conf.name, containerId: id, ifname: 'eth0', cniArgs: new Map<string, string>(), conf });
  const idleOf = (): number => Object.values(warm.report().pools).reduce((n, p) => n + p.idle + p.returning, 0);

  it('counts the pool idle and the pods in use on the warm node, everything in use on a plain node; DEL moves an address back to idle', async () => {
    // A node without an agent: one cluster-mode pod.
    await admin.assign({ node: 'plain', handle: 'net:c1:eth0', auto: { 4: 1 } });
    const n0 = await nodes();
    assert.deepEqual([n0.get('wn')!.allocated, n0.get('wn')!.idle, n0.get('wn')!.inUse], [8, 8, 0], 'preloaded: minIdle 4 per family, all idle');
    assert.equal(n0.get('plain')!.idle, 0);
    assert.equal(n0.get('plain')!.inUse, 1);

    for (const id of ['p1', 'p2', 'p3']) {
      await warm.add(req(id));
      await warm.maintain(); // the refill the ADD kicked off
    }
    // Until the pod records are written behind, the datastore cannot tell the pods from idle.
    const before = (await nodes()).get('wn')!;
    assert.equal(before.inUse, 0);
    await warm.flushWrites();
    assert.equal(warm.report().writeBehindDepth, 0);
    const n1 = (await nodes()).get('wn')!;
    assert.equal(n1.inUse, 6, 'three dual-stack pods');
    assert.equal(n1.idle, idleOf(), `the agent's own count: ${JSON.stringify(warm.report().pools)}`);
    assert.equal(n1.allocated, n1.idle + n1.inUse);
    assert.equal(n1.allocated, before.allocated, 'the records changed nothing but the split');

    await warm.del(req('p2'));
    await warm.flushWrites();
    const n2 = (await nodes()).get('wn')!;
    assert.equal(n2.inUse, 4);
    assert.equal(n2.idle, n1.idle + 2, 'the released pair is idle again (cooling down in the pool)');
    assert.equal(n2.idle, idleOf());
    assert.deepEqual(await admin.check(), { leaks: [], problems: [] });

    // `podipam ipam show` (through the binary) counts the same idle addresses: one computation.
    const shown = runCliSync(url, ['ipam', 'show', '--json', '--blocks']);
    assert.equal(shown.code, 0, shown.stderr);
    const u = JSON.parse(shown.stdout) as { items: { idle: number }[]; blocks: { node: string | null; idle: number }[] };
    assert.equal(
      u.items.reduce((n, p) => n + p.idle, 0),
      n2.idle + (await nodes()).get('plain')!.idle,
    );
    assert.equal(
      u.blocks.filter((b) => b.node === 'wn').reduce((n, b) => n + b.idle, 0),
      n2.idle,
    );
    assert.match(runCliSync(url, ['ipam', 'show']).stdout, /^POOL\s+CIDR\s+CAPACITY\s+ALLOCATED\s+USED\s+IDLE\s+BLOCKS/m);
  });
});
